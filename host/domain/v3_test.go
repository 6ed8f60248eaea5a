package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/domain"
)

// TestV3Accepted: one case per v3 form (let, an effect's when, an index
// from the end) that must load.
func TestV3Accepted(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"let over a view per element", withPre(`{id: p1, let: {unit_prices: {for_each: {param: items, as: it}, view: v, bind: {a: {param: it}}, value: {field: price}}}, deny_when: {value: {sum: {over: {param: unit_prices}}}, gt: {param: b}}, message: m}`)},
		{"let over params", withPre(`{id: p1, let: {total: {value: {mul: [{param: qty}, 2]}}}, deny_when: {field: total, gt: 10}, message: m}`)},
		{"let in bind", withPre(`{id: p1, let: {k: {view: v, bind: {a: {param: a}}, value: {field: key}}}, view: v, bind: {a: {param: k}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"let reads the precondition's for_each name", withPre(`{id: p1, for_each: {param: items, as: it}, let: {p: {view: v, bind: {a: {param: it}}, value: {field: price}}}, deny_when: {value: {param: p}, gt: 1}, message: m}`)},
		{"let zip", withPre(`{id: p1, let: {d: {for_each: {zip: [items, prices], as: [x, y]}, value: {sub: [{param: y}, {param: x.price}]}}}, deny_when: {value: {max: [0, {sum: {over: {param: d}}}]}, gt: 1}, message: m}`)},
		{"let with a view-less capability", withPre(`{id: p1, let: {s: {capability: g, bind: {order_id: {param: a}}, value: {field: status}}}, deny_when: {value: {param: s}, equals: x}, message: m}`)},
		{"effect when over its row", withEffect(`{collection: users, id: {field: user_id}, view: v, bind: {a: {param: a}}, when: {field: source, equals: gift_card}, set: {"methods.{b}.balance": {sub: [{field: balance}, {param: qty}]}}}`)},
		{"effect when over params", withEffect(`{collection: orders, id: {param: a}, when: {value: {param: qty}, gt: 0}, set: {status: x}}`)},
		{"effect let as placeholder", withEffect(`{collection: users, id: {param: a}, let: {pm: {view: v, bind: {a: {param: a}}, value: {field: method}}}, set: {"methods.{pm}.balance": 0}}`)},
		{"effect for_each with let and when", withEffect(`{for_each: {param: items, as: it}, let: {s: {view: v, bind: {a: {param: it}}, value: {field: source}}}, when: {value: {param: s}, equals: gift_card}, collection: users, id: {param: a}, set: {"m.{it}": null}}`)},
		{"index from the end in a param", withPre(`{id: p1, view: v, bind: {a: {param: items.-1.id}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"index from the end in a field and of", deny(`{value: {sum: {over: {field: lines}, of: parts.-2}}, not_equals: {field: lines.-1.total}}`)},
		{"let value 16 levels deep", withPre(`{id: p1, let: {x: {value: {add: [1, ` + nestAdd(14) + `]}}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"version 3", strings.Replace(withPre(`{id: p1, deny_when: {field: f, equals: 1}, message: m}`), "version: 2", "version: 3", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := domain.Parse([]byte(c.doc))
			assert.NoError(t, err, c.doc)
		})
	}
}

// TestV3Errors: every fault of a v3 form names where it is, with a reason.
func TestV3Errors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"let name", withPre(`{id: p1, let: {"a-b": {value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.a-b: "a-b" is not a name`},
		{"let a parameter", withPre(`{id: p1, let: {qty: {value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.qty: "qty" is a parameter of w`},
		{"let a for_each name", withPre(`{id: p1, for_each: {param: items, as: it}, let: {it: {value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.it: "it" is also a for_each name`},
		{"let without value", withPre(`{id: p1, let: {x: {view: v, bind: {a: {param: a}}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.value: required`},
		{"let unknown member", withPre(`{id: p1, let: {x: {value: 1, over: y}}, deny_when: {field: f, equals: 1}, message: m}`), `capabilities.w.preconditions[0].let.x: unknown key "over"`},
		{"let field without row", withPre(`{id: p1, let: {x: {value: {field: price}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.value: field reads the let's row, and a let without view or capability has none`},
		{"let bind without view", withPre(`{id: p1, let: {x: {bind: {a: 1}, value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.bind: a let without view or capability binds nothing`},
		{"let unbound view parameter", withPre(`{id: p1, let: {x: {view: v, value: {field: y}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.bind.a: the view's parameter a is not bound`},
		{"let reads another let", withPre(`{id: p1, let: {x: {value: 1}, y: {value: {param: x}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.y.value: "x" is not a parameter of w`},
		{"let rows", withPre(`{id: p1, let: {x: {view: v, bind: {a: {param: a}}, value: {rows: true}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.value: rows is not allowed in a let's value`},
		{"let for_each", withPre(`{id: p1, let: {x: {for_each: {param: nope, as: e}, value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.for_each.param: "nope" is not a parameter of w`},
		{"let for_each name taken", withPre(`{id: p1, for_each: {param: items, as: it}, let: {x: {for_each: {param: prices, as: it}, value: 1}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.for_each.as: "it" is already a name here`},
		{"let too deep", withPre(`{id: p1, let: {x: {value: {add: [1, ` + nestAdd(15) + `]}}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: let.x.value.add[1]`},
		{"when unknown operator", withEffect(`{collection: c, id: {param: a}, when: {value: {param: a}, above: 1}, set: {s: 1}}`), `capabilities.w.effects[0].when: unknown key "above"`},
		{"when field without row", withEffect(`{collection: c, id: {param: a}, when: {field: source, equals: gift_card}, set: {s: 1}}`), `effects[0].when.field: field reads the effect's row, and an effect without view or capability has none`},
		{"when rows", withEffect(`{collection: c, id: {param: a}, view: v, bind: {a: {param: a}}, when: {value: {count: {over: {rows: true}}}, gt: 0}, set: {s: 1}}`), `effects[0].when.value.count.over: rows is not allowed in an effect's when`},
		{"when two operators", withEffect(`{collection: c, id: {param: a}, when: {value: {param: a}, equals: 1, gt: 0}, set: {s: 1}}`), `effects[0].when: want exactly one operator`},
		{"effect let placeholder unknown", withEffect(`{collection: c, id: {param: a}, let: {pm: {value: x}}, set: {"m.{pn}": 1}}`), `effects[0].set.m.{pn}: path "m.{pn}": {pn} is neither a parameter of w`},
		{"effect let a parameter", withEffect(`{collection: c, id: {param: a}, let: {b: {value: x}}, set: {s: 1}}`), `effects[0].let.b: "b" is a parameter of w`},
		{"index -0", deny(`{field: lines.-0.total, equals: 1}`), `deny_when.field: path "lines.-0.total": -0 is not an index from the end`},
		{"index -01 in a param", withPre(`{id: p1, view: v, bind: {a: {param: items.-01}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a: path "items.-01": -01 is not an index from the end`},
		{"index from the end in a set path", withEffect(`{collection: c, id: {param: a}, set: {"lines.-1.state": x}}`), `effects[0].set.lines.-1.state: path "lines.-1.state": -1 does not name a place to set`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireInvalid(t, c.doc, c.want) })
	}
}

// nestAdd is n nested add operands around a literal.
func nestAdd(n int) string {
	s := "1"
	for range n {
		s = "{add: [1, " + s + "]}"
	}
	return s
}

// TestV3Recorded: query.capability serves a let and a when in object form.
func TestV3Recorded(t *testing.T) {
	c, err := domain.Parse([]byte(withPre(`{id: p1, let: {d: {for_each: {param: items, as: it}, view: v, bind: {a: {param: it}}, value: {field: price}}}, deny_when: {value: {sum: {over: {param: d}}}, gt: 1}, message: m}`) +
		"    effects:\n      - {collection: orders, id: {param: a}, when: {value: {param: qty}, gt: 0}, set: {status: x}}\n"))
	require.NoError(t, err)
	w, ok := c.Capability("w")
	require.True(t, ok)
	require.Len(t, w.Preconditions, 1)
	assert.Equal(t, map[string]abi.Let{"d": {
		ForEach: &abi.ForEach{Param: "items", As: []string{"it"}}, View: "v",
		Bind:  map[string]abi.Operand{"a": {Kind: abi.OperandParam, Name: "it"}},
		Value: abi.Operand{Kind: abi.OperandField, Name: "price"},
	}}, w.Preconditions[0].Let)
	require.Len(t, w.Effects, 1)
	assert.Equal(t, &abi.Condition{Value: &abi.Operand{Kind: abi.OperandParam, Name: "qty"}, Gt: &abi.Operand{Kind: abi.OperandLiteral, Value: 0.0}}, w.Effects[0].When)
}

// TestDOMAINExamplesV3: the v3 examples of DOMAIN.md (let, an effect's
// when, an index from the end), put in one catalog, load.
func TestDOMAINExamplesV3(t *testing.T) {
	doc := `
version: 3
views:
  flight_route: {params: [flight_number], document: {collection: flights, id: "{flight_number}"}}
  line_change: {params: [order_id, new_item_id], document: {collection: orders, id: "{order_id}"}}
  order_payment_method: {params: [order_id, payment_method_id], document: {collection: orders, id: "{order_id}"}}
  order_state: {params: [order_id], document: {collection: orders, id: "{order_id}"}}
  order_original_method: {params: [order_id], document: {collection: orders, id: "{order_id}"}}
capabilities:
  book:
    kind: create
    parameters: [flights, destination]
    preconditions:
      - id: booking_ends_at_trip_end
        view: flight_route
        bind: {flight_number: {param: "flights.-1.flight_number"}}
        require: {match: {field: destination, equals: {param: destination}}}
        message: The itinerary's last flight must arrive at the destination.
  modify_items:
    kind: update
    parameters: [order_id, item_ids, new_item_ids, payment_method_id]
    preconditions:
      - id: gift_card_covers_difference
        let:
          differences:
            for_each: {zip: [item_ids, new_item_ids], as: [item, new_item]}
            view: line_change
            bind: {order_id: {param: order_id}, new_item_id: {param: new_item}}
            value: {sub: [{field: new_price}, {field: old_price}]}
        view: order_payment_method
        bind: {order_id: {param: order_id}, payment_method_id: {param: payment_method_id}}
        deny_when:
          all_of:
            - {field: method_source, equals: gift_card}
            - {field: method_balance, lt: {sum: {over: {param: differences}}}}
        message: A gift card paying the difference must cover the total difference.
  modify_payment:
    kind: update
    parameters: [order_id, payment_method_id]
    effects:
      - collection: users
        id: {field: user_id}
        view: order_payment_method
        bind: {order_id: {param: order_id}, payment_method_id: {param: payment_method_id}}
        when: {field: method_source, equals: gift_card}
        set: {"payment_methods.{payment_method_id}.balance": {sub: [{field: method_balance}, {field: paid_amount}]}}
      - collection: users
        id: {field: user_id}
        let: {original: {view: order_state, bind: {order_id: {param: order_id}}, value: {field: original_payment_method_id}}}
        view: order_original_method
        bind: {order_id: {param: order_id}}
        when: {field: original_method_source, equals: gift_card}
        set: {"payment_methods.{original}.balance": {add: [{field: original_method_balance}, {field: paid_amount}]}}
`
	c, err := domain.ParseNamed([]byte(doc), "retail")
	require.NoError(t, err)
	assert.Equal(t, 3, c.Version)
	m, ok := c.Capability("modify_payment")
	require.True(t, ok)
	require.Len(t, m.Effects, 2)
	assert.NotNil(t, m.Effects[1].When)
	assert.Contains(t, m.Effects[1].Let, "original")
}
