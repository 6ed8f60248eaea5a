package preconditions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/preconditions"
)

// itemsDocs are the items the for_each tests look up by id.
func itemsDocs() map[string]map[string]any {
	return map[string]map[string]any{"items": {
		"i1": map[string]any{"status": "delivered", "price": 10.0},
		"i2": map[string]any{"status": "pending", "price": 20.0},
		"i3": map[string]any{"status": "delivered"},
		"i4": map[string]any{"price": 1.0}, // no status: unknown
	}}
}

// itemIsDelivered is a per-element precondition: every item_ids element
// must be a delivered item.
func itemIsDelivered() abi.DomainPrecondition {
	return abi.DomainPrecondition{ID: "item_is_delivered", View: "item",
		ForEach: &abi.ForEach{Param: "item_ids", As: []string{"item_id"}},
		Bind:    map[string]abi.Operand{"id": param("item_id")},
		Require: &abi.Require{Match: on("status", "equals", lit("delivered"))}, Message: "only delivered items"}
}

func TestForEach(t *testing.T) {
	// pairs: zip of old and new prices, new must not exceed old.
	pairs := abi.DomainPrecondition{ID: "not_dearer",
		ForEach:  &abi.ForEach{Zip: []string{"old", "new"}, As: []string{"o", "n"}},
		DenyWhen: val(param("n"), "gt", param("o")), Message: "dearer"}
	many := make([]any, 65)
	for i := range many {
		many[i] = "i1"
	}
	cases := []struct {
		name    string
		pre     abi.DomainPrecondition
		params  map[string]any
		want    string
		reason  string // in the finding's reason
		queries int
		// elements is the finding's details.elements, as index:outcome.
		elements []string
	}{
		{"every element holds", itemIsDelivered(), map[string]any{"item_ids": []any{"i1", "i3"}}, "pass", "", 2, nil},
		{"one element fails", itemIsDelivered(), map[string]any{"item_ids": []any{"i1", "i2", "i3"}}, "deny", "", 3, []string{"1:failed"}},
		{"an empty array holds vacuously", itemIsDelivered(), map[string]any{"item_ids": []any{}}, "pass", "", 0, nil},
		{"64 elements are evaluated", itemIsDelivered(), map[string]any{"item_ids": many[:64]}, "pass", "", 64, nil},
		{"65 elements are unevaluable", itemIsDelivered(), map[string]any{"item_ids": many}, "unevaluable", "more than 64", 0, nil},
		{"not an array", itemIsDelivered(), map[string]any{"item_ids": "i1"}, "unevaluable", "not an array", 0, nil},
		{"unbound array", itemIsDelivered(), map[string]any{}, "unevaluable", "unbound parameter", 0, nil},
		{"failed wins over unevaluable", itemIsDelivered(), map[string]any{"item_ids": []any{"i4", "i2"}}, "deny", "", 2, []string{"0:unevaluable", "1:failed"}},
		{"zip pairs by position", pairs, map[string]any{"old": []any{10, 20}, "new": []any{10, 19.99}}, "pass", "", 0, nil},
		{"zip element fails", pairs, map[string]any{"old": []any{10, 20}, "new": []any{10.01, 19.99}}, "deny", "", 0, []string{"0:failed"}},
		{"zip length mismatch", pairs, map[string]any{"old": []any{10, 20}, "new": []any{10}}, "unevaluable", "old has 2 elements, new has 1", 0, nil},
		{"zip of one non-array", pairs, map[string]any{"old": []any{10}, "new": 10}, "unevaluable", "not an array", 0, nil},
		{"as count mismatch", abi.DomainPrecondition{ID: "p", ForEach: &abi.ForEach{Zip: []string{"old", "new"}, As: []string{"o"}},
			DenyWhen: val(param("o"), "gt", lit(0)), Message: "m"}, map[string]any{"old": []any{1}, "new": []any{1}}, "unevaluable", "2 arrays", 0, nil},
		{"param and zip", abi.DomainPrecondition{ID: "p", ForEach: &abi.ForEach{Param: "old", Zip: []string{"old", "new"}, As: []string{"o"}},
			DenyWhen: val(param("o"), "gt", lit(0)), Message: "m"}, map[string]any{"old": []any{1}, "new": []any{1}}, "unevaluable", "both", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{c.pre})},
				docs: itemsDocs(), views: map[string]view{"item": byID("items")}}
			resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", c.params))
			require.Equal(t, c.want, decision(resp), "%+v", resp.Findings)
			assert.Len(t, h.recorded(), c.queries)
			if c.want == "pass" {
				return
			}
			require.Len(t, resp.Findings, 1)
			d := resp.Findings[0].Details
			if c.reason != "" {
				assert.Contains(t, d["reason"], c.reason)
			}
			var got []string
			if els, ok := d["elements"].([]any); ok {
				for _, e := range els {
					m := e.(map[string]any)
					got = append(got, fmt.Sprintf("%v:%v", m["index"], m["outcome"]))
				}
			}
			assert.Equal(t, c.elements, got)
		})
	}
}

// TestForEachBindings: each element is bound under its as name, next to
// the call's parameters, and sent through bind; an element's failure
// carries its rows, an unevaluable one its reason.
func TestForEachBindings(t *testing.T) {
	pre := itemIsDelivered()
	pre.Bind = map[string]abi.Operand{"id": param("item_id"), "order": param("order_id")}
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{pre})},
		docs: itemsDocs(), views: map[string]view{"item": byID("items")}}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", map[string]any{"order_id": "#W1", "item_ids": []any{"i2", "i4", "i1"}}))
	require.Equal(t, "deny", decision(resp))
	var sent []map[string]any
	for _, q := range h.recorded() {
		sent = append(sent, q.Params)
		assert.Nil(t, q.Overlay, "execute mode never sends an overlay")
	}
	assert.Equal(t, []map[string]any{{"id": "i2", "order": "#W1"}, {"id": "i4", "order": "#W1"}, {"id": "i1", "order": "#W1"}}, sent)
	d := resp.Findings[0].Details
	assert.Equal(t, "item_is_delivered", d["precondition"])
	assert.NotContains(t, d, "elements_truncated")
	assert.Equal(t, []any{
		map[string]any{"index": 0.0, "outcome": "failed", "rows": []any{map[string]any{"status": "pending"}}},
		map[string]any{"index": 1.0, "outcome": "unevaluable", "reason": "field status is missing", "rows": []any{map[string]any{}}},
	}, d["elements"])
}

// TestForEachElementsTruncated: at most 16 non-holding elements are listed.
func TestForEachElementsTruncated(t *testing.T) {
	ids := make([]any, 20)
	for i := range ids {
		ids[i] = "i2"
	}
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{itemIsDelivered()})},
		docs: itemsDocs(), views: map[string]view{"item": byID("items")}}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", map[string]any{"item_ids": ids}))
	require.Equal(t, "deny", decision(resp))
	d := resp.Findings[0].Details
	assert.Len(t, d["elements"], 16)
	assert.Equal(t, true, d["elements_truncated"])
}

// TestForEachOnlyUnevaluable: elements that cannot be evaluated, and none
// that fails, make the precondition unevaluable with the first one's reason.
func TestForEachOnlyUnevaluable(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{itemIsDelivered()})},
		docs: itemsDocs(), views: map[string]view{"item": byID("items")}}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", map[string]any{"item_ids": []any{"i1", "i4"}}))
	require.Equal(t, "unevaluable", decision(resp))
	assert.Equal(t, "element 1: field status is missing", resp.Findings[0].Details["reason"])
}

// TestQueryBudgetPerCall: the 257th query.rows of one call is not made;
// the precondition that needed it, and every later one, is unevaluable.
// The budget is per call: the next call of a plan has its own.
func TestQueryBudgetPerCall(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write(copies(itemIsDelivered(), 6))},
		docs: itemsDocs(), views: map[string]view{"item": byID("items")}}
	call := toolCall("w", map[string]any{"item_ids": repeated("i1", 64)})
	resp := evaluate(t, h, abi.SubjectProposal, plan(call, call))
	assert.Len(t, h.recorded(), 2*abi.MaxQueriesPerCall)
	var got []string
	for _, f := range resp.Findings {
		require.Equal(t, preconditions.CodeUnevaluable, f.Code)
		assert.Equal(t, "element 0: more than 256 queries for one call", f.Details["reason"])
		got = append(got, fmt.Sprintf("%d:%v", *f.ActionIndex, f.Details["precondition"]))
	}
	assert.Equal(t, []string{"0:p4", "0:p5", "1:p4", "1:p5"}, got)
}
