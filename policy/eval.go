package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/internal/runecut"
)

// Call is one tool call to decide about.
type Call struct {
	// Tool is the called tool's catalog record (its input schema types
	// the arguments).
	Tool abi.Tool
	// Arguments are the call's arguments, a JSON object; empty is {}.
	Arguments json.RawMessage
	// Principal is the caller; nil is anonymous.
	Principal *abi.Principal
	// Now is the run's clock, context.now.
	Now time.Time
	// Counts are the counts of the run's session and principal,
	// context.session; nil when unavailable. A set that names session
	// (Set.UsesSession) then makes the call inconclusive,
	// CodeCountersUnavailable; any other set is decided without it.
	Counts *Counts
}

// Decision is how an evaluation ended.
type Decision string

// The decisions.
const (
	// Allow: some permit applies and no forbid does, and no policy erred.
	Allow Decision = "allow"
	// Deny: a forbid applies, or no permit does.
	Deny Decision = "deny"
	// Error: the request could not be built, or a policy's evaluation
	// erred; never an acceptance.
	Error Decision = "error"
)

// Hit is a policy that determined the decision.
type Hit struct {
	ID      string `json:"id"`
	Effect  string `json:"effect"`
	Message string `json:"message,omitempty"`
	Where   string `json:"where"`
}

// EvalError is a policy whose evaluation erred (for example an absent
// attribute read without has), or a request that could not be built
// (Policy "").
type EvalError struct {
	Policy  string `json:"policy,omitempty"`
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
	// Code is the finding code: policy_error, argument_unrepresentable or
	// claim_unrepresentable.
	Code string `json:"code"`
}

// Result is one evaluation's outcome.
type Result struct {
	Decision Decision `json:"decision"`
	// Determining are the policies that decided: the permits of an Allow,
	// the forbids of a Deny (none when no permit applied).
	Determining []Hit       `json:"determining,omitempty"`
	Errors      []EvalError `json:"errors,omitempty"`
	Principal   string      `json:"principal"`
	Action      string      `json:"action"`
	Resource    string      `json:"resource"`
}

// Finding codes of the policy gate.
const (
	CodeForbid                  = "policy_forbid"
	CodeNoPermit                = "policy_no_permit"
	CodePolicyError             = "policy_error"
	CodeArgumentUnrepresentable = "argument_unrepresentable"
	CodeClaimUnrepresentable    = "claim_unrepresentable"
)

// Engine evaluates calls against a policy set. It is safe for concurrent
// use.
type Engine struct {
	set     *Set
	claims  map[string]ClaimType
	names   []string // the claims' names, sorted
	windows []string
	mu      sync.Mutex
	tools   map[string]*toolEntry // by tool id
	listed  int                   // the policies the cached entries list
	// anonymous is the principal of a call without one: the same for
	// every call, so built once.
	anonymous principalEntry
}

// principalEntry is a call's principal as the request and the result name
// it.
type principalEntry struct {
	uid types.EntityUID
	ent types.Entity
	str string // uid.String(), for the result
}

// NewEngine returns an engine for set under o.
// Options.Windows must be valid (ValidateOptions); an invalid window is
// left out.
func NewEngine(set *Set, o Options) *Engine {
	claims := o.claims()
	uid := types.NewEntityUID(PrincipalType, "")
	anonymous := principalEntry{uid: uid, str: uid.String(), ent: types.Entity{UID: uid, Attributes: types.NewRecord(types.RecordMap{
		"authenticated": types.False, "method": types.String(""), "issuer": types.String(""), "subject": types.String(""),
		"claims": types.NewRecord(nil),
	})}}
	return &Engine{set: set, claims: claims, names: sortedKeys(claims), windows: o.windows(), tools: map[string]*toolEntry{}, anonymous: anonymous}
}

// UsesSession reports whether the engine's policies name context.session.
func (e *Engine) UsesSession() bool { return e.set.UsesSession() }

// Set returns the engine's policies.
func (e *Engine) Set() *Set { return e.set }

// maxCachedTools bounds the engine's cache of tool entries, and
// maxListedPolicies the policies their indexes list in all (24 bytes each):
// a large catalog under a large set stays within a guest's memory.
const (
	maxCachedTools    = 4096
	maxListedPolicies = 1 << 18
)

// toolEntry is what a tool's calls share, built once per tool record: its
// mapped schema, the parts of the Cedar request that do not depend on the
// call (the action, the resource, context.tool, the entities of the
// action, its groups and the resource) and the policies whose action scope
// can match its action (Set.forAction).
type toolEntry struct {
	identity toolIdentity // of the record it was built from
	ts       ToolSchema
	action   types.EntityUID
	resource types.EntityUID
	// actionName and resourceName are action's and resource's String(),
	// for the result.
	actionName, resourceName string
	tool                     types.Record
	ents                     types.EntityMap // without the principal's
	policies                 policyList
}

// toolIdentity is everything of a tool record a toolEntry is built from,
// its input schema by digest: equal identities build equal entries.
// Compared field by field, it costs a run no allocation and no hash of a
// long key, which in a module was a tenth of the request's cost.
type toolIdentity struct {
	id, name, schemaDigest, policyDigest, effect, source, provenance string
	hints                                                            abi.ToolHints
	hasHints                                                         bool
}

func identityOf(t abi.Tool) toolIdentity {
	id := toolIdentity{id: t.ID, name: t.Name, schemaDigest: t.SchemaDigest, policyDigest: t.PolicyDigest,
		effect: t.Effect, source: t.Source, provenance: t.Provenance}
	if t.Hints != nil {
		id.hints, id.hasHints = *t.Hints, true
	}
	return id
}

// tool returns t's entry, built once per tool record: an entry is kept by
// tool id and used while the record is the one it was built from. A record
// without a schema digest cannot be told from another by its identity and
// is built every time.
func (e *Engine) tool(t abi.Tool) *toolEntry {
	id := identityOf(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	old, ok := e.tools[t.ID]
	if ok && t.SchemaDigest != "" && old.identity == id {
		return old
	}
	te := e.newToolEntry(t)
	te.identity = id
	if ok {
		e.listed -= len(old.policies)
	}
	if len(e.tools) >= maxCachedTools || e.listed+len(te.policies) > maxListedPolicies {
		clear(e.tools)
		e.listed = 0
	}
	e.tools[t.ID] = te
	e.listed += len(te.policies)
	return te
}

func (e *Engine) newToolEntry(t abi.Tool) *toolEntry {
	ts := NewToolSchema(t)
	te := &toolEntry{ts: ts,
		action:   types.NewEntityUID(ActionType, types.String(t.ID)),
		resource: types.NewEntityUID(ResourceType, types.String(namespaceOf(t.ID)))}
	te.actionName, te.resourceName = te.action.String(), te.resource.String()
	h := annotations(t)
	te.tool = types.NewRecord(types.RecordMap{
		"id": types.String(t.ID), "name": types.String(t.Name),
		"namespace": types.String(namespaceOf(t.ID)), "effect": types.String(effectOf(t)),
		"annotations": types.NewRecord(types.RecordMap{
			"read_only": types.Boolean(h.ReadOnly), "destructive": types.Boolean(h.Destructive),
			"idempotent": types.Boolean(h.Idempotent), "open_world": types.Boolean(h.OpenWorld),
		}),
	})
	te.ents = types.EntityMap{
		te.resource: {UID: te.resource, Attributes: types.NewRecord(types.RecordMap{
			"name": types.String(namespaceOf(t.ID)), "source": types.String(t.Source), "provenance": types.String(t.Provenance),
		})},
	}
	parents := make([]types.EntityUID, 0, len(ts.Groups))
	for _, g := range ts.Groups {
		gu := types.NewEntityUID(ActionType, types.String(g))
		parents = append(parents, gu)
		te.ents[gu] = types.Entity{UID: gu}
	}
	te.ents[te.action] = types.Entity{UID: te.action, Parents: types.NewEntityUIDSet(parents...)}
	te.policies = e.set.forAction(te.action, parents)
	return te
}

// requestEntities are a request's entities: the principal's, then its
// tool's (toolEntry.ents), shared by the tool's calls and not copied.
type requestEntities struct {
	principal types.Entity
	tool      types.EntityMap
}

func (r requestEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	if uid == r.principal.UID {
		return r.principal, true
	}
	e, ok := r.tool[uid]
	return e, ok
}

// entityMap is a copy of the entities as one map.
func (r requestEntities) entityMap() types.EntityMap {
	m := make(types.EntityMap, len(r.tool)+1)
	for k, v := range r.tool {
		m[k] = v
	}
	m[r.principal.UID] = r.principal
	return m
}

// RequestError is a call whose request could not be built.
type RequestError struct {
	Code string
	Err  error
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Request builds the Cedar request of a call and the entities it needs.
func (e *Engine) Request(c Call) (cedar.Request, types.EntityMap, error) {
	req, ents, _, err := e.request(c)
	if err != nil {
		return cedar.Request{}, nil, err
	}
	return req, ents.entityMap(), nil
}

func (e *Engine) request(c Call) (cedar.Request, requestEntities, *toolEntry, error) {
	te := e.tool(c.Tool)
	raw := c.Arguments
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	args, err := guestjson.DecodeValue(raw)
	if err != nil {
		return cedar.Request{}, requestEntities{}, nil, &RequestError{Code: CodeArgumentUnrepresentable, Err: fmt.Errorf("arguments: %w", err)}
	}
	av, err := te.ts.Arguments.Value(args, "")
	if err != nil {
		return cedar.Request{}, requestEntities{}, nil, &RequestError{Code: CodeArgumentUnrepresentable, Err: err}
	}
	argRec := av.(types.Record)
	paths, err := pathsValue(te.ts.Paths, argRec)
	if err != nil {
		return cedar.Request{}, requestEntities{}, nil, &RequestError{Code: CodeArgumentUnrepresentable, Err: err}
	}
	cm := types.RecordMap{
		"arguments": argRec,
		"paths":     paths,
		"tool":      te.tool,
		"now":       types.NewDatetime(c.Now.UTC()),
	}
	switch {
	case c.Counts != nil:
		sv, err := sessionValue(c.Counts, e.windows)
		if err != nil {
			return cedar.Request{}, requestEntities{}, nil, err
		}
		cm["session"] = sv
	case e.set.UsesSession():
		return cedar.Request{}, requestEntities{}, nil, &RequestError{Code: CodeCountersUnavailable,
			Err: errors.New("counters: a policy names context.session and the counts are unavailable")}
	}
	principal, pent, err := e.principal(c.Principal)
	if err != nil {
		return cedar.Request{}, requestEntities{}, nil, err
	}
	return cedar.Request{Principal: principal, Action: te.action, Resource: te.resource, Context: types.NewRecord(cm)},
		requestEntities{principal: pent, tool: te.ents}, te, nil
}

func (e *Engine) principal(p *abi.Principal) (types.EntityUID, types.Entity, error) {
	if p == nil {
		return e.anonymous.uid, e.anonymous.ent, nil
	}
	claims := types.RecordMap{}
	for _, name := range e.names { // the first bad claim, always the same
		ct := e.claims[name]
		v, ok := p.Claims[name]
		if !ok || v == nil {
			continue
		}
		cv, err := claimValue(ct, v)
		if err != nil {
			return types.EntityUID{}, types.Entity{}, &RequestError{Code: CodeClaimUnrepresentable, Err: fmt.Errorf("claim %s: %w", name, err)}
		}
		claims[types.String(name)] = cv
	}
	uid := types.NewEntityUID(PrincipalType, types.String(p.Subject))
	return uid, types.Entity{UID: uid, Attributes: types.NewRecord(types.RecordMap{
		"authenticated": types.True, "method": types.String(p.Method), "issuer": types.String(p.Issuer),
		"subject": types.String(p.Subject), "claims": types.NewRecord(claims),
	})}, nil
}

// claimValue converts a claim (decoded JSON: numbers float64 or
// json.Number) to its declared type. A single string or number where a
// set is declared is a set of one.
func claimValue(ct ClaimType, v any) (types.Value, error) {
	t := claimType(ct)
	number := func(x any) any {
		if f, ok := x.(float64); ok {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
		return x
	}
	v = number(v)
	if a, ok := v.([]any); ok {
		c := make([]any, len(a)) // the principal's claims are the caller's: not changed
		for i, x := range a {
			c[i] = number(x)
		}
		v = c
	}
	if t.Kind == KindSet {
		if _, ok := v.([]any); !ok {
			v = []any{v}
		}
	}
	return t.Value(v, "")
}

// Evaluate decides about one call. A request that cannot be built, or a
// policy that errs, is Decision Error: never Allow.
func (e *Engine) Evaluate(c Call) Result {
	req, ents, te, err := e.request(c)
	var res Result
	if te != nil {
		res.Action, res.Resource = te.actionName, te.resourceName
	} else {
		res.Action = types.NewEntityUID(ActionType, types.String(c.Tool.ID)).String()
		res.Resource = types.NewEntityUID(ResourceType, types.String(namespaceOf(c.Tool.ID))).String()
	}
	if c.Principal != nil {
		res.Principal = types.NewEntityUID(PrincipalType, types.String(c.Principal.Subject)).String()
	} else {
		res.Principal = e.anonymous.str
	}
	if err != nil {
		code := CodeArgumentUnrepresentable
		var re *RequestError
		if errors.As(err, &re) {
			code = re.Code
		}
		res.Decision = Error
		res.Errors = []EvalError{{Code: code, Message: err.Error()}}
		return res
	}
	dec, diag := cedar.Authorize(te.policies, ents, req)
	for _, de := range diag.Errors {
		ee := EvalError{Policy: string(de.PolicyID), Message: de.Message, Code: CodePolicyError}
		if p, ok := e.set.Get(string(de.PolicyID)); ok {
			ee.Where = p.Where()
		}
		res.Errors = append(res.Errors, ee)
	}
	for _, r := range diag.Reasons {
		p, _ := e.set.Get(string(r.PolicyID))
		res.Determining = append(res.Determining, Hit{ID: p.ID, Effect: p.Effect, Message: p.Message, Where: p.Where()})
	}
	slices.SortFunc(res.Determining, func(a, b Hit) int { return strings.Compare(a.ID, b.ID) })
	slices.SortStableFunc(res.Errors, func(a, b EvalError) int { return strings.Compare(a.Policy, b.Policy) })
	switch {
	case len(res.Errors) > 0:
		res.Decision = Error
	case dec == cedar.Allow:
		res.Decision = Allow
	default:
		res.Decision = Deny
	}
	return res
}

// IDs lists the determining policies' ids.
func (r Result) IDs() []string {
	out := make([]string, len(r.Determining))
	for i, h := range r.Determining {
		out[i] = h.ID
	}
	return out
}

// Response is the gate's answer for a result: accepted for Allow,
// rejected with a blocking finding per determining forbid (or one
// policy_no_permit) for Deny, inconclusive with a blocking finding per
// error for Error.
func (r Result) Response() abi.Response {
	ev := map[string]any{"principal": r.Principal, "action": r.Action, "resource": r.Resource, "decision": string(r.Decision)}
	if len(r.Determining) > 0 {
		ev["policies"] = r.IDs()
	}
	switch r.Decision {
	case Allow:
		return abi.Response{Verdict: abi.Accepted, Basis: "policy_permit", Evidence: ev}
	case Deny:
		var fs []abi.Finding
		for _, h := range r.Determining {
			msg := h.Message
			if msg == "" {
				msg = fmt.Sprintf("forbidden by policy %s", h.ID)
			}
			fs = append(fs, abi.Finding{Code: CodeForbid, Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: msg,
				Details: map[string]any{"policy": h.ID, "where": h.Where}})
		}
		if len(fs) == 0 {
			fs = []abi.Finding{{Code: CodeNoPermit, Severity: abi.Blocking, Tier: abi.DecisionProcedure,
				Message: fmt.Sprintf("no policy permits %s for %s on %s", r.Action, r.Principal, r.Resource)}}
		}
		return abi.Response{Verdict: abi.Rejected, Findings: fs, Evidence: ev}
	}
	var fs []abi.Finding
	for _, e := range r.Errors {
		d := map[string]any{}
		if e.Policy != "" {
			d["policy"] = e.Policy
			d["where"] = e.Where
		}
		fs = append(fs, abi.Finding{Code: e.Code, Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: cutText(e.Message), Details: d})
	}
	reason := CodePolicyError
	if len(r.Errors) > 0 {
		reason = r.Errors[0].Code
	}
	return abi.Response{Verdict: abi.Inconclusive, Reason: reason, Findings: fs, Evidence: ev}
}

func cutText(s string) string { return runecut.Cut(strings.ToValidUTF8(s, "\uFFFD"), 512, "…") }
