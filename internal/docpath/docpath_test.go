package docpath_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/internal/docpath"
)

func TestEqual(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"nulls", nil, nil, true},
		{"null vs false", nil, false, false},
		{"null vs empty string", nil, "", false},
		{"bools", true, true, true},
		{"true vs false", true, false, false},
		{"strings", "a", "a", true},
		{"case differs", "a", "A", false},
		{"number vs its string", 1.0, "1", false},
		{"float64s", 1.5, 1.5, true},
		{"int64 vs float64", int64(3), 3.0, true},
		{"int vs int64", 3, int64(3), true},
		{"json.Number vs float64", json.Number("1e0"), 1.0, true},
		{"json.Numbers spelled differently", json.Number("1.0"), json.Number("1"), true},
		{"different numbers", 1.0, 2.0, false},
		{"bad json.Number", json.Number("x"), json.Number("x"), false},
		{"number vs bool", 1.0, true, false},
		{"arrays", []any{1.0, "a"}, []any{int64(1), "a"}, true},
		{"array order matters", []any{1.0, 2.0}, []any{2.0, 1.0}, false},
		{"array lengths", []any{1.0}, []any{1.0, 1.0}, false},
		{"array vs object", []any{}, map[string]any{}, false},
		{"objects", obj("a", 1.0, "b", []any{true}), obj("b", []any{true}, "a", int64(1)), true},
		{"object extra member", obj("a", 1.0), obj("a", 1.0, "b", nil), false},
		{"object member null vs absent", obj("a", nil), obj("b", nil), false},
		{"nested difference", obj("a", obj("b", "x")), obj("a", obj("b", "y")), false},
		{"other Go types equal nothing", struct{}{}, struct{}{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, docpath.Equal(tt.a, tt.b))
			assert.Equal(t, tt.want, docpath.Equal(tt.b, tt.a), "symmetric")
		})
	}
}

// TestEqualDecoded: values decoded from JSON text, with and without
// UseNumber, compare as their JSON does.
func TestEqualDecoded(t *testing.T) {
	decode := func(s string, useNumber bool) any {
		d := json.NewDecoder(strings.NewReader(s))
		if useNumber {
			d.UseNumber()
		}
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{`{"x":[1,2,{"y":null}]}`, `{"x":[1.0,2e0,{"y":null}]}`, true},
		{`{"x":1}`, `{"x":"1"}`, false},
		{`[true]`, `[1]`, false},
	} {
		for _, un := range []bool{false, true} {
			assert.Equal(t, tt.want, docpath.Equal(decode(tt.a, un), decode(tt.b, !un)), "%s vs %s", tt.a, tt.b)
		}
	}
}

// TestGetIndexFromEnd: a negative segment indexes an array from its end;
// past the start, or on an object without such a member, it has no value.
func TestGetIndexFromEnd(t *testing.T) {
	doc := map[string]any{"a": []any{"x", "y", "z"}, "o": map[string]any{"-1": "member"}}
	for _, c := range []struct {
		path string
		want any
		ok   bool
	}{
		{"a.-1", "z", true}, {"a.-3", "x", true}, {"a.-4", nil, false}, {"a.2", "z", true},
		{"o.-1", "member", true}, {"o.-2", nil, false}, {"a.*", []any{"x", "y", "z"}, true},
	} {
		got, ok := docpath.Get(doc, docpath.Split(c.path))
		assert.Equal(t, c.ok, ok, c.path)
		assert.Equal(t, c.want, got, c.path)
	}
}
