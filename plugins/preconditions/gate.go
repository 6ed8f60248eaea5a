// Package preconditions is the preconditions gate: it denies a domain write
// whose catalog-declared preconditions do not hold (docs/GATES.md#preconditions). The
// domain catalog and the rows its views return come from the host's query
// capability; the gate resolves each precondition's bind from the call's
// parameters, asks the host for the rows, and tests the predicate.
//
// It runs twice on the same rules: on a proposal before its first dispatch
// ("dry": the write actions are checked in plan order) and on one tool_call
// right before it executes ("execute": the re-check that closes the gap
// between plan and write). The mode is in the evidence. In dry mode the
// declared effects of every admitted write (a write with no finding) are
// resolved into abi.Effect values and every later query of the plan carries
// them as an overlay, so a later write is checked against the state the
// earlier ones leave; a write whose effects cannot be resolved is denied and
// applies nothing. Execute mode sends no overlay.
//
// Every precondition of the called capability is evaluated, in declaration
// order, and every failure is reported. A precondition with for_each is
// evaluated once per element of an array parameter (or per position of
// several zipped): any failing element fails it, else any unevaluable one
// makes it unevaluable, else it holds, vacuously so for an empty array. One
// call may make at most abi.MaxQueriesPerCall queries.
//
// Numbers are compared and computed exactly (see num.go): 17.00 + 4.10
// equals 21.10. Deny only: the gate never rewrites an argument. Whatever
// cannot be evaluated — an unbound parameter, a view or query error, no row,
// a missing field, an unknown operator or operand, a type the operator
// cannot compare, a division by zero, an expression nested deeper than
// abi.MaxExpressionDepth — denies with code precondition_unevaluable.
package preconditions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/sdk"
)

// Finding codes.
const (
	// CodeFailed: a precondition was evaluated and does not hold.
	CodeFailed = "precondition_failed"
	// CodeUnevaluable: a precondition could not be evaluated; fail closed.
	CodeUnevaluable = "precondition_unevaluable"
	// CodeUnknownCapability: the tool is not a capability of the domain
	// (with unknown_tools: deny, the default).
	CodeUnknownCapability = "unknown_capability"
)

// Modes, by subject kind.
const (
	ModeDry     = "dry"
	ModeExecute = "execute"
)

// BasisHold is the basis of an acceptance: every precondition of every
// write held.
const BasisHold = "preconditions_hold"

// maxEvidenceRows caps the rows quoted in one finding.
const maxEvidenceRows = 5

const configSchema = `{
  "type": "object",
  "required": ["domain"],
  "properties": {
    "domain": {"type": "string", "minLength": 1, "x-gatehost-ref": "domain"},
    "unknown_tools": {"enum": ["deny", "allow"], "default": "deny"}
  },
  "additionalProperties": false
}`

// Gate is the preconditions gate.
var Gate = sdk.Gate{
	Descriptor: abi.Descriptor{
		ABIVersion:   abi.MajorVersion,
		Name:         "preconditions",
		Version:      "1.1.0",
		Description:  "Denies domain writes whose catalog-declared preconditions do not hold, at plan time (proposal) and right before execution (tool_call).",
		SubjectKinds: []abi.SubjectKind{abi.SubjectProposal, abi.SubjectToolCall},
		Capabilities: []string{abi.CapabilityQuery},
		ConfigSchema: json.RawMessage(configSchema),
	},
	Evaluate: evaluate,
}

// Config is the stage config.
type Config struct {
	// Domain names the domain catalog (host config domains.<name>).
	Domain string `json:"domain"`
	// UnknownTools says what to do with a call to a tool the domain does
	// not know: "deny" (default) or "allow" (leave it to other stages).
	UnknownTools string `json:"unknown_tools,omitempty"`
}

func parseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if err := strictUnmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("preconditions: config: %w", err)
	}
	if c.Domain == "" {
		return c, errors.New("preconditions: config: domain is required")
	}
	switch c.UnknownTools {
	case "":
		c.UnknownTools = "deny"
	case "deny", "allow":
	default:
		return c, fmt.Errorf("preconditions: config: unknown_tools %q is not deny or allow", c.UnknownTools)
	}
	return c, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// call is one tool call to check.
type call struct {
	index      *int
	id         string
	tool       string
	params     json.RawMessage
	parseError string
}

// configs keeps the parsed config of each stage config seen: a module
// instance serves many runs of the same stage, and encoding/json's strict
// decoding costs a WebAssembly guest tens of microseconds a run.
var configs sdk.Derived[Config]

func evaluate(ctx context.Context, req sdk.Request) (abi.Response, error) {
	cfg, err := configs.Get(req, parseConfig)
	if err != nil {
		return abi.Response{}, err
	}
	now, err := time.Parse(time.RFC3339Nano, req.Context.Now)
	if err != nil {
		return abi.Response{}, fmt.Errorf("preconditions: context.now: %w", err)
	}
	var calls []call
	var mode string
	skipped := []int{}
	switch req.SubjectKind {
	case abi.SubjectProposal:
		mode = ModeDry
		p, err := req.Proposal()
		if err != nil {
			return abi.Response{}, err
		}
		for i, a := range p.Actions {
			if a.Type != "" && a.Type != abi.ActionToolCall {
				skipped = append(skipped, i)
				continue
			}
			calls = append(calls, call{index: abi.Index(i), id: a.ID, tool: a.Tool, params: a.Parameters, parseError: a.ParseError})
		}
	case abi.SubjectToolCall:
		mode = ModeExecute
		tc, err := req.ToolCall() // without encoding/json's reflection, costly in a guest
		if err != nil {
			return abi.Response{}, fmt.Errorf("preconditions: %w", err)
		}
		calls = append(calls, call{id: tc.ID, tool: tc.Tool, params: tc.Parameters, parseError: tc.ParseError})
	default:
		return abi.Response{}, fmt.Errorf("preconditions: subject kind %q is not proposal or tool_call", req.SubjectKind)
	}
	c := &checker{cfg: cfg, host: req.Host, now: now, mode: mode, caps: map[string]capLookup{}}
	checked := []any{}
	for _, cl := range calls {
		if err := ctx.Err(); err != nil {
			return abi.Response{}, err
		}
		checked = append(checked, c.check(cl))
	}
	ev := map[string]any{"mode": mode, "domain": cfg.Domain, "checked": checked}
	if len(skipped) > 0 {
		ev["skipped_actions"] = skipped
	}
	if len(c.findings) > 0 {
		return abi.Response{Verdict: abi.Rejected, Findings: c.findings, Evidence: ev}, nil
	}
	return abi.Response{Verdict: abi.Accepted, Basis: BasisHold, Evidence: ev}, nil
}

type capLookup struct {
	c   *abi.DomainCapability
	err error
}

type checker struct {
	cfg      Config
	host     sdk.Host
	now      time.Time
	mode     string
	caps     map[string]capLookup
	findings []abi.Finding
	// queries counts the query.rows made for the call being checked.
	queries int
	// steps is what remains of the call's evaluation budget (maxSteps).
	steps int
	// overlay holds the resolved effects of the plan's admitted writes so
	// far (dry mode only); every query.rows carries it.
	overlay []abi.Effect
}

// capability looks a tool up once per evaluation.
func (c *checker) capability(tool string) (*abi.DomainCapability, error) {
	if l, ok := c.caps[tool]; ok {
		return l.c, l.err
	}
	// Answered from the instance's memory when the host's domains are
	// those of an earlier run (sdk.QueryCapability, context.query_digest);
	// the capability is shared with those runs and only read here.
	a, err := sdk.QueryCapability(c.host, c.cfg.Domain, tool)
	var dc *abi.DomainCapability
	if err == nil && a.Found {
		if a.Capability == nil {
			err = errors.New("query.capability answered found without a capability")
		} else {
			dc = a.Capability
		}
	}
	c.caps[tool] = capLookup{dc, err}
	return dc, err
}

// call encodes req and calls op; the answer is returned undecoded. The
// requests sent on every run are encoded without reflection, byte for
// byte as json.Marshal encodes them (guestjson.EncodeHostRequest).
func (c *checker) call(op string, req any) ([]byte, error) {
	body, err := guestjson.EncodeHostRequest(req)
	if err != nil {
		return nil, err
	}
	return c.host.Call(op, body)
}

// hostCall calls op and decodes the answer strictly: a member this gate
// does not know (say, a predicate operator from a newer catalog) must not
// be silently dropped, so it fails the call and the check denies.
func (c *checker) hostCall(op string, req, into any) error {
	raw, err := c.call(op, req)
	if err != nil {
		return err
	}
	if err := strictDecode(raw, into); err != nil {
		return fmt.Errorf("%s answer: %w", op, err)
	}
	return nil
}

// strictDecode decodes an answer strictly: the answers of query.rows,
// decoded on every run, without reflection
// (guestjson.DecodeStrict, which also refuses data after the value); any
// other with encoding/json.
func strictDecode(raw []byte, into any) error {
	var handled bool
	var err error
	switch v := into.(type) {
	case *abi.QueryRowsAnswer:
		handled, err = guestjson.DecodeStrict(raw, v)
	}
	if handled {
		return err
	}
	return strictUnmarshal(raw, into)
}

func (c *checker) deny(cl call, code, msg string, details map[string]any) {
	details["mode"] = c.mode
	details["domain"] = c.cfg.Domain
	details["tool"] = cl.tool
	c.findings = append(c.findings, abi.Finding{
		Code: code, Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: msg,
		ActionIndex: cl.index, ActionID: cl.id, Details: details,
	})
}

// check evaluates every precondition of one call and returns its evidence.
func (c *checker) check(cl call) map[string]any {
	ev := map[string]any{"tool": cl.tool}
	if cl.index != nil {
		ev["action_index"] = *cl.index
	}
	dc, err := c.capability(cl.tool)
	if err != nil {
		c.deny(cl, CodeUnevaluable, fmt.Sprintf("cannot look up %q in domain %s: %v; denied", cl.tool, c.cfg.Domain, err), map[string]any{"reason": err.Error()})
		ev["outcome"] = "unevaluable"
		return ev
	}
	if dc == nil {
		if c.cfg.UnknownTools == "allow" {
			ev["outcome"] = "not_in_domain"
			return ev
		}
		c.deny(cl, CodeUnknownCapability, fmt.Sprintf("%q is not a capability of domain %s; denied", cl.tool, c.cfg.Domain), map[string]any{})
		ev["outcome"] = "unknown_capability"
		return ev
	}
	ev["capability"], ev["kind"] = dc.Name, dc.Kind
	if !abi.IsWriteKind(dc.Kind) {
		ev["outcome"] = "read"
		return ev
	}
	ids := []string{}
	for _, p := range dc.Preconditions {
		ids = append(ids, p.ID)
	}
	ev["preconditions"] = ids
	params, perr := decodeParams(cl)
	c.queries = 0
	c.steps = maxSteps
	before := len(c.findings)
	for i := range dc.Preconditions {
		p := &dc.Preconditions[i]
		base := map[string]any{"precondition": p.ID, "capability": dc.Name}
		if perr != nil {
			base["reason"] = perr.Error()
			c.deny(cl, CodeUnevaluable, fmt.Sprintf("precondition %s of %s cannot be evaluated: %v; denied", p.ID, dc.Name, perr), base)
			continue
		}
		out := c.evalPrecondition(dc, p, params)
		if out.rows != nil {
			base["rows"] = out.rows
		}
		if out.elements != nil {
			base["elements"] = out.elements
			if out.elementsTruncated {
				base["elements_truncated"] = true
			}
		}
		switch {
		case out.failed:
			c.deny(cl, CodeFailed, p.Message, base)
		case out.unevaluable != "":
			base["reason"] = out.unevaluable
			c.deny(cl, CodeUnevaluable, fmt.Sprintf("precondition %s of %s cannot be evaluated (%s), so the call is denied. The rule: %s", p.ID, dc.Name, out.unevaluable, p.Message), base)
		}
	}
	if c.mode == ModeDry && len(dc.Effects) > 0 && len(c.findings) == before {
		c.applyEffects(cl, dc, params, perr, ev)
	}
	ev["outcome"] = "held"
	if len(c.findings) > before {
		ev["outcome"] = "denied"
	}
	return ev
}

// applyEffects resolves the effects of an admitted write (dry mode) and
// appends them to the overlay, recording them in the call's evidence ev; a
// resolution failure denies the call instead, and nothing of it is applied.
func (c *checker) applyEffects(cl call, dc *abi.DomainCapability, params map[string]any, perr error, ev map[string]any) {
	var effs []abi.Effect
	var fail *effectError
	if perr != nil {
		fail = &effectError{0, perr.Error()}
	} else {
		effs, fail = c.resolveEffects(dc, params)
	}
	if fail != nil {
		c.deny(cl, CodeUnevaluable, fmt.Sprintf("effect %d of %s cannot be resolved (%s), so the call is denied", fail.index, dc.Name, fail.reason),
			map[string]any{"capability": dc.Name, "effect": fail.index, "reason": fail.reason})
		return
	}
	c.overlay = append(c.overlay, effs...)
	ev["effects_count"] = len(effs)
	listed := effs
	if len(listed) > maxEvidenceEffects {
		listed = listed[:maxEvidenceEffects]
		ev["effects_truncated"] = true
	}
	ev["effects"] = append([]abi.Effect{}, listed...)
}

func decodeParams(cl call) (map[string]any, error) {
	if cl.parseError != "" {
		return nil, fmt.Errorf("the call's arguments could not be parsed: %s", cl.parseError)
	}
	if len(cl.params) == 0 {
		return map[string]any{}, nil
	}
	// As json.Unmarshal into a map decodes, without reflection.
	v, err := guestjson.DecodeAny(cl.params)
	if err != nil {
		return nil, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	switch v := v.(type) {
	case nil: // null leaves the map empty
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("parameters are not a JSON object, got %s", guestjson.Kind(v))
}
