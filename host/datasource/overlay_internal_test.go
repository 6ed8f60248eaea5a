package datasource

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func same(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestApplyCopiesOnlyWhatItTouches: an overlay holds only the documents its
// effects name, shares the source's collections and, inside a touched
// document, every container off the set paths; the source's sorted ids are
// shared even when a collection gains a document.
func TestApplyCopiesOnlyWhatItTouches(t *testing.T) {
	d := NewDocuments(map[string]map[string]any{
		"orders": {
			"#1": map[string]any{"status": "pending", "items": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}},
				"address": map[string]any{"city": "X"}},
			"#2": map[string]any{"status": "delivered"},
		},
		"users": {"u1": map[string]any{"name": "n"}},
	})
	o1 := d.colls["orders"]["#1"].(map[string]any)
	got, err := d.Apply([]abi.Effect{{Collection: "orders", ID: "#1", Set: map[string]any{"status": "cancelled", "items.1.status": "x"}}})
	require.NoError(t, err)

	assert.True(t, same(d.colls, got.colls), "base collections shared")
	assert.True(t, same(d.ids, got.ids), "no document added: ids shared")
	require.Len(t, got.over, 1)
	require.Len(t, got.over["orders"], 1)
	n1 := got.over["orders"]["#1"].(map[string]any)
	assert.False(t, same(o1, n1), "touched document copied")
	assert.True(t, same(o1["address"], n1["address"]), "container off the set paths shared")
	assert.False(t, same(o1["items"], n1["items"]), "array on a set path copied")
	assert.True(t, same(o1["items"].([]any)[0], n1["items"].([]any)[0]), "element off the set paths shared")
	assert.Equal(t, "pending", o1["status"])

	// A second overlay over the first shares the documents the first
	// changed and lists the documents it creates apart from the source's ids.
	got2, err := got.Apply([]abi.Effect{{Collection: "users", ID: "u9", Set: map[string]any{"name": "m"}}})
	require.NoError(t, err)
	assert.True(t, same(n1, got2.over["orders"]["#1"]))
	assert.True(t, same(d.ids, got2.ids), "the source's sorted ids shared")
	assert.Equal(t, map[string][]string{"users": {"u9"}}, got2.created)
	assert.Nil(t, got.created)
	assert.Equal(t, []string{"u1"}, d.ids["users"])
	assert.NotContains(t, got.over, "users")
}
