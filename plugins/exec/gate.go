package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

// configSchema marks the values that name tools (x-gatehost-ref, abi/SPEC.md
// "Tool references"): canonical ids, matched against the catalog's ids only,
// "*" standing for every tool in allow_tools alone. The host refuses a config
// whose names match no tool of a catalog known at load.
const configSchema = `{
  "type": "object",
  "properties": {
    "confirm_effects": {
      "type": "array",
      "items": {"enum": ["read_only", "idempotent_write", "non_idempotent"]},
      "uniqueItems": true,
      "default": ["non_idempotent"]
    },
    "confirm_tools": {"type": "array", "items": {"type": "string", "minLength": 1, "x-gatehost-ref": "tool-id"}, "uniqueItems": true},
    "exempt_tools": {"type": "array", "items": {"type": "string", "minLength": 1, "x-gatehost-ref": "tool-id"}, "uniqueItems": true},
    "principals": {
      "type": "array",
      "maxItems": 256,
      "items": {
        "type": "object",
        "required": ["when"],
        "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 64},
          "when": {
            "type": "object",
            "minProperties": 1,
            "properties": {
              "anonymous": {"const": true},
              "authenticated": {"const": true},
              "method": {"enum": ["oidc", "mtls", "token"]},
              "issuer": {"type": "string", "minLength": 1},
              "subject": {"type": "string", "minLength": 1},
              "claims": {"type": "object", "minProperties": 1, "additionalProperties": {"type": ["string", "number", "boolean"]}}
            },
            "additionalProperties": false
          },
          "allow_tools": {"type": "array", "items": {"type": "string", "minLength": 1, "x-gatehost-ref": "tool-id", "x-gatehost-wildcard": "*"}, "uniqueItems": true},
          "read_only": {"type": "boolean"}
        },
        "additionalProperties": false
      }
    }
  },
  "additionalProperties": false
}`

// Gate is the exec gate. It needs the catalog and session capabilities.
var Gate = sdk.Gate{
	Descriptor: abi.Descriptor{
		ABIVersion:   abi.MajorVersion,
		Name:         "exec",
		Version:      "1.2.0",
		Description:  "Authorizes one tool call right before it runs: exact name, cataloged id, the session's pinned schema digest, provenance and policy digest, source trust, the caller's principals rules and the confirmation policy.",
		SubjectKinds: []abi.SubjectKind{abi.SubjectToolCall},
		Capabilities: []string{abi.CapabilityCatalog, abi.CapabilitySession},
		ConfigSchema: json.RawMessage(configSchema),
	},
	Evaluate: evaluate,
}

// ParseConfig decodes a stage config strictly; absent means DefaultConfig.
// An omitted confirm_effects keeps the default; [] confirms no effect class.
// A principals rule with an empty condition, anonymous combined with
// another member, a claim value that is not a scalar or an allow_tools
// entry that is not a canonical id (or "*") is refused, naming the rule.
func ParseConfig(raw json.RawMessage) (Config, error) {
	cfg := DefaultConfig()
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return cfg, nil
	}
	var in struct {
		ConfirmEffects *[]string       `json:"confirm_effects"`
		ConfirmTools   []string        `json:"confirm_tools"`
		ExemptTools    []string        `json:"exempt_tools"`
		Principals     []PrincipalRule `json:"principals"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Config{}, fmt.Errorf("exec: config: %w", err)
	}
	if in.ConfirmEffects != nil {
		for _, e := range *in.ConfirmEffects {
			if e != EffectReadOnly && e != EffectIdempotentWrite && e != EffectNonIdempotent {
				return Config{}, fmt.Errorf("exec: config: confirm_effects: %q is not an effect class", echo(e))
			}
		}
		cfg.ConfirmEffects = *in.ConfirmEffects
	}
	for i, r := range in.Principals {
		if err := r.validate(i); err != nil {
			return Config{}, fmt.Errorf("exec: config: %w", err)
		}
	}
	cfg.ConfirmTools, cfg.ExemptTools, cfg.Principals = in.ConfirmTools, in.ExemptTools, in.Principals
	return cfg, nil
}

// configs keeps the parsed config of each stage config seen: a module
// instance serves many runs of the same stage, and encoding/json's strict
// decoding costs a WebAssembly guest more than the rest of the
// authorization. Authorize only reads it.
var configs sdk.Derived[Config]

// hostCatalog and hostSessions read through the host's capabilities.
type hostCatalog struct{ h sdk.Host }

func (c hostCatalog) Get(name string) (abi.Tool, bool, error) { return sdk.CatalogGet(c.h, name) }

type hostSessions struct{ h sdk.Host }

func (s hostSessions) Get(tool string) (abi.SessionGetAnswer, error) {
	return sdk.SessionGet(s.h, tool)
}

func evaluate(_ context.Context, req sdk.Request) (abi.Response, error) {
	if req.SubjectKind != abi.SubjectToolCall {
		return sdk.Inconclusive(abi.ReasonUnsupportedSubject, fmt.Errorf("subject kind %q", req.SubjectKind)), nil
	}
	cfg, err := configs.Get(req, ParseConfig)
	if err != nil {
		return abi.Response{}, err
	}
	call, err := req.ToolCall()
	if err != nil {
		return abi.Response{}, fmt.Errorf("exec: %w", err)
	}
	if call.Tool == "" {
		return abi.Response{}, errors.New("exec: the tool call names no tool")
	}
	out, err := Authorize(Call{Tool: call.Tool, Session: req.Context.Session, Confirmation: req.Context.Confirmation, Principal: req.Context.Principal},
		hostCatalog{req.Host}, hostSessions{req.Host}, cfg)
	if err != nil {
		reason := "catalog_unavailable"
		var re *ReadError
		switch {
		case errors.Is(err, sdk.ErrCapabilityDenied):
			reason = abi.ReasonCapabilityDenied
		case errors.As(err, &re):
			reason = re.What + "_unavailable"
		}
		return sdk.Inconclusive(reason, err), nil
	}
	resp := Response(out, req.Context.CatalogGeneration, req.Context.Session)
	if len(cfg.Principals) > 0 {
		addPrincipal(&resp, out, req.Context.Principal)
	}
	return resp, nil
}

// addPrincipal records, when principals rules are configured, who called
// and which rule decided: in the evidence, and in a check-6 finding's
// details. Claims are not repeated: the decision record has them.
func addPrincipal(resp *abi.Response, out Outcome, p *abi.Principal) {
	caller := map[string]any{"anonymous": true}
	if p != nil {
		caller = map[string]any{"method": p.Method, "subject": echo(p.Subject)}
		if p.Issuer != "" {
			caller["issuer"] = echo(p.Issuer)
		}
	}
	if resp.Evidence == nil {
		resp.Evidence = map[string]any{}
	}
	resp.Evidence["principal"] = caller
	if out.Rule != "" {
		resp.Evidence["principal_rule"] = out.Rule
	}
	if out.Code == CodePrincipalNotAllowed && out.Rule != "" {
		resp.Findings[0].Details["principal_rule"] = out.Rule
	}
}

// Response turns an Outcome into the gate's answer. Evidence names the tool,
// the generations and the pins; never the call's arguments.
func Response(out Outcome, catalogGeneration uint64, session string) abi.Response {
	// Sized for every member below: a map grown past 8 entries is moved
	// to a table mid-build, a tenth of a warm run's time in the guest.
	ev := make(map[string]any, 10)
	ev["check"], ev["catalog_generation"] = out.Check, catalogGeneration
	if session != "" {
		ev["session"] = echo(session)
	}
	if t := out.Tool; t != nil {
		ev["tool_id"] = t.ID
		ev["schema_digest"] = t.SchemaDigest
		if t.PolicyDigest != "" {
			ev["policy_digest"] = t.PolicyDigest
		}
		ev["provenance"] = t.Provenance
		ev["effect"] = effectOf(*t)
	}
	if out.Allowed {
		ev["basis"] = out.Basis
		if out.Basis == BasisExact {
			ev["grant_generation"] = out.GrantGeneration
		}
		return abi.Response{Verdict: abi.Accepted, Basis: out.Basis, Evidence: ev}
	}
	f := abi.Finding{Code: out.Code, Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: out.Message,
		Details: map[string]any{"check": out.Check}}
	if out.Tool != nil {
		f.Details["tool_id"] = out.Tool.ID
	}
	return abi.Response{Verdict: abi.Rejected, Findings: []abi.Finding{f}, Evidence: ev}
}
