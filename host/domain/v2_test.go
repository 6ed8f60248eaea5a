package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/domain"
)

// baseV2 has a view v, a query r backed by it, a view-less get g with an
// entity, a view-less get n without one, and a write w with the parameters
// the cases use.
const baseV2 = `
domain: d
version: 2
views:
  v: {params: [a], document: {collection: c, id: "{a}"}}
capabilities:
  r: {kind: query, parameters: [a], view: v}
  g: {kind: get, entity: Order, parameters: [order_id]}
  n: {kind: get, parameters: [a]}
`

func withPre(p string) string {
	return baseV2 + "  w:\n    kind: action\n    parameters: [a, b, items, prices, qty]\n    preconditions:\n      - " + p + "\n"
}

func withEffect(e string) string {
	return baseV2 + "  w:\n    kind: action\n    parameters: [a, b, items, prices, qty]\n    effects:\n      - " + e + "\n"
}

// deny is a precondition over the call's parameters with the given
// deny_when.
func deny(cond string) string { return withPre(`{id: p1, deny_when: ` + cond + `, message: m}`) }

// nest wraps cond in n levels of not.
func nest(n int, cond string) string {
	return strings.Repeat("{not: ", n) + cond + strings.Repeat("}", n)
}

// TestV2Accepted: one case per v2 form that must load.
func TestV2Accepted(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"for_each param", withPre(`{id: p1, for_each: {param: items, as: item}, view: v, bind: {a: {param: item.id}}, deny_when: {field: status, not_equals: ok}, message: m}`)},
		{"for_each as list", withPre(`{id: p1, for_each: {param: items, as: [item]}, deny_when: {field: item.qty, gt: 0}, message: m}`)},
		{"zip", withPre(`{id: p1, for_each: {zip: [items, prices], as: [it, pr]}, deny_when: {value: {param: pr}, gt: {param: it.max}}, message: m}`)},
		{"field to field", withPre(`{id: p1, view: v, bind: {a: {param: a}}, deny_when: {field: paid, gt: {field: total}}, message: m}`)},
		{"arithmetic", deny(`{value: {add: [{field: x}, 4.10]}, not_equals: {mul: [{param: qty}, {div: [{field: p}, 2]}, {sub: [3, {min: [1]}]}, {max: [{param: b}, 0]}]}}`)},
		{"count with where", deny(`{value: {count: {over: {field: items}, where: {field: status, equals: delivered}}}, gt: 0}`)},
		{"sum of with where on the element", deny(`{value: {sum: {over: {param: items}, of: price, where: {field: "@", exists: true}}}, lte: 100}`)},
		{"count of rows", withPre(`{id: p1, view: v, bind: {a: {param: a}}, deny_when: {value: {count: {over: {rows: true}}}, not_equals: 1}, message: m}`)},
		{"nested aggregate", deny(`{value: {count: {over: {param: items}, where: {value: {sum: {over: {field: parts}}}, gt: 1}}}, gt: 0}`)},
		{"starts_with", deny(`{field: name, starts_with: "#W"}`)},
		{"starts_with param", deny(`{field: name, starts_with: {param: b}}`)},
		{"value leaf exists", deny(`{value: {param: b}, exists: false}`)},
		{"ordering time literal", deny(`{field: at, lt: "2024-05-15T15:00:00-05:00"}`)},
		{"ordering against now", deny(`{field: at, lt: {now: "-24h"}}`)},
		{"wire object forms", deny(`{value: {kind: count, over: {kind: param, name: items}, where: {field: x, equals: {kind: literal, value: 1}}}, gt: {kind: add, args: [{kind: literal, value: 1}, {kind: field, name: y}]}}`)},
		{"bind arithmetic over params", withPre(`{id: p1, view: v, bind: {a: {add: [{param: a}, 1]}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"view-less get with entity", withPre(`{id: p1, capability: g, bind: {order_id: {param: a}}, require: {match: {field: status, equals: pending}}, message: m}`)},
		{"for_each names in bind of a capability", withPre(`{id: p1, for_each: {param: items, as: it}, capability: r, bind: {a: {param: it}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"depth 16", deny(nest(14, `{field: f, equals: 1}`))},
		{"effect set from params", withEffect(`{collection: orders, id: {param: a}, set: {status: cancelled, "items.{b}.state": {param: b}, "log.0": {now: ""}}}`)},
		{"effect with a view row", withEffect(`{collection: orders, id: {field: order_id}, view: v, bind: {a: {param: a}}, set: {total: {sub: [{field: total}, {param: qty}]}}}`)},
		{"effect with a view-less capability", withEffect(`{collection: orders, id: {param: a}, capability: g, bind: {order_id: {param: a}}, set: {count: {add: [{field: count}, 1]}}}`)},
		{"effect for_each", withEffect(`{for_each: {zip: [items, prices], as: [it, pr]}, collection: items, id: {param: it.id}, set: {"price_{it}": {param: pr}, paid: {sum: {over: {param: prices}}}}}`)},
		{"effect literal id", withEffect(`{collection: orders, id: "#W1", set: {status: x}}`)},
		{"item placeholder under for_each", strings.Replace(baseV2, `v: {params: [a], document: {collection: c, id: "{a}"}}`,
			`v: {params: [a], document: {collection: c, id: "{a}", lookups: {names: {for_each: ids, collection: users, id: "{item}", path: name}}}}`, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := domain.Parse([]byte(c.doc))
			assert.NoError(t, err, c.doc)
		})
	}
}

// TestV2Errors: every fault of a v2 form names the capability, the
// precondition (or effects[i]) and the field path, with a reason.
func TestV2Errors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		// for_each
		{"for_each neither", withPre(`{id: p1, for_each: {as: x}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: for_each: give exactly one of param`},
		{"for_each both", withPre(`{id: p1, for_each: {param: items, zip: [items, prices], as: x}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: for_each: give exactly one of param`},
		{"for_each zip of one", withPre(`{id: p1, for_each: {zip: [items], as: [x]}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.zip: zip pairs two or more arrays`},
		{"for_each unknown param", withPre(`{id: p1, for_each: {param: nope, as: x}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.param: "nope" is not a parameter of w`},
		{"for_each zip unknown param", withPre(`{id: p1, for_each: {zip: [items, nope], as: [x, y]}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.zip[1]: "nope" is not a parameter of w`},
		{"for_each as missing", withPre(`{id: p1, for_each: {param: items}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.as: want 1 name(s), one per array; have 0`},
		{"for_each as count", withPre(`{id: p1, for_each: {zip: [items, prices], as: [x]}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.as: want 2 name(s)`},
		{"for_each as shape", withPre(`{id: p1, for_each: {param: items, as: "a-b"}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.as[0]: "a-b" is not a name`},
		{"for_each as duplicate", withPre(`{id: p1, for_each: {zip: [items, prices], as: [x, x]}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.as[1]: duplicate name "x"`},
		{"for_each as a parameter", withPre(`{id: p1, for_each: {param: items, as: qty}, deny_when: {field: f, equals: 1}, message: m}`), `for_each.as[0]: "qty" is a parameter of w`},
		{"for_each unknown member", withPre(`{id: p1, for_each: {param: items, as: x, over: y}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: for_each: json: unknown field "over"`},
		{"for_each name outside", withPre(`{id: p1, deny_when: {value: {param: item}, equals: 1}, message: m}`), `deny_when.value: "item" is not a parameter of w`},
		// operands
		{"field without path", deny(`{value: {kind: field}, equals: 1}`), `deny_when.value: a field operand needs a path`},
		{"field bad path", deny(`{value: {field: "a..b"}, equals: 1}`), `deny_when.value: path "a..b" has an empty segment`},
		{"hash not last", deny(`{field: "a.#.b", equals: 1}`), `deny_when.field: path "a.#.b": # (an array's length) must be the last segment`},
		{"at not alone", deny(`{field: "a.@", equals: 1}`), `deny_when.field: path "a.@": @`},
		{"add one arg", deny(`{value: {add: [1]}, equals: 1}`), `deny_when.value.add: add takes at least 2 operand(s), not 1`},
		{"mul no args", deny(`{value: {mul: []}, equals: 1}`), `deny_when.value.mul: mul takes at least 2`},
		{"sub three args", deny(`{value: {sub: [1, 2, 3]}, equals: 1}`), `deny_when.value.sub: sub takes exactly 2 operands, not 3`},
		{"div one arg", deny(`{value: {div: [1]}, equals: 1}`), `deny_when.value.div: div takes exactly 2 operands, not 1`},
		{"min no args", deny(`{value: {min: []}, equals: 1}`), `deny_when.value.min: min takes at least 1 operand(s), not 0`},
		{"arith string literal", deny(`{value: {max: [1, "2"]}, equals: 1}`), `deny_when.value.max[1]: arithmetic takes numbers; the literal 2 is a string`},
		{"arith nested fault", deny(`{value: {add: [1, {param: nope}]}, equals: 1}`), `deny_when.value.add[1]: "nope" is not a parameter of w`},
		{"count without over", deny(`{value: {count: {where: {field: x, equals: 1}}}, gt: 1}`), `deny_when.value.count.over: required`},
		{"count over literal", deny(`{value: {count: {over: [1, 2]}}, gt: 1}`), `deny_when.value.count.over: count is over an array: a param, field or rows operand, not "literal"`},
		{"count with of", deny(`{value: {kind: count, over: {param: items}, of: x}, gt: 1}`), `deny_when.value: a count operand has only over, where, not of`},
		{"count shorthand with of", deny(`{value: {count: {over: {param: items}, of: x}}, gt: 1}`), `deny_when.value: a count operand has only over, where, not of`},
		{"sum bad of", deny(`{value: {sum: {over: {param: items}, of: "a..b"}}, gt: 1}`), `deny_when.value.sum.of: path "a..b" has an empty segment`},
		{"where field path", deny(`{all_of: [{field: f, equals: 1}, {value: {count: {over: {param: items}, where: {field: "x.#.y", equals: 1}}}, gt: 0}]}`), `deny_when.all_of[1].value.count.where.field: path "x.#.y"`},
		{"where fault", deny(`{value: {sum: {over: {rows: true}, where: {field: x}}}, gt: 0}`), `deny_when.value.sum.where: want exactly one operator`},
		{"rows false", deny(`{value: {rows: false}, equals: 1}`), `operand rows: want {rows: true}`},
		{"rows with a member", deny(`{value: {kind: rows, name: x}, equals: 1}`), `deny_when.value: a rows operand has no members but kind`},
		{"param with value", deny(`{value: {kind: param, name: a, value: 1}, equals: 1}`), `deny_when.value: a param operand has only name, not value`},
		{"literal with args", deny(`{value: {kind: literal, value: 1, args: [1]}, equals: 1}`), `deny_when.value: a literal operand has only value, not args`},
		{"unknown kind", deny(`{value: {kind: avg, args: [1]}, equals: 1}`), `deny_when.value: unknown operand kind "avg" (want literal, param, now, field, add`},
		// where each kind may stand
		{"field in bind", withPre(`{id: p1, view: v, bind: {a: {field: x}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: bind.a: field is not allowed in bind`},
		{"rows in bind", withPre(`{id: p1, view: v, bind: {a: {rows: true}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a: rows is not allowed in bind`},
		{"count in bind", withPre(`{id: p1, view: v, bind: {a: {count: {over: {param: items}}}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a: count is not allowed in bind`},
		{"now in bind arithmetic", withPre(`{id: p1, view: v, bind: {a: {add: [{param: a}, {now: ""}]}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a.add[1]: now is not allowed in bind`},
		// conditions
		{"field and value", deny(`{field: f, value: {param: a}, equals: 1}`), `deny_when: a leaf has exactly one left-hand side: field or value, not both`},
		{"neither field nor value", deny(`{equals: 1}`), `deny_when.field: required (or value: an operand)`},
		{"value and all_of", deny(`{value: 1, all_of: [{field: f, equals: 1}]}`), `deny_when: a condition is a leaf`},
		{"starts_with number", deny(`{field: f, starts_with: 3}`), `deny_when.starts_with: a literal for starts_with must be a string, not a number`},
		{"two operators with starts_with", deny(`{field: f, starts_with: a, contains: b}`), `want exactly one operator of equals, not_equals, in, not_in, exists, gt, gte, lt, lte, contains, starts_with`},
		{"ordering literal bool", deny(`{field: f, lte: true}`), `deny_when.lte: ordering compares numbers or RFC 3339 times, not a boolean`},
		{"ordering field operand bad", deny(`{field: f, gte: {field: ""}}`), `deny_when.gte: a field operand needs a path`},
		{"depth 17", deny(nest(15, `{field: f, equals: 1}`)), `nested deeper than 16 operands and conditions`},
		{"depth in operands", deny(`{value: ` + strings.Repeat(`{add: [1, `, 16) + `1` + strings.Repeat(`]}`, 16) + `, equals: 1}`), `nested deeper than 16`},
		// view-less capabilities
		{"view-less get without entity", withPre(`{id: p1, capability: n, bind: {a: {param: a}}, deny_when: {field: f, equals: 1}, message: m}`),
			"precondition p1: capability: n has no view to answer it: give n `view: NAME` (a view whose params are n's parameters), or an `entity` naming a collection of the data source"},
		{"view-less get unbound", withPre(`{id: p1, capability: g, bind: {}, deny_when: {field: f, equals: 1}, message: m}`), `bind.order_id: the view's parameter order_id is not bound`},
		{"view-less get extra bind", withPre(`{id: p1, capability: g, bind: {order_id: 1, x: 2}, deny_when: {field: f, equals: 1}, message: m}`), `bind.x: not a parameter of the view (parameters: [order_id])`},
		// effects
		{"effects on a get", baseV2 + "  w: {kind: get, effects: [{collection: c, id: x, set: {a: 1}}]}\n", `capability w: effects: only write kinds (action, create, update, delete) declare effects, not "get"`},
		{"effect unknown member", withEffect(`{collection: c, id: x, set: {a: 1}, unless: y}`), `capabilities.w.effects[0]: unknown key "unless"`},
		{"effect no collection", withEffect(`{id: x, set: {a: 1}}`), `capability w: effects[0].collection: required`},
		{"effect bad collection", withEffect(`{collection: "a b", id: x, set: {a: 1}}`), `effects[0].collection: "a b" is not a name`},
		{"effect no id", withEffect(`{collection: c, set: {a: 1}}`), `effects[0].id: required`},
		{"effect null id", withEffect(`{collection: c, id: null, set: {a: 1}}`), `effects[0].id: a literal id is a string or a number, not a null`},
		{"effect id now", withEffect(`{collection: c, id: {now: ""}, set: {a: 1}}`), `effects[0].id: now is not allowed in an effect's id`},
		{"effect id unknown param", withEffect(`{collection: c, id: {param: nope}, set: {a: 1}}`), `effects[0].id: "nope" is not a parameter of w`},
		{"effect no set", withEffect(`{collection: c, id: x}`), `effects[0].set: required: at least one path`},
		{"effect empty set", withEffect(`{collection: c, id: x, set: {}}`), `effects[0].set: required: at least one path`},
		{"effect set empty segment", withEffect(`{collection: c, id: x, set: {"a..b": 1}}`), `effects[0].set.a..b: path "a..b" has an empty segment`},
		{"effect set star", withEffect(`{collection: c, id: x, set: {"a.*.b": 1}}`), `effects[0].set.a.*.b: path "a.*.b": * does not name a place to set`},
		{"effect set unknown placeholder", withEffect(`{collection: c, id: x, set: {"a.{zz}": 1}}`), `effects[0].set.a.{zz}: path "a.{zz}": {zz} is neither a parameter of w`},
		{"effect set dotted placeholder", withEffect(`{collection: c, id: x, set: {"a.{it.id}": 1}}`), `unbalanced`},
		{"effect set unbalanced", withEffect(`{collection: c, id: x, set: {"a.{b": 1}}`), `path "a.{b": unbalanced {`},
		{"effect field without row", withEffect(`{collection: c, id: x, set: {a: {field: total}}}`), `effects[0].set.a: field reads the effect's row, and an effect without view or capability has none`},
		{"effect field in id without row", withEffect(`{collection: c, id: {field: order_id}, set: {a: 1}}`), `effects[0].id: field reads the effect's row`},
		{"effect rows", withEffect(`{collection: c, id: x, view: v, bind: {a: 1}, set: {a: {rows: true}}}`), `effects[0].set.a: rows is not allowed in an effect's set`},
		{"effect bind without view", withEffect(`{collection: c, id: x, bind: {a: 1}, set: {a: 1}}`), `effects[0].bind: an effect without view or capability binds nothing`},
		{"effect unknown view", withEffect(`{collection: c, id: x, view: nope, bind: {}, set: {a: 1}}`), `effects[0].view: no view named "nope"`},
		{"effect view and capability", withEffect(`{collection: c, id: x, view: v, capability: r, bind: {a: 1}, set: {a: 1}}`), `effects[0].view: give view or capability, not both`},
		{"effect unbound view param", withEffect(`{collection: c, id: x, view: v, bind: {}, set: {a: 1}}`), `effects[0].bind.a: the view's parameter a is not bound`},
		{"effect capability without view", withEffect(`{collection: c, id: x, capability: n, bind: {a: 1}, set: {a: 1}}`), `effects[0].capability: n has no view to answer it`},
		{"effect for_each fault", withEffect(`{for_each: {param: items, as: [x, y]}, collection: c, id: x, set: {a: 1}}`), `effects[0].for_each.as: want 1 name(s)`},
		{"effect set value fault", withEffect(`{collection: c, id: x, set: {a: {div: [1]}}}`), `effects[0].set.a.div: div takes exactly 2 operands`},
		// views and header
		{"item outside for_each", strings.Replace(baseV2, `id: "{a}"`, `id: "{item}"`, 1), `view v: document.id: {item}: item placeholders need for_each`},
		{"version 5", strings.Replace(baseV2, "version: 2", "version: 5", 1), `version: 5 is not a supported version (want 1 to 4)`},
		{"version 0", strings.Replace(baseV2, "version: 2", "version: 0", 1), `version: 0 is not a supported version`},
		{"version text", strings.Replace(baseV2, "version: 2", "version: two", 1), `cannot unmarshal string`},
		{"no domain", strings.Replace(baseV2, "domain: d\n", "", 1), `domain: required when the catalog is not read from a file`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireInvalid(t, c.doc, c.want) })
	}
}

// TestV2Recorded: query.capability serves what the catalog declares, in
// object form.
func TestV2Recorded(t *testing.T) {
	c, err := domain.Parse([]byte(withPre(`{id: p1, for_each: {param: items, as: it}, deny_when: {value: {count: {over: {param: it.parts}}}, gt: 2}, message: m}`) +
		"    effects:\n      - {collection: orders, id: {param: a}, set: {status: cancelled}}\n"))
	require.NoError(t, err)
	w, ok := c.Capability("w")
	require.True(t, ok)
	require.Len(t, w.Preconditions, 1)
	p := w.Preconditions[0]
	assert.Equal(t, &abi.ForEach{Param: "items", As: []string{"it"}}, p.ForEach)
	assert.Equal(t, abi.Operand{Kind: abi.OperandCount, Over: &abi.Operand{Kind: abi.OperandParam, Name: "it.parts"}}, *p.DenyWhen.Value)
	require.Len(t, w.Effects, 1)
	assert.Equal(t, abi.DomainEffect{Collection: "orders", ID: abi.Operand{Kind: abi.OperandParam, Name: "a"},
		Set: map[string]abi.Operand{"status": {Kind: abi.OperandLiteral, Value: "cancelled"}}}, w.Effects[0])
	assert.Equal(t, 2, c.Version)
}

// TestDOMAINExamples: the v2 examples of DOMAIN.md, put in one catalog,
// load.
func TestDOMAINExamples(t *testing.T) {
	doc := `
views:
  order_item: {params: [order_id, item_id], document: {collection: orders, id: "{order_id}"}}
  item_pair: {params: [order_id, old, new], document: {collection: orders, id: "{order_id}"}}
  order_refund: {params: [order_id], document: {collection: orders, id: "{order_id}"}}
  plan_names:
    params: [line_id]
    document:
      collection: lines
      id: "{line_id}"
      lookups: {names: {for_each: plan_ids, collection: plans, id: "{item}", path: name}}
capabilities:
  get_order: {kind: get, entity: Order, parameters: [order_id]}
  exchange:
    kind: action
    parameters: [order_id, item_ids, new_item_ids, ids]
    preconditions:
      - id: item_is_delivered
        for_each: {param: item_ids, as: item_id}
        view: order_item
        bind: {order_id: {param: order_id}, item_id: {param: item_id}}
        require: {match: {field: status, equals: delivered}}
        message: Only delivered items can be returned.
      - id: new_item_same_product
        for_each: {zip: [item_ids, new_item_ids], as: [old, new]}
        view: item_pair
        bind: {order_id: {param: order_id}, old: {param: old}, new: {param: new}}
        deny_when: {field: new_product_id, not_equals: {field: old_product_id}}
        message: An item can only be exchanged for another variant of the same product.
      - {id: some_items, deny_when: {value: {count: {over: {param: item_ids}}}, equals: 0}, message: m}
      - id: totals
        capability: get_order
        bind: {order_id: {param: order_id}}
        deny_when: {value: {add: [{field: subtotal}, {field: shipping}]}, not_equals: {field: total}}
        message: m
      - id: pending
        view: order_refund
        bind: {order_id: {param: order_id}}
        deny_when: {value: {count: {over: {field: items}, where: {field: status, equals: pending}}}, gt: 1}
        message: m
      - id: refunds
        view: order_refund
        bind: {order_id: {param: order_id}}
        require: {match: {value: {sum: {over: {rows: true}, of: amount}}, lte: 100}}
        message: m
      - {id: ids, deny_when: {value: {count: {over: {param: ids}, where: {field: "@", starts_with: "#W"}}}, gt: 0}, message: m}
      - {id: refund_le_paid, view: order_refund, bind: {order_id: {param: order_id}}, deny_when: {field: refund, lte: {field: paid}}, message: m}
  return_delivered_order_items:
    kind: action
    parameters: [order_id, item_ids, payment_method_id]
    effects:
      - collection: orders
        id: {param: order_id}
        set: {status: return requested, return_payment_method_id: {param: payment_method_id}}
      - for_each: {param: item_ids, as: item_id}
        collection: orders
        id: {param: order_id}
        set: {"item_states.{item_id}": returned}
      - collection: users
        id: {field: user_id}
        view: order_refund
        bind: {order_id: {param: order_id}}
        set: {"payment_methods.{payment_method_id}.balance": {add: [{field: balance}, {field: refund}]}}
`
	c, err := domain.ParseNamed([]byte(doc), "retail")
	require.NoError(t, err)
	r, ok := c.Capability("return_delivered_order_items")
	require.True(t, ok)
	assert.Len(t, r.Effects, 3)
}
