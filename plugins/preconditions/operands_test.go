package preconditions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/preconditions"
)

// operandRow is the one row view "v" answers in TestOperandsAndOperators.
var operandRow = map[string]any{
	"a": 17.00, "b": 4.10, "c": 21.10, "zero": 0, "s": "prefix-rest", "str": "x",
	"tags": []any{"a", "b"},
	"items": []any{
		map[string]any{"price": 10.1, "qty": 2, "kind": "x"},
		map[string]any{"price": 0.2, "qty": 1, "kind": "y"},
	},
	"sparse": []any{map[string]any{"kind": "x"}, map[string]any{}},
}

// nest wraps leaf in n single-member all_of conditions, so the leaf is at
// level n+1 and its operands at n+2.
func nest(n int, leaf *abi.Condition) *abi.Condition {
	for range n {
		leaf = allOf(leaf)
	}
	return leaf
}

// nestAdd is add(add(…add(1, 0)…, 0), 0) of n adds: n levels of operand.
func nestAdd(n int) abi.Operand {
	o := lit(1)
	for range n {
		o = arith(abi.OperandAdd, o, lit(0))
	}
	return o
}

// TestOperandsAndOperators: each case is one deny_when over view "v"
// (operandRow) with call parameters params: "deny" when the condition is
// true, "pass" when false, "unevaluable" when unknown.
func TestOperandsAndOperators(t *testing.T) {
	params := map[string]any{"amounts": []any{19.99, 5.01, 0.1, 0.2}, "n": 3, "s": "abc", "list": []any{17},
		"root": "/srv/files", "pub": "/srv/files/public/x.txt", "nested": "/srv/files/private/public/x.txt",
		"dotdot": "/srv/files/public/../private/x", "alike": "/srv/files/publicity/x", "rel": "public/x"}
	add := func(args ...abi.Operand) abi.Operand { return arith(abi.OperandAdd, args...) }
	sub := func(args ...abi.Operand) abi.Operand { return arith(abi.OperandSub, args...) }
	mul := func(args ...abi.Operand) abi.Operand { return arith(abi.OperandMul, args...) }
	div := func(args ...abi.Operand) abi.Operand { return arith(abi.OperandDiv, args...) }
	kindX := on("kind", "equals", lit("x"))
	cases := []struct {
		name string
		cond *abi.Condition
		bind map[string]abi.Operand
		want string
	}{
		// Exact arithmetic.
		{"17.00 + 4.10 == 21.10", val(add(lit(17.00), lit(4.10)), "equals", lit(21.10)), nil, "deny"},
		{"0.1 + 0.2 == 0.3", val(add(lit(0.1), lit(0.2)), "equals", lit(0.3)), nil, "deny"},
		{"0.1 + 0.2 is not > 0.3", val(add(lit(0.1), lit(0.2)), "gt", lit(0.3)), nil, "pass"},
		{"21.10 - 17.00 == 4.10", val(sub(lit(21.10), lit(17.00)), "equals", lit(4.10)), nil, "deny"},
		{"field c == field a + field b", on("c", "equals", add(field("a"), field("b"))), nil, "deny"},
		{"field c - field a == field b", val(sub(field("c"), field("a")), "equals", field("b")), nil, "deny"},
		{"1.1 * 3 == 3.3", val(mul(lit(1.1), lit(3)), "equals", lit(3.3)), nil, "deny"},
		{"1 / 3 * 3 == 1", val(mul(div(lit(1), lit(3)), lit(3)), "equals", lit(1)), nil, "deny"},
		{"min", val(arith(abi.OperandMin, lit(3), lit(1.5), lit(2)), "equals", lit(1.5)), nil, "deny"},
		{"max", val(arith(abi.OperandMax, lit(3), lit(1.5), param("n")), "equals", lit(3)), nil, "deny"},
		{"min of one", val(arith(abi.OperandMin, lit(7)), "equals", lit(7)), nil, "deny"},
		{"add with a param", val(add(param("n"), lit(0.5)), "lt", lit(3.6)), nil, "deny"},
		{"div by zero", val(div(lit(1), field("zero")), "equals", lit(1)), nil, "unevaluable"},
		{"a string in arithmetic", val(add(lit(1), field("str")), "equals", lit(1)), nil, "unevaluable"},
		{"a missing field in arithmetic", val(add(lit(1), field("nope")), "equals", lit(1)), nil, "unevaluable"},
		{"add of one", val(add(lit(1)), "equals", lit(1)), nil, "unevaluable"},
		{"sub of three", val(sub(lit(3), lit(2), lit(1)), "equals", lit(0)), nil, "unevaluable"},
		{"a product too large to compute exactly", val(mul(lit(1e300), lit(1e300), lit(1e300), lit(1e300), lit(1e300), lit(1e300), lit(1e300), lit(1e300), lit(1e300)), "gt", lit(0)), nil, "unevaluable"},
		{"max of none", val(arith(abi.OperandMax), "equals", lit(0)), nil, "unevaluable"},
		// Numeric comparisons are exact everywhere, equals and in included.
		{"computed in list", val(add(lit(0.1), lit(0.2)), "in", lit([]any{0.3, 1})), nil, "deny"},
		{"computed not_in list", val(add(lit(0.1), lit(0.2)), "not_in", lit([]any{0.3})), nil, "pass"},
		{"field in param list", on("a", "in", param("list")), nil, "deny"},
		{"computed not_equals", val(add(lit(17.00), lit(4.10)), "not_equals", field("c")), nil, "pass"},
		{"a number is not its string", val(add(lit(1), lit(0)), "equals", lit("1")), nil, "pass"},
		{"field gte field", on("a", "gte", field("b")), nil, "deny"},
		{"field lte computed", on("a", "lte", sub(field("c"), field("b"))), nil, "deny"},
		{"field lt computed", on("a", "lt", sub(field("c"), field("b"))), nil, "pass"},
		// Aggregates.
		{"count all", val(count(field("items"), nil), "equals", lit(2)), nil, "deny"},
		{"count where", val(count(field("items"), kindX), "equals", lit(1)), nil, "deny"},
		{"count over a scalar array with @", val(count(field("tags"), on("@", "equals", lit("a"))), "equals", lit(1)), nil, "deny"},
		{"count over a param", val(count(param("amounts"), nil), "equals", lit(4)), nil, "deny"},
		{"count over a non-array", val(count(field("str"), nil), "equals", lit(1)), nil, "unevaluable"},
		{"count over a missing field", val(count(field("nope"), nil), "equals", lit(0)), nil, "unevaluable"},
		{"count where unknown for an element", val(count(field("sparse"), kindX), "gte", lit(0)), nil, "unevaluable"},
		{"count without over", val(abi.Operand{Kind: abi.OperandCount}, "equals", lit(0)), nil, "unevaluable"},
		{"sum of", val(sum(field("items"), "price", nil), "equals", lit(10.3)), nil, "deny"},
		{"sum of where", val(sum(field("items"), "qty", kindX), "equals", lit(2)), nil, "deny"},
		{"money sum of a param", val(sum(param("amounts"), "", nil), "equals", lit(25.3)), nil, "deny"},
		{"sum where @ over scalars", val(sum(param("amounts"), "@", on("@", "gt", lit(1))), "equals", lit(25)), nil, "deny"},
		{"sum of a missing of", val(sum(field("items"), "cost", nil), "equals", lit(0)), nil, "unevaluable"},
		{"sum of objects without of", val(sum(field("items"), "", nil), "equals", lit(0)), nil, "unevaluable"},
		{"sum of strings", val(sum(field("tags"), "", nil), "equals", lit(0)), nil, "unevaluable"},
		{"sum over nothing matching is 0", val(sum(field("items"), "price", on("kind", "equals", lit("z"))), "equals", lit(0)), nil, "deny"},
		{"count of rows", val(count(rowsOp(), nil), "equals", lit(1)), nil, "deny"},
		{"sum over rows", val(sum(rowsOp(), "a", nil), "equals", lit(17)), nil, "deny"},
		// starts_with.
		{"starts_with", on("s", "starts_with", lit("prefix")), nil, "deny"},
		{"starts_with false", on("s", "starts_with", lit("rest")), nil, "pass"},
		{"starts_with a param", val(param("s"), "starts_with", lit("ab")), nil, "deny"},
		{"starts_with a number", on("a", "starts_with", lit("1")), nil, "unevaluable"},
		{"starts_with on an array", on("tags", "starts_with", lit("a")), nil, "unevaluable"},
		// under: lexical, component-wise; a relative path is under nothing.
		{"under", val(param("pub"), "under", lit("/srv/files/public")), nil, "deny"},
		{"under the root itself", val(lit("/srv/files/public/"), "under", lit("/srv/files/public")), nil, "deny"},
		{"under a param root", val(param("pub"), "under", param("root")), nil, "deny"},
		{"under: a public/ elsewhere", val(param("nested"), "under", lit("/srv/files/public")), nil, "pass"},
		{"under: .. escapes", val(param("dotdot"), "under", lit("/srv/files/public")), nil, "pass"},
		{"under: a name prefix is not a segment", val(param("alike"), "under", lit("/srv/files/public")), nil, "pass"},
		{"under: a relative path", val(param("rel"), "under", lit("/srv/files")), nil, "pass"},
		{"under a relative root", val(param("pub"), "under", lit("srv/files")), nil, "unevaluable"},
		{"under: a number", on("a", "under", lit("/")), nil, "unevaluable"},
		{"under: an array", on("tags", "under", lit("/")), nil, "unevaluable"},
		{"under: a number root", val(param("pub"), "under", lit(1)), nil, "unevaluable"},
		{"under: a missing param", val(param("nope"), "under", lit("/")), nil, "unevaluable"},
		// value leaves and exists.
		{"value param exists", exists(param("n"), true), nil, "deny"},
		{"value missing param exists", exists(param("nope"), true), nil, "pass"},
		{"value missing param not exists", exists(param("nope"), false), nil, "deny"},
		{"value field exists", exists(field("a"), true), nil, "deny"},
		{"value computed exists", exists(add(lit(1), lit(2)), true), nil, "deny"},
		{"value div by zero exists is unknown", exists(div(lit(1), lit(0)), true), nil, "unevaluable"},
		{"value div by zero not exists is unknown", exists(div(lit(1), lit(0)), false), nil, "unevaluable"},
		{"value contains", val(field("tags"), "contains", lit("b")), nil, "deny"},
		{"value in", val(param("s"), "in", lit([]any{"abc"})), nil, "deny"},
		// Three-valued logic with the new operands.
		{"any_of unknown or true", anyOf(val(div(lit(1), lit(0)), "equals", lit(1)), on("a", "equals", lit(17))), nil, "deny"},
		{"any_of unknown or false", anyOf(val(div(lit(1), lit(0)), "equals", lit(1)), on("a", "equals", lit(18))), nil, "unevaluable"},
		{"all_of unknown and false", allOf(val(div(lit(1), lit(0)), "equals", lit(1)), on("a", "equals", lit(18))), nil, "pass"},
		{"not unknown", not(val(count(field("str"), nil), "equals", lit(1))), nil, "unevaluable"},
		// Depth guard: at most abi.MaxExpressionDepth levels.
		{"depth 16 of conditions", nest(14, on("a", "equals", lit(17))), nil, "deny"},
		{"depth 17 of conditions", nest(15, on("a", "equals", lit(17))), nil, "unevaluable"},
		{"depth 16 of operands", val(nestAdd(14), "equals", lit(1)), nil, "deny"},
		{"depth 17 of operands", val(nestAdd(15), "equals", lit(1)), nil, "unevaluable"},
		{"depth 17 through where", val(count(field("items"), nest(13, kindX)), "equals", lit(1)), nil, "unevaluable"},
		{"depth 16 through where", val(count(field("items"), nest(12, kindX)), "equals", lit(1)), nil, "deny"},
		{"depth 17 in a bind", on("a", "equals", lit(17)), map[string]abi.Operand{"k": nestAdd(16)}, "unevaluable"},
		// Shapes a valid catalog never holds.
		{"field and value", &abi.Condition{Field: "a", Value: ptr(lit(1)), Equals: ptr(lit(1))}, nil, "unevaluable"},
		{"a composite with a leaf", &abi.Condition{Field: "a", Equals: ptr(lit(17)), Not: on("a", "equals", lit(1))}, nil, "unevaluable"},
		{"two composites", &abi.Condition{AllOf: []abi.Condition{*on("a", "equals", lit(17))}, Not: on("a", "equals", lit(1))}, nil, "unevaluable"},
		{"exists and equals", &abi.Condition{Field: "a", Exists: ptr(true), Equals: ptr(lit(17))}, nil, "unevaluable"},
		{"field operand in a bind", on("a", "equals", lit(17)), map[string]abi.Operand{"k": field("a")}, "unevaluable"},
		{"rows in a bind", on("a", "equals", lit(17)), map[string]abi.Operand{"k": rowsOp()}, "unevaluable"},
		{"field operand without name", val(field(""), "equals", lit(1)), nil, "unevaluable"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d %s", i, c.name), func(t *testing.T) {
			p := denyWhen("p", "v", c.cond)
			p.Bind = c.bind
			h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{p})},
				views: map[string]view{"v": fixed(operandRow)}}
			resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", params))
			assert.Equal(t, c.want, decision(resp), "%+v", resp.Findings)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestComputedBindLeavesAsFloat: a computed bind is sent as the nearest
// float64, a now as RFC 3339 text.
func TestComputedBindLeavesAsFloat(t *testing.T) {
	p := denyWhen("p", "v", on("a", "equals", lit(0)))
	p.Bind = map[string]abi.Operand{
		"total": arith(abi.OperandAdd, lit(0.1), lit(0.2)),
		"third": arith(abi.OperandDiv, lit(1), lit(3)),
		"at":    {Kind: abi.OperandNow, Offset: "-1h"},
	}
	h := &memHost{caps: map[string]abi.DomainCapability{"w": write([]abi.DomainPrecondition{p})},
		views: map[string]view{"v": fixed(map[string]any{"a": 1})}}
	resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", nil))
	assert.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
	q := h.recorded()
	require.Len(t, q, 1)
	assert.Equal(t, map[string]any{"total": 0.3, "third": 1.0 / 3, "at": "2024-05-15T19:00:00Z"}, q[0].Params)
}

// TestNestedAggregatesAreBounded: aggregates over the rows nested inside
// each other's where multiply the work by the rows at every level; past
// the call's evaluation budget the precondition is unevaluable, promptly,
// while one quadratic level (an aggregate over every row, on every row)
// still evaluates.
func TestNestedAggregatesAreBounded(t *testing.T) {
	rows := make([]map[string]any, abi.MaxQueryRows)
	for i := range rows {
		rows[i] = map[string]any{"n": float64(i)}
	}
	countWhere := func(where *abi.Condition) *abi.Condition {
		return val(count(rowsOp(), where), "gt", lit(0))
	}
	leaf := on("n", "gte", lit(0))
	// require.match stops at the first row that holds, so one count is a
	// thousand element tests, two are a million and three a billion.
	quadratic := countWhere(leaf)
	cubic := countWhere(countWhere(countWhere(leaf)))
	for _, tc := range []struct {
		name  string
		match *abi.Condition
		code  string
	}{
		{"quadratic", quadratic, ""},
		{"cubic", cubic, preconditions.CodeUnevaluable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := abi.DomainCapability{Domain: "d", Name: "w", Tools: []string{"w"}, Kind: abi.KindAction,
				Preconditions: []abi.DomainPrecondition{{ID: "p", View: "all", Require: &abi.Require{Match: tc.match}, Message: "m"}}}
			h := &memHost{caps: map[string]abi.DomainCapability{"w": c}, views: map[string]view{"all": fixed(rows...)}}
			resp := evaluate(t, h, abi.SubjectToolCall, toolCall("w", nil))
			if tc.code == "" {
				assert.Empty(t, resp.Findings)
				return
			}
			require.Len(t, resp.Findings, 1)
			assert.Equal(t, tc.code, resp.Findings[0].Code)
			assert.Contains(t, resp.Findings[0].Details["reason"], "steps")
		})
	}
}
