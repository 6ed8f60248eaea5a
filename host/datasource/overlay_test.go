package datasource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
)

// snapshot is a deep copy of every document d has, by collection and id,
// read through whole-document views: what a reader of d sees.
func snapshot(t testing.TB, d *datasource.Documents) map[string][]datasource.Row {
	t.Helper()
	out := map[string][]datasource.Row{}
	for _, c := range d.Collections() {
		rows, err := d.Rows(context.Background(), &datasource.View{Name: "all", Document: &datasource.DocumentView{Collection: c}}, map[string]any{})
		require.NoError(t, err)
		b, err := json.Marshal(rows)
		require.NoError(t, err)
		var cp []datasource.Row
		require.NoError(t, json.Unmarshal(b, &cp))
		out[c] = cp
	}
	return out
}

func doc(t testing.TB, d *datasource.Documents, coll, id string) datasource.Row {
	t.Helper()
	rows, err := d.Rows(context.Background(), &datasource.View{Name: "one", Params: []string{"id"},
		Document: &datasource.DocumentView{Collection: coll, ID: "{id}"}}, map[string]any{"id": id})
	require.NoError(t, err)
	if len(rows) == 0 {
		return nil
	}
	require.Len(t, rows, 1)
	return rows[0]
}

func TestApply(t *testing.T) {
	set := func(coll, id string, kv ...any) abi.Effect {
		e := abi.Effect{Collection: coll, ID: id, Set: map[string]any{}}
		for i := 0; i < len(kv); i += 2 {
			e.Set[kv[i].(string)] = kv[i+1]
		}
		return e
	}
	cases := []struct {
		name    string
		effects []abi.Effect
		coll    string
		id      string
		check   func(t *testing.T, got datasource.Row)
		err     string
		bad     bool // wraps ErrBadEffect rather than ErrEffect
	}{
		{name: "member replaced", effects: []abi.Effect{set("orders", "#1", "status", "cancelled", "reason", "no longer needed")},
			coll: "orders", id: "#1", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, "cancelled", got["status"])
				assert.Equal(t, "no longer needed", got["reason"])
				assert.Equal(t, "u1", got["user_id"])
			}},
		{name: "missing intermediates created as objects", effects: []abi.Effect{set("orders", "#2", "refund.to.amount", 5.0)},
			coll: "orders", id: "#2", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, map[string]any{"to": map[string]any{"amount": 5.0}}, got["refund"])
			}},
		{name: "array element member replaced", effects: []abi.Effect{set("orders", "#1", "payments.1.pm", "card_9")},
			coll: "orders", id: "#1", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, []any{map[string]any{"pm": "card_1"}, map[string]any{"pm": "card_9"}}, got["payments"])
			}},
		{name: "index at the length appends, leading zeros allowed", effects: []abi.Effect{
			set("orders", "#1", "payments.2", map[string]any{"pm": "gift_3"}), set("orders", "#1", "payments.03.pm", "gift_4")},
			coll: "orders", id: "#1", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, []any{map[string]any{"pm": "card_1"}, map[string]any{"pm": "gift_2"},
					map[string]any{"pm": "gift_3"}, map[string]any{"pm": "gift_4"}}, got["payments"])
			}},
		{name: "numeric segment on an object is a member", effects: []abi.Effect{set("users", "u1", "methods.7", "x")},
			coll: "users", id: "u1", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, "x", got["methods"].(map[string]any)["7"])
			}},
		{name: "paths in sorted order: a whole member, then inside it", effects: []abi.Effect{
			set("orders", "#2", "x.b", 2.0, "x", map[string]any{"a": 1.0, "b": 1.0})},
			coll: "orders", id: "#2", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, map[string]any{"a": 1.0, "b": 2.0}, got["x"])
			}},
		{name: "effects in order: the later wins", effects: []abi.Effect{set("orders", "#2", "status", "a"), set("orders", "#2", "status", "b")},
			coll: "orders", id: "#2", check: func(t *testing.T, got datasource.Row) { assert.Equal(t, "b", got["status"]) }},
		{name: "missing document created", effects: []abi.Effect{set("orders", "#0", "status", "pending", "user_id", "u9")},
			coll: "orders", id: "#0", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, datasource.Row{"status": "pending", "user_id": "u9"}, got)
			}},
		{name: "null and json.Number values", effects: []abi.Effect{set("orders", "#3", "n", json.Number("2.5"), "z", nil)},
			coll: "orders", id: "#3", check: func(t *testing.T, got datasource.Row) {
				assert.Equal(t, 2.5, got["n"])
				assert.Contains(t, got, "z")
			}},

		{name: "unknown collection", effects: []abi.Effect{set("carts", "c1", "a", 1.0)}, err: `effect 0 (carts "c1"): effect cannot be applied: unknown collection "carts"`},
		{name: "index past the end", effects: []abi.Effect{set("orders", "#1", "status", "x"), set("orders", "#1", "payments.3.pm", "x")},
			err: "effect 1 (orders \"#1\"): effect cannot be applied: set payments.3.pm: index 3 is past the end of payments (2 elements)"},
		{name: "huge index", effects: []abi.Effect{set("orders", "#1", "payments.99999999999999999999999", "x")}, err: "past the end of payments"},
		{name: "name on an array", effects: []abi.Effect{set("orders", "#1", "payments.first", "x")}, err: `payments is an array and "first" is not an index`},
		{name: "through a string", effects: []abi.Effect{set("orders", "#1", "status.code", "x")}, err: "set status.code: status is a string: cannot set code through it"},
		{name: "through an array element's string member", effects: []abi.Effect{set("orders", "#1", "legs.0.fn.x", "x")}, err: "legs.0.fn is a string"},
		{name: "through null", effects: []abi.Effect{set("orders", "#3", "z", nil), set("orders", "#3", "z.a", 1.0)}, err: "z is null: cannot set a through it"},
		{name: "not a JSON value", effects: []abi.Effect{set("orders", "#1", "status", struct{}{})}, err: "value of type struct {} is not a JSON value"},
		{name: "NaN", effects: []abi.Effect{set("orders", "#1", "status", math.NaN())}, err: "is not a JSON number"},
		{name: "empty collection", effects: []abi.Effect{set("", "#1", "a", 1.0)}, err: "effect 0: malformed effect: collection is empty", bad: true},
		{name: "empty id", effects: []abi.Effect{set("orders", "#1", "a", 1.0), set("orders", "", "a", 1.0)}, err: "effect 1: malformed effect: id is empty", bad: true},
		{name: "no set", effects: []abi.Effect{{Collection: "orders", ID: "#1"}}, err: "set is empty", bad: true},
		{name: "33 segments", effects: []abi.Effect{set("orders", "#1", strings.Repeat("a.", 32)+"a", 1.0)}, err: "33 segments (at most 32)", bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := fixture()
			before := snapshot(t, d)
			got, err := d.Apply(c.effects)
			assert.Equal(t, before, snapshot(t, d), "the source changed")
			if c.err != "" {
				require.Error(t, err)
				assert.Nil(t, got)
				assert.Contains(t, err.Error(), c.err)
				if c.bad {
					assert.ErrorIs(t, err, datasource.ErrBadEffect)
					assert.ErrorIs(t, datasource.CheckEffects(c.effects), datasource.ErrBadEffect)
				} else {
					assert.ErrorIs(t, err, datasource.ErrEffect)
					assert.NoError(t, datasource.CheckEffects(c.effects))
				}
				return
			}
			require.NoError(t, err)
			c.check(t, doc(t, got, c.coll, c.id))
			// Every document the effects did not name reads as before.
			after := snapshot(t, got)
			for coll, rows := range before {
				for _, r := range rows {
					if coll == c.coll && r["order_id"] == c.id || coll == "users" && c.coll == "users" {
						continue
					}
					assert.Contains(t, after[coll], r)
				}
			}
		})
	}
}

// TestApplyCreatedDocumentsScanInIDOrder: a created document joins its
// collection's scan at its id's place.
func TestApplyCreatedDocumentsScanInIDOrder(t *testing.T) {
	d := fixture()
	got, err := d.Apply([]abi.Effect{
		{Collection: "orders", ID: "#25", Set: map[string]any{"order_id": "#25", "user_id": "u1"}},
		{Collection: "orders", ID: "#0", Set: map[string]any{"order_id": "#0", "user_id": "u1"}},
		{Collection: "users", ID: "u2", Set: map[string]any{"methods": map[string]any{}}},
	})
	require.NoError(t, err)
	v := &datasource.View{Name: "by_user", Params: []string{"u"}, Document: &datasource.DocumentView{Collection: "orders",
		Where: map[string]any{"user_id": "{u}"}, Fields: map[string]string{"id": "order_id"}}}
	rows, err := got.Rows(context.Background(), v, map[string]any{"u": "u1"})
	require.NoError(t, err)
	assert.Equal(t, []datasource.Row{{"id": "#0"}, {"id": "#1"}, {"id": "#2"}, {"id": "#25"}}, rows)
	rows, err = d.Rows(context.Background(), v, map[string]any{"u": "u1"})
	require.NoError(t, err)
	assert.Equal(t, []datasource.Row{{"id": "#1"}, {"id": "#2"}}, rows, "the source gained documents")
}

// TestApplyChained: an overlay over an overlay sees both, and neither the
// source nor the first overlay changes.
func TestApplyChained(t *testing.T) {
	d := fixture()
	d0 := snapshot(t, d)
	d1, err := d.Apply([]abi.Effect{{Collection: "orders", ID: "#1", Set: map[string]any{"status": "cancelled", "payments.0.pm": "x"}}})
	require.NoError(t, err)
	s1 := snapshot(t, d1)
	d2, err := d1.Apply([]abi.Effect{
		{Collection: "orders", ID: "#1", Set: map[string]any{"payments.0.pm": "y", "payments.2": "z"}},
		{Collection: "orders", ID: "#4", Set: map[string]any{"status": "new"}},
	})
	require.NoError(t, err)
	assert.Equal(t, d0, snapshot(t, d))
	assert.Equal(t, s1, snapshot(t, d1))
	got := doc(t, d2, "orders", "#1")
	assert.Equal(t, "cancelled", got["status"])
	assert.Equal(t, []any{map[string]any{"pm": "y"}, map[string]any{"pm": "gift_2"}, "z"}, got["payments"])
	assert.Equal(t, datasource.Row{"status": "new"}, doc(t, d2, "orders", "#4"))
	assert.Nil(t, doc(t, d1, "orders", "#4"))
	assert.Len(t, snapshot(t, d2)["orders"], 4)
}

// TestApplyCopiesValues: changing an effect's value after Apply reaches
// neither the result nor the source.
func TestApplyCopiesValues(t *testing.T) {
	d := fixture()
	val := map[string]any{"list": []any{1.0, map[string]any{"k": "v"}}}
	got, err := d.Apply([]abi.Effect{{Collection: "orders", ID: "#2", Set: map[string]any{"extra": val}}})
	require.NoError(t, err)
	val["list"].([]any)[1].(map[string]any)["k"] = "changed"
	val["list"].([]any)[0] = 2.0
	val["new"] = true
	assert.Equal(t, map[string]any{"list": []any{1.0, map[string]any{"k": "v"}}}, doc(t, got, "orders", "#2")["extra"])
}

// TestApplyManyOverlays: many overlays over one source, each over the
// previous one or over the source, leave the source exactly as it was.
func TestApplyManyOverlays(t *testing.T) {
	d := fixture()
	before := snapshot(t, d)
	cur := d
	for i := range 200 {
		e := []abi.Effect{
			{Collection: "orders", ID: fmt.Sprintf("#%d", i%5), Set: map[string]any{"status": fmt.Sprint(i), "payments.0.pm": i, "legs.0.date": "d"}},
			{Collection: "users", ID: "u1", Set: map[string]any{"methods.card_1.source": fmt.Sprint(i), fmt.Sprintf("methods.m%d.source", i): "x"}},
		}
		from := cur
		if i%3 == 0 {
			from = d
		}
		next, err := from.Apply(e)
		require.NoError(t, err)
		cur = next
	}
	assert.Equal(t, before, snapshot(t, d))
}

// TestApplyConcurrentReaders: readers of a source and of its overlays run
// while overlays are built from it (run with -race).
func TestApplyConcurrentReaders(t *testing.T) {
	d := fixture()
	before := snapshot(t, d)
	v := &datasource.View{Name: "all", Document: &datasource.DocumentView{Collection: "orders"}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				o, err := d.WithOverlay(context.Background(), []abi.Effect{{Collection: "orders", ID: "#1",
					Set: map[string]any{"status": fmt.Sprint(g, i), "payments.1.pm": "p", "legs.2": map[string]any{}}}})
				if !assert.NoError(t, err) {
					return
				}
				_, err = o.Rows(context.Background(), v, map[string]any{})
				assert.NoError(t, err)
				_, err = d.Rows(context.Background(), v, map[string]any{})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, before, snapshot(t, d))
}

func TestWithOverlay(t *testing.T) {
	d := fixture()
	var o datasource.Overlayer = d
	src, err := o.WithOverlay(context.Background(), []abi.Effect{{Collection: "orders", ID: "#2", Set: map[string]any{"status": "returned"}}})
	require.NoError(t, err)
	assert.Equal(t, "returned", doc(t, src.(*datasource.Documents), "orders", "#2")["status"])

	_, err = o.WithOverlay(context.Background(), []abi.Effect{{Collection: "nope", ID: "x", Set: map[string]any{"a": 1.0}}})
	assert.ErrorIs(t, err, datasource.ErrEffect)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = o.WithOverlay(ctx, []abi.Effect{{Collection: "orders", ID: "#2", Set: map[string]any{"status": "returned"}}})
	assert.ErrorIs(t, err, context.Canceled)

	same, err := d.Apply(nil)
	require.NoError(t, err)
	assert.Same(t, d, same, "no effects: the source itself")
}
