package preconditions_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/preconditions"
)

func shopDocs() map[string]map[string]any {
	return map[string]map[string]any{
		"orders": {
			"o1": map[string]any{"status": "pending"},
			"o2": map[string]any{"status": "delivered"},
			"o3": map[string]any{"status": "pending"},
		},
		"accounts": {"acct1": map[string]any{"balance": 21.10}},
	}
}

func shopViews() map[string]view {
	return map[string]view{
		"order":   byID("orders"),
		"account": byID("accounts"),
		"two":     fixed(map[string]any{"n": 1}, map[string]any{"n": 2}),
	}
}

// cancel is a write: the order must be pending, and it then is cancelled.
func cancel() abi.DomainCapability {
	return abi.DomainCapability{Domain: "d", Name: "cancel", Tools: []string{"cancel"}, Kind: abi.KindAction,
		Preconditions: []abi.DomainPrecondition{{ID: "order_is_pending", View: "order",
			Bind:     map[string]abi.Operand{"id": param("order_id")},
			DenyWhen: on("status", "not_equals", lit("pending")), Message: "not pending"}},
		Effects: []abi.DomainEffect{{Collection: "orders", ID: param("order_id"),
			Set: map[string]abi.Operand{"status": lit("cancelled")}}}}
}

// pay is a write with a query-backed effect: the balance must cover the
// amount, and then it is reduced by it.
func pay() abi.DomainCapability {
	bind := map[string]abi.Operand{"id": param("account_id")}
	return abi.DomainCapability{Domain: "d", Name: "pay", Tools: []string{"pay"}, Kind: abi.KindUpdate,
		Preconditions: []abi.DomainPrecondition{{ID: "balance_covers", View: "account", Bind: bind,
			Require: &abi.Require{Match: on("balance", "gte", param("amount"))}, Message: "balance too low"}},
		Effects: []abi.DomainEffect{{Collection: "accounts", ID: field("id"), View: "account", Bind: bind,
			Set: map[string]abi.Operand{"balance": arith(abi.OperandSub, field("balance"), param("amount"))}}}}
}

// checked returns the evidence of the i-th checked call.
func checked(t *testing.T, resp abi.Response, i int) map[string]any {
	t.Helper()
	cs, ok := resp.Evidence["checked"].([]any)
	require.True(t, ok, "%v", resp.Evidence)
	require.Greater(t, len(cs), i)
	return cs[i].(map[string]any)
}

// asEffects decodes evidence effects.
func asEffects(t *testing.T, v any) []abi.Effect {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out []abi.Effect
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// TestDryPlanSeesEarlierAdmittedWrites: a later write of a plan is checked
// against the effects of the earlier admitted ones; a denied write's
// effects are not applied.
func TestDryPlanSeesEarlierAdmittedWrites(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"cancel": cancel()}, docs: shopDocs(), views: shopViews()}
	c := func(id string) abi.ToolCall { return toolCall("cancel", map[string]any{"order_id": id}) }
	resp := evaluate(t, h, abi.SubjectProposal, plan(c("o1"), c("o1"), c("o2"), c("o3")))
	require.Equal(t, abi.Rejected, resp.Verdict)
	var denied []int
	for _, f := range resp.Findings {
		assert.Equal(t, preconditions.CodeFailed, f.Code)
		denied = append(denied, *f.ActionIndex)
	}
	assert.Equal(t, []int{1, 2}, denied, "o1 is cancelled by then; o2 was never pending")

	o1 := abi.Effect{Collection: "orders", ID: "o1", Set: map[string]any{"status": "cancelled"}}
	q := h.recorded()
	require.Len(t, q, 4)
	assert.Nil(t, q[0].Overlay)
	for i := 1; i < 4; i++ {
		assert.Equal(t, []abi.Effect{o1}, q[i].Overlay, "query %d: only the admitted write's effects", i)
	}
	first := checked(t, resp, 0)
	assert.Equal(t, "held", first["outcome"])
	assert.Equal(t, 1.0, first["effects_count"])
	assert.Equal(t, []abi.Effect{o1}, asEffects(t, first["effects"]))
	assert.NotContains(t, first, "effects_truncated")
	for _, i := range []int{1, 2} {
		assert.NotContains(t, checked(t, resp, i), "effects", "a denied write applies nothing")
	}
	assert.Equal(t, []abi.Effect{{Collection: "orders", ID: "o3", Set: map[string]any{"status": "cancelled"}}},
		asEffects(t, checked(t, resp, 3)["effects"]))
}

// TestDryPlanExactBalance: a query-backed effect reads its row, computes
// exactly, and leaves as a float64; the next write's precondition and
// effect query see it.
func TestDryPlanExactBalance(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"pay": pay()}, docs: shopDocs(), views: shopViews()}
	p := func(amount float64) abi.ToolCall {
		return toolCall("pay", map[string]any{"account_id": "acct1", "amount": amount})
	}
	resp := evaluate(t, h, abi.SubjectProposal, plan(p(4.10), p(17.00), p(0.01)))
	require.Len(t, resp.Findings, 1)
	assert.Equal(t, preconditions.CodeFailed, resp.Findings[0].Code)
	assert.Equal(t, 2, *resp.Findings[0].ActionIndex)
	bal := func(b float64) []abi.Effect {
		return []abi.Effect{{Collection: "accounts", ID: "acct1", Set: map[string]any{"balance": b}}}
	}
	assert.Equal(t, bal(17.00), asEffects(t, checked(t, resp, 0)["effects"]), "21.10 - 4.10")
	assert.Equal(t, bal(0), asEffects(t, checked(t, resp, 1)["effects"]), "17.00 - 17.00")
	q := h.recorded()
	require.Len(t, q, 5, "precondition and effect query of two calls, precondition of the third")
	assert.Nil(t, q[0].Overlay)
	assert.Nil(t, q[1].Overlay, "an effect reads the state before its own write")
	assert.Equal(t, bal(17.00), q[2].Overlay)
	assert.Equal(t, bal(17.00), q[3].Overlay)
	assert.Equal(t, append(bal(17.00), bal(0)...), q[4].Overlay)
}

// TestExecuteSendsNoOverlay: a tool_call is checked against the data as it
// is, and resolves no effects.
func TestExecuteSendsNoOverlay(t *testing.T) {
	h := &memHost{caps: map[string]abi.DomainCapability{"cancel": cancel(), "pay": pay()}, docs: shopDocs(), views: shopViews()}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("pay", map[string]any{"account_id": "acct1", "amount": 1}))
	require.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
	resp = evaluate(t, h, abi.SubjectToolCall, toolCall("cancel", map[string]any{"order_id": "o1"}))
	require.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
	q := h.recorded()
	require.Len(t, q, 2, "no effect query in execute mode")
	for _, r := range q {
		assert.Nil(t, r.Overlay)
	}
	assert.NotContains(t, checked(t, resp, 0), "effects")
	assert.NotContains(t, checked(t, resp, 0), "effects_count")
}

// TestEffectResolution: one write, no preconditions, declared effects;
// either the resolved effects or the effect that could not be resolved.
func TestEffectResolution(t *testing.T) {
	set := func(kv ...any) map[string]abi.Operand {
		m := map[string]abi.Operand{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(abi.Operand)
		}
		return m
	}
	orders := func(s map[string]abi.Operand) abi.DomainEffect {
		return abi.DomainEffect{Collection: "orders", ID: param("order_id"), Set: s}
	}
	perItem := orders(set("items.{item_id}.status", lit("return requested")))
	perItem.ForEach = &abi.ForEach{Param: "item_ids", As: []string{"item_id"}}
	twoRows := orders(set("n", field("n")))
	twoRows.View = "two"
	noRow := abi.DomainEffect{Collection: "accounts", ID: field("id"), View: "account",
		Bind: map[string]abi.Operand{"id": param("order_id")}, Set: set("balance", lit(0))}
	cases := []struct {
		name    string
		effects []abi.DomainEffect
		params  map[string]any
		want    []abi.Effect
		effect  int    // the failing effect, when want is nil
		reason  string // in its reason
	}{
		{"literal", []abi.DomainEffect{orders(set("status", lit("x")))}, map[string]any{"order_id": "o1"},
			[]abi.Effect{{Collection: "orders", ID: "o1", Set: map[string]any{"status": "x"}}}, 0, ""},
		{"computed numbers leave as float64", []abi.DomainEffect{orders(set("total", arith(abi.OperandAdd, lit(0.1), lit(0.2)), "at", abi.Operand{Kind: abi.OperandNow}))},
			map[string]any{"order_id": "o1"},
			[]abi.Effect{{Collection: "orders", ID: "o1", Set: map[string]any{"total": 0.3, "at": "2024-05-15T20:00:00Z"}}}, 0, ""},
		{"a number id is its shortest text", []abi.DomainEffect{orders(set("status", lit("x")))}, map[string]any{"order_id": 12.0},
			[]abi.Effect{{Collection: "orders", ID: "12", Set: map[string]any{"status": "x"}}}, 0, ""},
		{"for_each fills the placeholder per element", []abi.DomainEffect{perItem}, map[string]any{"order_id": "o1", "item_ids": []any{"i1", 7.0}},
			[]abi.Effect{
				{Collection: "orders", ID: "o1", Set: map[string]any{"items.i1.status": "return requested"}},
				{Collection: "orders", ID: "o1", Set: map[string]any{"items.7.status": "return requested"}},
			}, 0, ""},
		{"for_each over nothing resolves nothing", []abi.DomainEffect{perItem}, map[string]any{"order_id": "o1", "item_ids": []any{}}, []abi.Effect{}, 0, ""},
		{"a query-backed effect with no row", []abi.DomainEffect{orders(set("status", lit("x"))), noRow}, map[string]any{"order_id": "o1"}, nil, 1, "answered 0 rows"},
		{"a query-backed effect with two rows", []abi.DomainEffect{twoRows}, map[string]any{"order_id": "o1"}, nil, 0, "answered 2 rows"},
		{"an unbound set placeholder", []abi.DomainEffect{orders(set("items.{item_id}.status", lit("x")))}, map[string]any{"order_id": "o1"}, nil, 0, "placeholder {item_id}: unbound parameter"},
		{"a placeholder that is an object", []abi.DomainEffect{orders(set("items.{order_id}", lit("x")))}, map[string]any{"order_id": map[string]any{}}, nil, 0, "not a string or a number"},
		{"a placeholder with a dot", []abi.DomainEffect{orders(set("items.{item}", lit("x")))}, map[string]any{"order_id": "o1", "item": "a.b"}, nil, 0, "not usable as a path segment"},
		{"an unclosed placeholder", []abi.DomainEffect{orders(set("items.{item", lit("x")))}, map[string]any{"order_id": "o1", "item": "a"}, nil, 0, "unclosed {"},
		{"two set paths that meet", []abi.DomainEffect{orders(set("s.{a}", lit(1), "s.{b}", lit(2)))}, map[string]any{"order_id": "o1", "a": "x", "b": "x"}, nil, 0, "also resolves to s.x"},
		{"an unbound id", []abi.DomainEffect{orders(set("status", lit("x")))}, map[string]any{}, nil, 0, `id: unbound parameter "order_id"`},
		{"an object id", []abi.DomainEffect{orders(set("status", lit("x")))}, map[string]any{"order_id": map[string]any{}}, nil, 0, "not a string or a number"},
		{"a value that cannot be computed", []abi.DomainEffect{orders(set("total", arith(abi.OperandDiv, lit(1), lit(0))))}, map[string]any{"order_id": "o1"}, nil, 0, "division by zero"},
		{"a field without a row", []abi.DomainEffect{orders(set("total", field("total")))}, map[string]any{"order_id": "o1"}, nil, 0, "no row"},
		{"for_each over a non-array", []abi.DomainEffect{perItem}, map[string]any{"order_id": "o1", "item_ids": "i1"}, nil, 0, "not an array"},
		{"no collection", []abi.DomainEffect{{ID: param("order_id"), Set: set("s", lit(1))}}, map[string]any{"order_id": "o1"}, nil, 0, "no collection"},
		{"no set", []abi.DomainEffect{{Collection: "orders", ID: param("order_id")}}, map[string]any{"order_id": "o1"}, nil, 0, "no set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := write(nil, c.effects...)
			h := &memHost{caps: map[string]abi.DomainCapability{"w": w}, docs: shopDocs(), views: shopViews()}
			resp := evaluate(t, h, abi.SubjectProposal, plan(toolCall("w", c.params)))
			if c.want != nil {
				require.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
				ev := checked(t, resp, 0)
				assert.Equal(t, float64(len(c.want)), ev["effects_count"])
				assert.Equal(t, c.want, append([]abi.Effect{}, asEffects(t, ev["effects"])...))
				return
			}
			require.Equal(t, abi.Rejected, resp.Verdict)
			require.Len(t, resp.Findings, 1)
			f := resp.Findings[0]
			assert.Equal(t, preconditions.CodeUnevaluable, f.Code)
			assert.Equal(t, float64(c.effect), f.Details["effect"])
			assert.Contains(t, f.Details["reason"], c.reason)
			assert.Equal(t, "w", f.Details["capability"])
			ev := checked(t, resp, 0)
			assert.Equal(t, "denied", ev["outcome"])
			assert.NotContains(t, ev, "effects")
		})
	}
}

// TestOverlayCap: more than abi.MaxOverlayEffects effects over a plan deny
// the call that would pass the cap, and nothing of it is applied.
func TestOverlayCap(t *testing.T) {
	var effects []abi.DomainEffect
	for range 4 {
		effects = append(effects, abi.DomainEffect{Collection: "orders", ID: param("id"),
			ForEach: &abi.ForEach{Param: "ids", As: []string{"id"}}, Set: map[string]abi.Operand{"status": lit("x")}})
	}
	probe := abi.DomainPrecondition{ID: "probe", View: "order", Bind: map[string]abi.Operand{"id": lit("o1")},
		DenyWhen: on("status", "equals", lit("gone")), Message: "m"}
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{probe}, effects...)},
		docs: shopDocs(), views: shopViews()}
	ids := func(n int) map[string]any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("o%d", i)
		}
		return map[string]any{"ids": out}
	}
	resp := evaluate(t, h, abi.SubjectProposal, plan(toolCall("w", ids(40)), toolCall("w", ids(40)), toolCall("w", ids(1))))
	require.Len(t, resp.Findings, 1)
	f := resp.Findings[0]
	assert.Equal(t, 1, *f.ActionIndex)
	assert.Equal(t, preconditions.CodeUnevaluable, f.Code)
	assert.Equal(t, 2.0, f.Details["effect"], "160 + 40 + 40 + 17 > 256")
	assert.Contains(t, f.Details["reason"], "more than 256 effects")

	first := checked(t, resp, 0)
	assert.Equal(t, 160.0, first["effects_count"])
	assert.Len(t, first["effects"], 16)
	assert.Equal(t, true, first["effects_truncated"])
	q := h.recorded()
	require.Len(t, q, 3)
	assert.Len(t, q[1].Overlay, 160)
	assert.Len(t, q[2].Overlay, 160, "the denied call applied nothing")
	assert.Equal(t, 4.0, checked(t, resp, 2)["effects_count"])
}

// TestEffectsOfUnparsableArguments: a write whose arguments do not parse
// cannot resolve its effects, even without preconditions.
func TestEffectsOfUnparsableArguments(t *testing.T) {
	w := write(nil, abi.DomainEffect{Collection: "orders", ID: param("order_id"), Set: map[string]abi.Operand{"s": lit(1)}})
	h := &memHost{caps: map[string]abi.DomainCapability{"w": w}, docs: shopDocs(), views: shopViews()}
	resp := evaluate(t, h, abi.SubjectProposal, abi.Proposal{Actions: []abi.Action{{ID: "a", Tool: "w", ParseError: "not JSON"}}})
	require.Len(t, resp.Findings, 1)
	assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
	assert.Contains(t, resp.Findings[0].Details["reason"], "could not be parsed")
}

// TestComputedNumberOutOfFloat64Range: an effect value whose exact result
// has no finite float64 (a balance driven past 1.8e308) cannot be sent or
// applied, so the call is denied as unevaluable; the response stays
// encodable JSON.
func TestComputedNumberOutOfFloat64Range(t *testing.T) {
	docs := shopDocs()
	docs["accounts"]["acct1"] = map[string]any{"balance": 1.7e308}
	h := &memHost{caps: map[string]abi.DomainCapability{"pay": pay()}, docs: docs, views: shopViews()}
	call := toolCall("pay", map[string]any{"account_id": "acct1", "amount": -1.7e308})
	resp := evaluate(t, h, abi.SubjectProposal, plan(call))
	_, err := json.Marshal(resp)
	require.NoError(t, err, "the response is JSON")
	require.Len(t, resp.Findings, 1)
	assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
	assert.Contains(t, resp.Findings[0].Details["reason"], "float64")
}

// TestBindOutOfFloat64Range: a bound value past float64's range is unknown,
// not +Inf on the wire.
func TestBindOutOfFloat64Range(t *testing.T) {
	c := pay()
	c.Preconditions[0].Bind = map[string]abi.Operand{"id": arith(abi.OperandMul, param("amount"), param("amount"))}
	h := &memHost{caps: map[string]abi.DomainCapability{"pay": c}, docs: shopDocs(), views: shopViews()}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("pay", map[string]any{"account_id": "acct1", "amount": 1e200}))
	_, err := json.Marshal(resp)
	require.NoError(t, err)
	require.Len(t, resp.Findings, 1)
	assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
	assert.Empty(t, h.recorded(), "nothing is queried with an unrepresentable value")
}

// TestEffectIDOutOfFloat64Range: an id computed past the float64 range has
// no text ("+Inf" is no document's id), so the call is denied.
func TestEffectIDOutOfFloat64Range(t *testing.T) {
	c := cancel()
	c.Effects[0].ID = arith(abi.OperandMul, param("n"), param("n"))
	h := &memHost{caps: map[string]abi.DomainCapability{"cancel": c}, docs: shopDocs(), views: shopViews()}
	resp := evaluate(t, h, abi.SubjectProposal, plan(toolCall("cancel", map[string]any{"order_id": "o1", "n": 1e200})))
	require.Len(t, resp.Findings, 1)
	assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
	assert.Contains(t, resp.Findings[0].Details["reason"], "id")
}
