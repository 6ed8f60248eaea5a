package preconditions_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// priceLet is a let of each item's price, looked up one item at a time.
func priceLet() abi.Let {
	return abi.Let{ForEach: &abi.ForEach{Param: "item_ids", As: []string{"item_id"}}, View: "item",
		Bind: map[string]abi.Operand{"id": param("item_id")}, Value: field("price")}
}

// totalCovered denies when the sum of the looked-up prices exceeds the
// account's balance: an aggregate over rows read element by element,
// compared to a row read once.
func totalCovered() abi.DomainPrecondition {
	return abi.DomainPrecondition{ID: "total_covered", View: "account",
		Let:      map[string]abi.Let{"prices": priceLet()},
		Bind:     map[string]abi.Operand{"id": param("account_id")},
		DenyWhen: on("balance", "lt", sum(param("prices"), "", nil)), Message: "balance below the total"}
}

func TestLet(t *testing.T) {
	many := repeated("i1", 65)
	docs := func() map[string]map[string]any {
		d := itemsDocs()
		d["accounts"] = map[string]any{"acct1": map[string]any{"balance": 30.0}, "acct2": map[string]any{"balance": 29.99}}
		return d
	}
	views := map[string]view{"item": byID("items"), "account": byID("accounts"), "two": fixed(map[string]any{"price": 1.0}, map[string]any{"price": 2.0})}
	withLet := func(l abi.Let) abi.DomainPrecondition {
		p := totalCovered()
		p.Let = map[string]abi.Let{"prices": l}
		return p
	}
	noPrice := priceLet()
	noPrice.Value = field("status")
	twoRows := priceLet()
	twoRows.View = "two"
	scalar := abi.Let{View: "item", Bind: map[string]abi.Operand{"id": lit("i2")}, Value: field("price")}
	cases := []struct {
		name    string
		pre     abi.DomainPrecondition
		params  map[string]any
		want    string
		reason  string
		queries int
	}{
		{"the total is covered exactly", totalCovered(), map[string]any{"item_ids": []any{"i1", "i2"}, "account_id": "acct1"}, "pass", "", 3},
		{"the total is not covered though each price is", totalCovered(), map[string]any{"item_ids": []any{"i1", "i2"}, "account_id": "acct2"}, "deny", "", 3},
		{"no elements sum to 0", totalCovered(), map[string]any{"item_ids": []any{}, "account_id": "acct2"}, "pass", "", 1},
		{"an element without a price", totalCovered(), map[string]any{"item_ids": []any{"i1", "i3"}, "account_id": "acct1"}, "unevaluable", "let prices: element 1: field price is missing", 2},
		{"an element without a row", totalCovered(), map[string]any{"item_ids": []any{"i1", "nope"}, "account_id": "acct1"}, "unevaluable", "let prices: element 1: the query answered 0 rows, not exactly one", 2},
		{"an element with two rows", withLet(twoRows), map[string]any{"item_ids": []any{"i1"}, "account_id": "acct1"}, "unevaluable", "answered 2 rows", 1},
		{"a value that is not a number", withLet(noPrice), map[string]any{"item_ids": []any{"i1"}, "account_id": "acct1"}, "unevaluable", "not a number", 2},
		{"65 elements", totalCovered(), map[string]any{"item_ids": many, "account_id": "acct1"}, "unevaluable", "more than 64", 0},
		{"64 elements", totalCovered(), map[string]any{"item_ids": many[:64], "account_id": "acct1"}, "deny", "", 65},
		{"unbound array", totalCovered(), map[string]any{"account_id": "acct1"}, "unevaluable", "let prices: for_each item_ids: unbound parameter", 0},
		{"a scalar let", withLet(scalar), map[string]any{"account_id": "acct2"}, "unevaluable", "sum over a number", 2},
		{"a let over the call's parameters, in the row of a view-less precondition",
			abi.DomainPrecondition{ID: "p", Let: map[string]abi.Let{"twice": {Value: arith(abi.OperandMul, param("qty"), lit(2))}},
				DenyWhen: on("twice", "gt", lit(0.6)), Message: "m"}, map[string]any{"qty": 0.3}, "pass", "", 0},
		// The validator's bound (host/domain TestV3Accepted, TestV3Errors):
		// a let's value is a root, level 1.
		{"a let value 16 levels deep", abi.DomainPrecondition{ID: "p", Let: map[string]abi.Let{"x": {Value: nestAdd(15)}},
			DenyWhen: on("x", "equals", lit(1)), Message: "m"}, map[string]any{}, "deny", "", 0},
		{"a let value 17 levels deep", abi.DomainPrecondition{ID: "p", Let: map[string]abi.Let{"x": {Value: nestAdd(16)}},
			DenyWhen: on("x", "equals", lit(1)), Message: "m"}, map[string]any{}, "unevaluable", "let x: expression nested deeper than 16 levels", 0},
		{"a let in bind",
			abi.DomainPrecondition{ID: "p", View: "account", Let: map[string]abi.Let{"acct": {View: "item", Bind: map[string]abi.Operand{"id": lit("i1")}, Value: lit("acct2")}},
				Bind: map[string]abi.Operand{"id": param("acct")}, DenyWhen: on("balance", "lt", lit(30)), Message: "m"}, map[string]any{}, "deny", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{c.pre})}, docs: docs(), views: views}
			resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", c.params))
			require.Equal(t, c.want, decision(resp), "%+v", resp.Findings)
			assert.Len(t, h.recorded(), c.queries)
			if c.reason != "" {
				require.Len(t, resp.Findings, 1)
				assert.Contains(t, resp.Findings[0].Details["reason"], c.reason)
			}
		})
	}
}

// TestLetSharesTheQueryBudget: a let's queries count toward the call's
// abi.MaxQueriesPerCall with the preconditions'.
func TestLetSharesTheQueryBudget(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write(copies(totalCovered(), 5))}, docs: itemsDocs(),
		views: map[string]view{"item": byID("items"), "account": fixed(map[string]any{"balance": 1e6})}}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", map[string]any{"item_ids": repeated("i1", 64), "account_id": "a"}))
	assert.Len(t, h.recorded(), abi.MaxQueriesPerCall)
	require.Equal(t, "unevaluable", decision(resp))
	require.Len(t, resp.Findings, 2, "p0..p2 make 195 queries; p3's let stops at 256, and p4 has none left")
	assert.Equal(t, "p3", resp.Findings[0].Details["precondition"])
	assert.Contains(t, resp.Findings[0].Details["reason"], "let prices: element 61: more than 256 queries")
}

// giftCards is a domain of payment methods: paying from a gift card
// lowers its balance, paying by credit card changes nothing.
func giftCards() (*memHost, abi.DomainCapability) {
	bind := map[string]abi.Operand{"id": param("method_id")}
	payCap := abi.DomainCapability{Domain: "d", Name: "pay", Tools: []string{"pay"}, Kind: abi.KindUpdate,
		Preconditions: []abi.DomainPrecondition{{ID: "balance_covers", View: "method", Bind: bind,
			DenyWhen: allOf(on("source", "equals", lit("gift_card")), on("balance", "lt", param("amount"))), Message: "balance too low"}},
		Effects: []abi.DomainEffect{{Collection: "methods", ID: field("id"), View: "method", Bind: bind,
			When: on("source", "equals", lit("gift_card")),
			Set:  map[string]abi.Operand{"balance": arith(abi.OperandSub, field("balance"), param("amount"))}}}}
	h := &memHost{caps: map[string]abi.DomainCapability{"pay": payCap}, views: map[string]view{"method": byID("methods")},
		docs: map[string]map[string]any{"methods": {
			"gc1": map[string]any{"source": "gift_card", "balance": 50.0},
			"cc1": map[string]any{"source": "credit_card"},
			"xx1": map[string]any{"balance": 50.0},
		}}}
	return h, payCap
}

// TestEffectWhen: an effect applies only when its when holds; false
// applies nothing (the call is still admitted), unknown denies the call.
func TestEffectWhen(t *testing.T) {
	p := func(m string, amount float64) abi.ToolCall {
		return toolCall("pay", map[string]any{"method_id": m, "amount": amount})
	}
	t.Run("a gift card spent twice", func(t *testing.T) {
		h, _ := giftCards()
		resp := evaluate(t, h, abi.SubjectProposal, plan(p("gc1", 30), p("gc1", 30)))
		require.Len(t, resp.Findings, 1)
		assert.Equal(t, "balance_covers", resp.Findings[0].Details["precondition"])
		assert.Equal(t, 1, *resp.Findings[0].ActionIndex)
		assert.Equal(t, []abi.Effect{{Collection: "methods", ID: "gc1", Set: map[string]any{"balance": 20.0}}}, asEffects(t, checked(t, resp, 0)["effects"]))
	})
	t.Run("a credit card has no balance to change", func(t *testing.T) {
		h, _ := giftCards()
		resp := evaluate(t, h, abi.SubjectProposal, plan(p("cc1", 30), p("cc1", 30), p("gc1", 50)))
		assert.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
		for i := range 2 {
			assert.Equal(t, 0.0, checked(t, resp, i)["effects_count"])
		}
		assert.Nil(t, h.recorded()[len(h.recorded())-1].Overlay, "nothing applied")
	})
	t.Run("an unknown when denies the call", func(t *testing.T) {
		h, _ := giftCards()
		resp := evaluate(t, h, abi.SubjectProposal, plan(p("xx1", 30)))
		require.Equal(t, "unevaluable", decision(resp))
		assert.Contains(t, resp.Findings[0].Details["reason"], "when: field source is missing")
	})
}

// TestEffectLetPlaceholder: a let names the document member an effect
// sets, read from the data ({pm} in the set path), for each element.
func TestEffectLetPlaceholder(t *testing.T) {
	refund := abi.DomainCapability{Domain: "d", Name: "refund", Tools: []string{"refund"}, Kind: abi.KindAction,
		Effects: []abi.DomainEffect{{Collection: "users", ID: lit("u1"),
			ForEach: &abi.ForEach{Param: "order_ids", As: []string{"order_id"}},
			Let:     map[string]abi.Let{"pm": {View: "order", Bind: map[string]abi.Operand{"id": param("order_id")}, Value: field("method")}},
			When:    val(param("pm"), "starts_with", lit("gift_card")),
			Set:     map[string]abi.Operand{"methods.{pm}.refunded": lit(true)}}}}
	h := &memHost{caps: map[string]abi.DomainCapability{"refund": refund}, views: map[string]view{"order": byID("orders")},
		docs: map[string]map[string]any{"orders": {
			"o1": map[string]any{"method": "gift_card_1"}, "o2": map[string]any{"method": "credit_card_1"}, "o3": map[string]any{},
		}}}
	resp := evaluate(t, h, abi.SubjectProposal, plan(toolCall("refund", map[string]any{"order_ids": []any{"o1", "o2"}})))
	require.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
	assert.Equal(t, []abi.Effect{{Collection: "users", ID: "u1", Set: map[string]any{"methods.gift_card_1.refunded": true}}}, asEffects(t, checked(t, resp, 0)["effects"]))
	resp = evaluate(t, h, abi.SubjectProposal, plan(toolCall("refund", map[string]any{"order_ids": []any{"o1", "o3"}})))
	require.Equal(t, "unevaluable", decision(resp))
	assert.Contains(t, resp.Findings[0].Details["reason"], "element 1: let pm: field method is missing")
}

// TestIndexFromEnd: -1 is an array's last element, -N the N-th from the
// end; past the start it has no value.
func TestIndexFromEnd(t *testing.T) {
	pre := abi.DomainPrecondition{ID: "ends_at", View: "route", Bind: map[string]abi.Operand{"id": param("flights.-1.number")},
		Require: &abi.Require{Match: on("to", "equals", param("destination"))}, Message: "the last flight does not arrive there"}
	first := abi.DomainPrecondition{ID: "second_to_last", DenyWhen: val(param("flights.-2.number"), "not_equals", lit("F1")), Message: "m"}
	h := func() *memHost {
		return &memHost{caps: map[string]abi.DomainCapability{"book": write([]abi.DomainPrecondition{pre, first})}, views: map[string]view{"route": byID("routes")},
			docs: map[string]map[string]any{"routes": {"F1": map[string]any{"to": "B"}, "F2": map[string]any{"to": "C"}}}}
	}
	flights := func(ns ...string) []any {
		var out []any
		for _, n := range ns {
			out = append(out, map[string]any{"number": n})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"ends at the destination", map[string]any{"flights": flights("F1", "F2"), "destination": "C"}, nil},
		{"some flight, not the last, arrives there", map[string]any{"flights": flights("F1", "F2"), "destination": "B"}, []string{"ends_at"}},
		{"one flight: -2 is past the start", map[string]any{"flights": flights("F2"), "destination": "C"}, []string{"unevaluable:second_to_last"}},
		{"no flights", map[string]any{"flights": []any{}, "destination": "C"}, []string{"unevaluable:ends_at", "unevaluable:second_to_last"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := evaluate(t, h(), abi.SubjectToolCall, toolCall("book", c.params))
			var got []string
			for _, f := range resp.Findings {
				id := f.Details["precondition"].(string)
				if f.Code != "precondition_failed" {
					id = "unevaluable:" + id
				}
				got = append(got, id)
			}
			assert.Equal(t, c.want, got, "%+v", resp.Findings)
		})
	}
}
