// Package staticverify is the static-verify gate: it checks a whole proposal
// before its first dispatch, so that a bad action late in a plan rejects the
// plan before earlier actions have had side effects.
//
// Only state-independent findings block, because they are exact: an invalid
// action type, a tool_call without a tool, a tool missing from the catalog,
// parameters that violate the tool's registered JSON Schema (or could not be
// parsed), a depends_on edge that does not point to a lower index, and more
// actions than max_actions. Findings from the forward model over declared
// state (preconditions, state dependencies, write conflicts) and the loop
// heuristic are advisory: the model applies only the effects that actions
// declare, so an undeclared write would make them false alarms.
//
// Proposal context read by the gate:
//
//   - context.initial_state: an object of state key → value the forward model
//     starts from. Anything else is ignored (the model starts empty).
//   - context.unknown_keys: an array of state keys whose value the caller
//     cannot model. Findings about those keys are marked heuristic and say so.
//
// When there are more actions than max_actions the gate reports
// too_many_actions and still checks the first max_actions actions, so the
// author sees their problems too; later actions are not checked at all,
// which bounds the work a hostile proposal can cause.
package staticverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/internal/runecut"
	"github.com/gatehost/gatehost/sdk"
)

// Finding codes, in the order findings about one action are listed.
const (
	CodeTooManyActions          = "too_many_actions"
	CodeInvalidAction           = "invalid_action"
	CodeMissingTool             = "missing_tool"
	CodeUnknownTool             = "unknown_tool"
	CodeSchemaViolation         = "schema_violation"
	CodeInvalidDependency       = "invalid_dependency"
	CodeUnsatisfiedPrecondition = "unsatisfied_precondition"
	CodeUnwrittenDependency     = "unwritten_dependency"
	CodeWriteConflict           = "write_conflict"
	CodeRepeatedCall            = "repeated_call"
)

// checkOrder fixes the order of findings about the same action.
var checkOrder = map[string]int{
	CodeTooManyActions:          0,
	CodeInvalidAction:           1,
	CodeMissingTool:             2,
	CodeUnknownTool:             3,
	CodeSchemaViolation:         4,
	CodeInvalidDependency:       5,
	CodeUnsatisfiedPrecondition: 6,
	CodeUnwrittenDependency:     7,
	CodeWriteConflict:           8,
	CodeRepeatedCall:            9,
}

// Config defaults.
const (
	DefaultMaxActions            = 100
	DefaultRepeatedCallThreshold = 3
)

const configSchema = `{
  "type": "object",
  "properties": {
    "max_actions": {"type": "integer", "minimum": 1, "default": 100},
    "repeated_call_threshold": {"type": "integer", "minimum": 2, "default": 3}
  },
  "additionalProperties": false
}`

// Gate is the static-verify gate.
var Gate = sdk.Gate{
	Descriptor: abi.Descriptor{
		ABIVersion:   abi.MajorVersion,
		Name:         "static-verify",
		Version:      "1.0.0",
		Description:  "Statically verifies a whole proposal before its first dispatch: tools, parameter schemas, dependency order and a forward model of declared state.",
		SubjectKinds: []abi.SubjectKind{abi.SubjectProposal},
		Capabilities: []string{abi.CapabilityCatalog, abi.CapabilitySchema},
		ConfigSchema: json.RawMessage(configSchema),
	},
	Evaluate: evaluate,
}

// Config is the stage config.
type Config struct {
	MaxActions            int `json:"max_actions"`
	RepeatedCallThreshold int `json:"repeated_call_threshold"`
}

// parseConfig decodes the stage config strictly. The host has validated it
// against the descriptor's schema already; checking again keeps a native
// caller from slipping past the bounds.
func parseConfig(raw json.RawMessage) (Config, error) {
	var in struct {
		MaxActions            *int `json:"max_actions"`
		RepeatedCallThreshold *int `json:"repeated_call_threshold"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := strictUnmarshal(raw, &in); err != nil {
			return Config{}, fmt.Errorf("static-verify: config: %w", err)
		}
	}
	c := Config{MaxActions: DefaultMaxActions, RepeatedCallThreshold: DefaultRepeatedCallThreshold}
	if in.MaxActions != nil {
		if *in.MaxActions < 1 {
			return Config{}, errors.New("static-verify: config: max_actions must be at least 1")
		}
		c.MaxActions = *in.MaxActions
	}
	if in.RepeatedCallThreshold != nil {
		if *in.RepeatedCallThreshold < 2 {
			return Config{}, errors.New("static-verify: config: repeated_call_threshold must be at least 2")
		}
		c.RepeatedCallThreshold = *in.RepeatedCallThreshold
	}
	return c, nil
}

// configs keeps the parsed config of each stage config seen: a module
// instance serves many runs of the same stage, and encoding/json's strict
// decoding costs a WebAssembly guest tens of microseconds a run.
var configs sdk.Derived[Config]

func evaluate(_ context.Context, req sdk.Request) (abi.Response, error) {
	cfg, err := configs.Get(req, parseConfig)
	if err != nil {
		return abi.Response{}, err
	}
	p, err := req.Proposal()
	if err != nil {
		return abi.Response{}, err
	}
	v := verifier{cfg: cfg, host: req.Host, p: &p}
	if err := v.run(); err != nil {
		return abi.Response{}, err
	}
	return v.response(req.Context.CatalogGeneration), nil
}

// action is what the verifier learns about one action.
type action struct {
	a      *abi.Action
	kind   string // Type with the empty default resolved
	params any    // decoded parameters; valid when paramsOK
	// paramsOK: the parameters were decoded (no parse_error).
	paramsOK bool
	tool     *abi.Tool // catalog record, when found
	blocked  bool      // has a blocking finding
}

type verifier struct {
	cfg  Config
	host sdk.Host
	p    *abi.Proposal

	acts     []action // the first min(len, max_actions) actions
	findings []finding
	seq      int

	tools       map[string]*abi.Tool // catalog answers by requested name; nil = not found
	list        *abi.CatalogListAnswer
	suggestions map[string]string // by unknown name; "" for none
	checked     []string          // ids of the tools found
}

// finding is an abi.Finding with its sort key.
type finding struct {
	abi.Finding
	index int // -1 when the finding is about no action
	order int
	seq   int
}

func (v *verifier) add(index int, f abi.Finding) {
	if index >= 0 {
		f.ActionIndex = abi.Index(index)
		f.ActionID = v.acts[index].a.ID
	}
	v.seq++
	v.findings = append(v.findings, finding{Finding: f, index: index, order: checkOrder[f.Code], seq: v.seq})
	if index >= 0 && f.Severity == abi.Blocking {
		v.acts[index].blocked = true
	}
}

func blocking(code, msg string) abi.Finding {
	return abi.Finding{Code: code, Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: msg}
}

func (v *verifier) run() error {
	all := v.p.Actions
	n := min(len(all), v.cfg.MaxActions)
	if len(all) > v.cfg.MaxActions {
		v.add(-1, abi.Finding{
			Code: CodeTooManyActions, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
			Message: fmt.Sprintf("the proposal has %d actions, more than max_actions %d; only the first %d were checked", len(all), v.cfg.MaxActions, v.cfg.MaxActions),
			Details: map[string]any{"actions": len(all), "max_actions": v.cfg.MaxActions},
		})
	}
	v.acts = make([]action, n)
	for i := range v.acts {
		a := &all[i]
		kind := a.Type
		if kind == "" {
			kind = abi.ActionToolCall
		}
		v.acts[i] = action{a: a, kind: kind}
	}

	v.checkShapes()
	if err := v.checkTools(); err != nil {
		return err
	}
	anc := v.checkDependencies()
	v.forwardModel()
	v.writeConflicts(anc)
	v.repeatedCalls()
	return nil
}

// checkShapes reports invalid types, missing tools and unparseable
// parameters, and decodes the parameters of tool calls once.
func (v *verifier) checkShapes() {
	for i := range v.acts {
		act := &v.acts[i]
		switch act.kind {
		case abi.ActionToolCall:
		case abi.ActionStateWrite, abi.ActionStateRead, abi.ActionAssertion:
			// Only tool calls are checked against the catalog. An executor
			// that dispatches on "tool" would run a state action's tool
			// unchecked, so a tool here is refused rather than ignored.
			if act.a.Tool != "" || len(act.a.Parameters) > 0 {
				v.add(i, blocking(CodeInvalidAction,
					fmt.Sprintf("a %s action names a tool or parameters; only tool_call actions may", act.kind)))
			}
		default:
			v.add(i, blocking(CodeInvalidAction,
				fmt.Sprintf("action type %q is not one of tool_call, state_write, state_read, assertion", clip(act.kind))))
		}
		if act.kind == abi.ActionToolCall && act.a.Tool == "" {
			v.add(i, blocking(CodeMissingTool, "tool_call action names no tool"))
		}
		// A parse error means the host could not read the agent's
		// arguments: whatever the type, the action must not run.
		if act.a.ParseError != "" {
			f := blocking(CodeSchemaViolation, "parameters are not valid JSON: "+clip(act.a.ParseError))
			f.Keyword = "json"
			v.add(i, f)
			continue
		}
		if act.kind != abi.ActionToolCall {
			continue
		}
		params, err := decodeParams(act.a.Parameters)
		if err != nil {
			// Unreachable after the proposal decoded, but never trust it.
			f := blocking(CodeSchemaViolation, "parameters are not valid JSON: "+clip(err.Error()))
			f.Keyword = "json"
			v.add(i, f)
			continue
		}
		act.params, act.paramsOK = params, true
	}
}

// checkTools looks every named tool up once, reports unknown ones and
// validates parameters against the registered schemas, all of them in one
// host call (sdk.ValidateSchemas). A failing catalog call or an
// uncompilable schema is an error: the gate cannot vouch for a tool it
// could not check.
func (v *verifier) checkTools() error {
	v.tools = map[string]*abi.Tool{}
	var (
		reqs    []abi.SchemaValidateRequest
		checked []int // the action of each request
	)
	for i := range v.acts {
		act := &v.acts[i]
		name := act.a.Tool
		if act.kind != abi.ActionToolCall || name == "" {
			continue
		}
		t, seen := v.tools[name]
		if !seen {
			tool, found, err := sdk.CatalogGet(v.host, name)
			if err != nil {
				return fmt.Errorf("static-verify: catalog lookup of %q: %w", clip(name), err)
			}
			if found {
				t = &tool
				if !slices.Contains(v.checked, toolID(t)) {
					v.checked = append(v.checked, toolID(t))
				}
			}
			v.tools[name] = t
		}
		if t == nil {
			if err := v.unknownTool(i, name); err != nil {
				return err
			}
			continue
		}
		act.tool = t
		if !act.paramsOK {
			continue
		}
		if _, ok := act.params.(map[string]any); !ok {
			f := blocking(CodeSchemaViolation,
				fmt.Sprintf("%s: parameters must be a JSON object, got %s", clip(t.Name), guestjson.Kind(act.params)))
			f.Keyword = "type"
			v.add(i, f)
			continue
		}
		value := act.a.Parameters
		if len(value) == 0 {
			value = json.RawMessage(`{}`)
		}
		reqs = append(reqs, abi.SchemaValidateRequest{Tool: toolID(t), Value: value})
		checked = append(checked, i)
	}
	if len(reqs) == 0 {
		return nil
	}
	// The host validates (schema.validate): it reports numbers no tool can
	// receive first, under keyword "json", and then the schema's
	// violations. An error or an answer about another schema is never a
	// pass: the gate cannot vouch for parameters it could not check.
	answers, err := sdk.ValidateSchemas(v.host, reqs)
	if err != nil {
		return fmt.Errorf("static-verify: validating parameters: %w", err)
	}
	for k, a := range answers {
		if err := v.schemaFindings(checked[k], v.acts[checked[k]].tool, a); err != nil {
			return err
		}
	}
	return nil
}

func toolID(t *abi.Tool) string {
	if t.ID != "" {
		return t.ID
	}
	return t.Name
}

// maxSuggestions bounds how many distinct unknown names get a suggestion in
// one request, so a proposal full of bogus names costs bounded work.
const maxSuggestions = 16

func (v *verifier) unknownTool(i int, name string) error {
	s, done := v.suggestions[name]
	if !done {
		if len(v.suggestions) < maxSuggestions {
			if v.list == nil {
				l, err := sdk.CatalogList(v.host)
				if err != nil {
					return fmt.Errorf("static-verify: catalog list: %w", err)
				}
				v.list = &l
			}
			s = suggest(name, v.list.Tools)
		}
		if v.suggestions == nil {
			v.suggestions = map[string]string{}
		}
		v.suggestions[name] = s
	}
	f := blocking(CodeUnknownTool, fmt.Sprintf("tool %q is not in the catalog", clip(name)))
	if s != "" {
		f.Suggestion = s
		f.Message += fmt.Sprintf("; did you mean %q?", s)
	}
	v.add(i, f)
	return nil
}

// schemaFindings reports the host's answer a about action i's parameters
// against tool t's schema; an answer about no schema or another one is an
// error.
func (v *verifier) schemaFindings(i int, t *abi.Tool, a abi.SchemaValidateAnswer) error {
	switch {
	case !a.Found:
		return fmt.Errorf("static-verify: validating parameters of %q: schema.validate does not know the tool catalog.get found", clip(toolID(t)))
	case a.SchemaDigest != t.SchemaDigest:
		return fmt.Errorf("static-verify: validating parameters of %q: the host validated against schema %q, not the tool's %q", clip(toolID(t)), clip(a.SchemaDigest), clip(t.SchemaDigest))
	}
	for _, sf := range a.Findings {
		where := "parameters"
		switch {
		case sf.Keyword == "json": // a number inside the object, never the root
			where = "parameter " + clip(sf.Pointer)
		case sf.Pointer != "":
			where = "parameter " + sf.Pointer
		}
		f := blocking(CodeSchemaViolation, fmt.Sprintf("%s: %s: %s", clip(t.Name), where, sf.Message))
		f.Path, f.Keyword = sf.Pointer, sf.Keyword
		v.add(i, f)
	}
	return nil
}

// checkDependencies reports depends_on entries that do not point to a lower
// index and returns, per action, the set of actions ordered before it
// through depends_on, transitively.
func (v *verifier) checkDependencies() []bitset {
	anc := make([]bitset, len(v.acts))
	for j := range v.acts {
		for _, d := range v.acts[j].a.DependsOn {
			if d < 0 || d >= j {
				f := blocking(CodeInvalidDependency,
					fmt.Sprintf("depends_on entry %d does not name an earlier action (edges must point to lower indices)", d))
				f.Details = map[string]any{"depends_on": d}
				v.add(j, f)
				continue
			}
			anc[j].set(d, len(v.acts))
			anc[j].or(anc[d], len(v.acts))
		}
	}
	return anc
}

func (v *verifier) response(generation uint64) abi.Response {
	sort.SliceStable(v.findings, func(a, b int) bool {
		x, y := &v.findings[a], &v.findings[b]
		if x.index != y.index {
			return x.index < y.index
		}
		if x.order != y.order {
			return x.order < y.order
		}
		return x.seq < y.seq
	})
	r := abi.Response{Verdict: abi.Accepted, Basis: "verified"}
	for _, f := range v.findings {
		r.Findings = append(r.Findings, f.Finding)
		if f.Severity == abi.Blocking {
			r.Verdict, r.Basis = abi.Rejected, ""
		}
	}
	checked := slices.Clone(v.checked)
	slices.Sort(checked)
	if checked == nil {
		checked = []string{}
	}
	r.Evidence = map[string]any{
		"checks": map[string]any{
			"tool_existence":   "ran",
			"parameter_schema": "ran",
			"dependency_order": "ran",
			"forward_model":    "ran",
			"write_conflicts":  "ran",
			"repeated_calls":   "ran",
		},
		"actions":            len(v.p.Actions),
		"actions_checked":    len(v.acts),
		"catalog_generation": generation,
		"tools_checked":      checked,
	}
	return r
}

// clip cuts text echoed into messages to 128 bytes, on a rune boundary.
func clip(s string) string { return runecut.Cut(s, 128, "…") }
