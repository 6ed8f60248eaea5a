package preconditions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// memHost is an sdk.Host over in-memory capabilities and documents. It
// answers query.capability from caps (by tool name) and query.rows by
// running views over the documents with the request's overlay applied to a
// copy (a plain dotted-path set, enough for these tests), and records every
// query.rows request.
type memHost struct {
	caps  map[string]abi.DomainCapability
	docs  map[string]map[string]any // collection → id → document
	views map[string]view

	mu      sync.Mutex
	queries []abi.QueryRowsRequest
}

// view answers a query over the documents as the overlay left them.
type view func(docs map[string]map[string]any, params map[string]any) ([]map[string]any, error)

func (h *memHost) Log(sdk.Level, string) {}

func (h *memHost) Call(op string, req []byte) ([]byte, error) {
	switch op {
	case abi.OpQueryCapability:
		var r abi.QueryCapabilityRequest
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, err
		}
		dc, ok := h.caps[r.Name]
		if !ok {
			return json.Marshal(abi.QueryCapabilityAnswer{})
		}
		return json.Marshal(abi.QueryCapabilityAnswer{Found: true, Capability: &dc})
	case abi.OpQueryRows:
		var r abi.QueryRowsRequest
		if err := json.Unmarshal(req, &r); err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.queries = append(h.queries, r)
		h.mu.Unlock()
		v, ok := h.views[r.View+r.Capability]
		if !ok {
			return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "no view " + r.View}
		}
		docs, err := h.overlaid(r.Overlay)
		if err != nil {
			return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: err.Error()}
		}
		rows, err := v(docs, r.Params)
		if err != nil {
			return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: err.Error()}
		}
		if rows == nil {
			rows = []map[string]any{}
		}
		return json.Marshal(abi.QueryRowsAnswer{Rows: rows})
	}
	return nil, &abi.CallError{Code: abi.ErrCodeUnknownOperation, Message: op}
}

// overlaid is a deep copy of the documents with the effects applied.
func (h *memHost) overlaid(effects []abi.Effect) (map[string]map[string]any, error) {
	b, err := json.Marshal(h.docs)
	if err != nil {
		return nil, err
	}
	docs := map[string]map[string]any{}
	if err := json.Unmarshal(b, &docs); err != nil {
		return nil, err
	}
	for _, e := range effects {
		coll, ok := docs[e.Collection]
		if !ok {
			return nil, fmt.Errorf("unknown collection %s", e.Collection)
		}
		doc, _ := coll[e.ID].(map[string]any)
		if doc == nil {
			doc = map[string]any{}
			coll[e.ID] = doc
		}
		for path, v := range e.Set {
			segs := strings.Split(path, ".")
			m := doc
			for _, s := range segs[:len(segs)-1] {
				next, _ := m[s].(map[string]any)
				if next == nil {
					next = map[string]any{}
					m[s] = next
				}
				m = next
			}
			m[segs[len(segs)-1]] = v
		}
	}
	return docs, nil
}

// recorded returns the query.rows requests so far.
func (h *memHost) recorded() []abi.QueryRowsRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]abi.QueryRowsRequest(nil), h.queries...)
}

// byID is a view answering the document params["id"] of coll (none when
// it does not exist), with its id as member "id".
func byID(coll string) view {
	return func(docs map[string]map[string]any, params map[string]any) ([]map[string]any, error) {
		id := fmt.Sprint(params["id"])
		d, ok := docs[coll][id].(map[string]any)
		if !ok {
			return nil, nil
		}
		d["id"] = id
		return []map[string]any{d}, nil
	}
}

// fixed is a view answering the same rows whatever its params.
func fixed(rows ...map[string]any) view {
	return func(map[string]map[string]any, map[string]any) ([]map[string]any, error) { return rows, nil }
}

// evaluate runs the gate natively on one subject.
func evaluate(t *testing.T, h sdk.Host, kind abi.SubjectKind, subject any) abi.Response {
	t.Helper()
	b, err := json.Marshal(subject)
	require.NoError(t, err)
	resp, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
		SubjectKind: kind, Subject: b, Config: json.RawMessage(`{"domain":"d"}`),
		Context: abi.Context{Now: "2024-05-15T20:00:00Z"},
	}, h)
	require.NoError(t, err)
	return resp
}

// toolCall is an execute-mode subject.
func toolCall(tool string, params map[string]any) abi.ToolCall {
	b, _ := json.Marshal(params)
	return abi.ToolCall{Tool: tool, Parameters: b}
}

// plan is a dry-mode subject of tool calls in order.
func plan(calls ...abi.ToolCall) abi.Proposal {
	p := abi.Proposal{}
	for i, c := range calls {
		p.Actions = append(p.Actions, abi.Action{ID: fmt.Sprintf("a%d", i), Tool: c.Tool, Parameters: c.Parameters})
	}
	return p
}

// decision names a response the way the tables want it: "pass", "deny"
// (precondition_failed first) or "unevaluable".
func decision(resp abi.Response) string {
	switch {
	case resp.Verdict == abi.Accepted:
		return "pass"
	case len(resp.Findings) > 0 && resp.Findings[0].Code == preconditions.CodeFailed:
		return "deny"
	case len(resp.Findings) > 0 && resp.Findings[0].Code == preconditions.CodeUnevaluable:
		return "unevaluable"
	}
	return fmt.Sprintf("%s %+v", resp.Verdict, resp.Findings)
}

// Operand and condition builders.

func lit(v any) abi.Operand      { return abi.Operand{Kind: abi.OperandLiteral, Value: v} }
func param(n string) abi.Operand { return abi.Operand{Kind: abi.OperandParam, Name: n} }
func field(n string) abi.Operand { return abi.Operand{Kind: abi.OperandField, Name: n} }
func rowsOp() abi.Operand        { return abi.Operand{Kind: abi.OperandRows} }
func arith(kind string, args ...abi.Operand) abi.Operand {
	return abi.Operand{Kind: kind, Args: args}
}
func count(over abi.Operand, where *abi.Condition) abi.Operand {
	return abi.Operand{Kind: abi.OperandCount, Over: &over, Where: where}
}
func sum(over abi.Operand, of string, where *abi.Condition) abi.Operand {
	return abi.Operand{Kind: abi.OperandSum, Over: &over, Of: of, Where: where}
}

// on is the leaf {field: f, op: rhs}; val is {value: v, op: rhs}.
func on(f, op string, rhs abi.Operand) *abi.Condition {
	c := withOp(&abi.Condition{}, op, rhs)
	c.Field = f
	return c
}

func val(v abi.Operand, op string, rhs abi.Operand) *abi.Condition {
	c := withOp(&abi.Condition{}, op, rhs)
	c.Value = &v
	return c
}

func exists(v abi.Operand, b bool) *abi.Condition { return &abi.Condition{Value: &v, Exists: &b} }

func withOp(c *abi.Condition, op string, rhs abi.Operand) *abi.Condition {
	slot, ok := map[string]**abi.Operand{
		"equals": &c.Equals, "not_equals": &c.NotEquals, "in": &c.In, "not_in": &c.NotIn,
		"gt": &c.Gt, "gte": &c.Gte, "lt": &c.Lt, "lte": &c.Lte,
		"contains": &c.Contains, "starts_with": &c.StartsWith, "under": &c.Under,
	}[op]
	if !ok {
		panic("unknown operator " + op)
	}
	*slot = &rhs
	return c
}

func anyOf(cs ...*abi.Condition) *abi.Condition { return &abi.Condition{AnyOf: deref(cs)} }
func allOf(cs ...*abi.Condition) *abi.Condition { return &abi.Condition{AllOf: deref(cs)} }
func not(c *abi.Condition) *abi.Condition       { return &abi.Condition{Not: c} }

func deref(cs []*abi.Condition) []abi.Condition {
	out := make([]abi.Condition, len(cs))
	for i, c := range cs {
		out[i] = *c
	}
	return out
}

// write is a write capability "w" with the given preconditions and effects.
func write(pre []abi.DomainPrecondition, effects ...abi.DomainEffect) abi.DomainCapability {
	return abi.DomainCapability{Domain: "d", Name: "w", Tools: []string{"w"}, Kind: abi.KindUpdate,
		Preconditions: pre, Effects: effects}
}

// denyWhen is a precondition over view v bound to nothing.
func denyWhen(id, v string, c *abi.Condition) abi.DomainPrecondition {
	return abi.DomainPrecondition{ID: id, View: v, DenyWhen: c, Message: id + " says no"}
}

// repeated is n copies of v.
func repeated(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// copies is n copies of p, with ids p0, p1, ….
func copies(p abi.DomainPrecondition, n int) []abi.DomainPrecondition {
	out := make([]abi.DomainPrecondition, n)
	for i := range out {
		out[i] = p
		out[i].ID = fmt.Sprintf("p%d", i)
	}
	return out
}
