// Package policy is the policy gate: it decides about a tool call with the
// operator's Cedar policies (docs/POLICY.md). The request it evaluates is
// principal Caller::"<subject>", action Action::"<tool id>" (in the action
// groups of its effect class, of destructive tools and of its namespace),
// resource Server::"<namespace>", and a context holding the call's
// arguments typed by the tool's input schema, its path arguments cleaned,
// the tool's effect and annotations and the run's clock. Cedar decides:
// deny unless a permit applies and no forbid does; an error is never an
// acceptance.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/abi"
	cedarpolicy "github.com/gatehost/gatehost/policy"
	"github.com/gatehost/gatehost/sdk"
)

// configSchema is the stage config: the policy documents, inline (a config
// loader may fill them from files, docs/POLICY.md) and the declared types
// of the principal's claims. No policies permit nothing: every call is
// rejected (Cedar's default deny).
const configSchema = `{
  "type": "object",
  "properties": {
    "policies": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["text"],
        "properties": {
          "file": {"type": "string", "minLength": 1},
          "text": {"type": "string", "minLength": 1}
        },
        "additionalProperties": false
      }
    },
    "claims": {
      "type": "object",
      "additionalProperties": {"enum": ["String", "Long", "Bool", "Set<String>", "Set<Long>"]}
    },
    "windows": {
      "type": "array",
      "maxItems": 8,
      "items": {"type": "string", "minLength": 2, "maxLength": 16}
    }
  },
  "additionalProperties": false
}`

// Gate is the policy gate. It needs the catalog capability; it reads the
// counters capability (implied by the catalog grant) for context.session.
var Gate = sdk.Gate{
	Descriptor: abi.Descriptor{
		ABIVersion:   abi.MajorVersion,
		Name:         "policy",
		Version:      "1.0.0",
		Description:  "Decides a tool call with the operator's Cedar policies: the caller, the tool's action and groups, its server, and the call's typed arguments, cleaned paths, effect and annotations.",
		SubjectKinds: []abi.SubjectKind{abi.SubjectToolCall},
		Capabilities: []string{abi.CapabilityCatalog, abi.CapabilityCounters},
		ConfigSchema: json.RawMessage(configSchema),
	},
	Evaluate: evaluate,
}

// Config is the stage config (policy.StageConfig).
type Config = cedarpolicy.StageConfig

// ConfigError is a stage config the gate cannot use.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return "policy: config: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// NewEngine parses a stage config into an engine
// (policy.ParseStageConfig).
func NewEngine(raw json.RawMessage) (*cedarpolicy.Engine, error) {
	set, o, err := cedarpolicy.ParseStageConfig(raw)
	if err != nil {
		return nil, &ConfigError{Err: err}
	}
	return cedarpolicy.NewEngine(set, o), nil
}

// engines keeps the engine of each stage config seen: compiling a policy
// set costs a guest milliseconds, and a module instance serves many runs
// of the same stage. An engine is only read by Evaluate.
var engines sdk.Derived[*cedarpolicy.Engine]

func evaluate(_ context.Context, req sdk.Request) (abi.Response, error) {
	if req.SubjectKind != abi.SubjectToolCall {
		return sdk.Inconclusive(abi.ReasonUnsupportedSubject, fmt.Errorf("subject kind %q", req.SubjectKind)), nil
	}
	eng, err := engines.Get(req, NewEngine)
	if err != nil {
		return sdk.Inconclusive(abi.ReasonBadConfig, err), nil
	}
	call, err := req.ToolCall()
	if err != nil {
		return sdk.Inconclusive(abi.ReasonBadRequest, fmt.Errorf("policy: %w", err)), nil
	}
	if call.Tool == "" {
		return sdk.Inconclusive(abi.ReasonBadRequest, errors.New("policy: the tool call names no tool")), nil
	}
	if call.ParseError != "" {
		return sdk.Inconclusive(cedarpolicy.CodeArgumentUnrepresentable, errors.New("policy: the call's arguments did not decode")), nil
	}
	tool, found, err := sdk.CatalogGet(req.Host, call.Tool)
	if err != nil {
		reason := "catalog_unavailable"
		if errors.Is(err, sdk.ErrCapabilityDenied) {
			reason = abi.ReasonCapabilityDenied
		}
		return sdk.Inconclusive(reason, err), nil
	}
	if !found {
		resp := cedarpolicy.UnknownTool()
		resp.Evidence = map[string]any{"catalog_generation": req.Context.CatalogGeneration}
		return resp, nil
	}
	now, err := time.Parse(time.RFC3339Nano, req.Context.Now)
	if err != nil {
		return sdk.Inconclusive(abi.ReasonBadRequest, fmt.Errorf("policy: context.now: %w", err)), nil
	}
	p, _ := req.Principal()
	counts, cerr := counts(req, eng)
	resp := eng.Evaluate(cedarpolicy.Call{Tool: tool, Arguments: call.Parameters, Principal: p, Now: now, Counts: counts}).Response()
	if cerr != nil && resp.Verdict == abi.Inconclusive && resp.Reason == cedarpolicy.CodeCountersUnavailable {
		resp.Evidence["counters_error"] = cerr.Error()
	}
	resp.Evidence["tool_id"] = tool.ID
	resp.Evidence["catalog_generation"] = req.Context.CatalogGeneration
	return resp, nil
}

// counts reads the run's counts when the policies name context.session
// (otherwise nil, nil: a set that does not read them never fails for
// them). An error leaves them nil, and the engine makes the call
// inconclusive (counters_unavailable).
func counts(req sdk.Request, eng *cedarpolicy.Engine) (*cedarpolicy.Counts, error) {
	if !eng.UsesSession() {
		return nil, nil
	}
	a, err := sdk.CountersGet(req.Host)
	if err != nil {
		return nil, fmt.Errorf("policy: counters: %w", err)
	}
	return &a, nil
}
