package datasource_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
)

func fixture() *datasource.Documents {
	return datasource.NewDocuments(map[string]map[string]any{
		"orders": {
			"#1": map[string]any{"order_id": "#1", "user_id": "u1", "status": "pending", "n": 2.0,
				"payments": []any{map[string]any{"pm": "card_1"}, map[string]any{"pm": "gift_2"}},
				"legs":     []any{map[string]any{"fn": "F1", "date": "2024-05-01"}, map[string]any{"fn": "F2", "date": "2024-05-02"}}},
			"#2": map[string]any{"order_id": "#2", "user_id": "u1", "status": "delivered", "n": 1.0},
			"#3": map[string]any{"order_id": "#3", "user_id": "u2", "status": "pending", "n": "1"},
		},
		"users": {"u1": map[string]any{"methods": map[string]any{"card_1": map[string]any{"source": "credit_card"}},
			"orders": []any{"#1", "#9", "#2"}, "counts": []any{2.0}}},
		"flights": {"F1": map[string]any{"dates": map[string]any{"2024-05-01": map[string]any{"status": "landed"}}}},
	})
}

func TestDocuments(t *testing.T) {
	ctx := context.Background()
	d := fixture()
	cases := []struct {
		name   string
		view   datasource.View
		params map[string]any
		want   []datasource.Row
		err    string
	}{
		{"by id, projected", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}",
			Fields: map[string]string{"status": "status", "first": "payments.0.pm", "all": "payments.*.pm", "count": "payments.#", "nope": "x.y"}}},
			map[string]any{"id": "#1"}, []datasource.Row{{"status": "pending", "first": "card_1", "all": []any{"card_1", "gift_2"}, "count": 2.0}}, ""},
		{"no such id is no row", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}"}},
			map[string]any{"id": "#9"}, []datasource.Row{}, ""},
		{"where, JSON-typed, id order", datasource.View{Params: []string{"u"}, Document: &datasource.DocumentView{Collection: "orders",
			Where: map[string]any{"user_id": "{u}", "status": "pending"}, Fields: map[string]string{"id": "order_id"}}},
			map[string]any{"u": "u1"}, []datasource.Row{{"id": "#1"}}, ""},
		{"where number vs string", datasource.View{Document: &datasource.DocumentView{Collection: "orders",
			Where: map[string]any{"n": 1.0}, Fields: map[string]string{"id": "order_id"}}},
			map[string]any{}, []datasource.Row{{"id": "#2"}}, ""},
		{"lookup with params and doc fields", datasource.View{Params: []string{"id", "pm"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}",
			Fields:  map[string]string{"status": "status"},
			Lookups: map[string]datasource.Lookup{"source": {Collection: "users", ID: "{doc.user_id}", Path: "methods.{pm}.source"}}}},
			map[string]any{"id": "#1", "pm": "card_1"}, []datasource.Row{{"status": "pending", "source": "credit_card"}}, ""},
		{"for_each lookup skips what it cannot find", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}",
			Fields:  map[string]string{},
			Lookups: map[string]datasource.Lookup{"st": {ForEach: "legs", Collection: "flights", ID: "{item.fn}", Path: "dates.{item.date}.status"}}}},
			map[string]any{"id": "#1"}, []datasource.Row{{"st": []any{"landed"}}}, ""},
		{"for_each lookup by the element itself", datasource.View{Params: []string{"u"}, Document: &datasource.DocumentView{Collection: "users", ID: "{u}",
			Fields:  map[string]string{},
			Lookups: map[string]datasource.Lookup{"st": {ForEach: "orders", Collection: "orders", ID: "{item}", Path: "status"}}}},
			map[string]any{"u": "u1"}, []datasource.Row{{"st": []any{"pending", "delivered"}}}, ""},
		{"for_each element a number, in text", datasource.View{Params: []string{"u"}, Document: &datasource.DocumentView{Collection: "users", ID: "{u}",
			Fields:  map[string]string{},
			Lookups: map[string]datasource.Lookup{"st": {ForEach: "counts", Collection: "orders", ID: "#{item}", Path: "status"}}}},
			map[string]any{"u": "u1"}, []datasource.Row{{"st": []any{"delivered"}}}, ""},
		{"{item} outside for_each is a parameter", datasource.View{Params: []string{"item"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{item}",
			Fields: map[string]string{"status": "status"}}},
			map[string]any{"item": "#2"}, []datasource.Row{{"status": "delivered"}}, ""},
		{"{item} outside for_each and no such parameter", datasource.View{Document: &datasource.DocumentView{Collection: "orders", ID: "{item}"}},
			map[string]any{}, nil, "{item}: unbound parameter"},
		{"unbound parameter", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}"}},
			map[string]any{}, nil, `unbound parameter "id"`},
		{"extra parameter", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}"}},
			map[string]any{"id": "#1", "x": 1}, nil, `"x" is not a parameter`},
		{"unknown collection", datasource.View{Document: &datasource.DocumentView{Collection: "nope"}}, map[string]any{}, nil, `unknown collection "nope"`},
		{"no document definition", datasource.View{SQL: "SELECT 1"}, map[string]any{}, nil, "no document definition"},
		{"non-scalar placeholder", datasource.View{Params: []string{"id"}, Document: &datasource.DocumentView{Collection: "orders", ID: "{id}"}},
			map[string]any{"id": []any{1}}, nil, "not a scalar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.view.Name = "v"
			rows, err := d.Rows(ctx, &c.view, c.params)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, rows)
		})
	}
}

func TestDocumentsTooManyRows(t *testing.T) {
	coll := map[string]any{}
	for i := range datasource.MaxRows + 1 {
		coll[fmt.Sprint(i)] = map[string]any{"k": 1.0}
	}
	d := datasource.NewDocuments(map[string]map[string]any{"c": coll})
	_, err := d.Rows(context.Background(), &datasource.View{Name: "v", Document: &datasource.DocumentView{Collection: "c"}}, map[string]any{})
	assert.ErrorIs(t, err, datasource.ErrTooManyRows)
}
