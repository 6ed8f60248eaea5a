package datasource_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/datasource"
)

func writeJSON(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// TestKeyedCollections: a collection given as an array of documents needs
// a declared key field, whose values (strings, or integers in decimal)
// become the ids; a collection given as an object may declare one too,
// which every document must then carry as its id. Each refusal names the
// collection, the element (or document) and why.
func TestKeyedCollections(t *testing.T) {
	cases := []struct {
		name  string
		db    string
		keys  map[string]string
		ids   map[string][]string // collection → ids, when it opens
		err   string
		isKey bool // the error wraps ErrBadKeys
	}{
		{name: "array keyed by a string field", db: `{"plans":[{"plan_id":"p2","fee":1},{"plan_id":"p1"}],"users":{"u1":{}}}`,
			keys: map[string]string{"plans": "plan_id"}, ids: map[string][]string{"plans": {"p1", "p2"}, "users": {"u1"}}},
		{name: "array keyed by an integer field", db: `{"lines":[{"n":7},{"n":-12},{"n":1e3}]}`,
			keys: map[string]string{"lines": "n"}, ids: map[string][]string{"lines": {"-12", "1000", "7"}}},
		{name: "object whose documents carry their id", db: `{"plans":{"p1":{"plan_id":"p1"},"p2":{"plan_id":"p2"}}}`,
			keys: map[string]string{"plans": "plan_id"}, ids: map[string][]string{"plans": {"p1", "p2"}}},
		{name: "empty array", db: `{"plans":[]}`, keys: map[string]string{"plans": "plan_id"}, ids: map[string][]string{"plans": nil}},
		{name: "null collection is empty", db: `{"plans":null}`, ids: map[string][]string{"plans": nil}},

		{name: "array without a key", db: `{"plans":[{"plan_id":"p1"}]}`,
			err: "collection plans is an array: declare its key field (keys: {plans: FIELD})", isKey: true},
		{name: "element not an object", db: `{"plans":[{"plan_id":"p1"},"p2"]}`, keys: map[string]string{"plans": "plan_id"},
			err: "collection plans: element 1: want an object, not a string", isKey: true},
		{name: "element without the key", db: `{"plans":[{"plan_id":"p1"},{"id":"p2"}]}`, keys: map[string]string{"plans": "plan_id"},
			err: "collection plans: element 1: no key field plan_id", isKey: true},
		{name: "key null", db: `{"plans":[{"plan_id":null}]}`, keys: map[string]string{"plans": "plan_id"},
			err: "collection plans: element 0: key plan_id is null, want a string or an integer", isKey: true},
		{name: "key a boolean", db: `{"plans":[{"plan_id":true}]}`, keys: map[string]string{"plans": "plan_id"},
			err: "element 0: key plan_id is a boolean, want a string or an integer", isKey: true},
		{name: "key a fraction", db: `{"plans":[{"plan_id":1.5}]}`, keys: map[string]string{"plans": "plan_id"},
			err: "element 0: key plan_id is 1.5, not an integer", isKey: true},
		{name: "key beyond exact integers", db: `{"plans":[{"plan_id":1e300}]}`, keys: map[string]string{"plans": "plan_id"},
			err: "not an integer", isKey: true},
		{name: "repeated key", db: `{"plans":[{"plan_id":"p1"},{"plan_id":"p2"},{"plan_id":"p1"}]}`, keys: map[string]string{"plans": "plan_id"},
			err: `collection plans: element 2: key plan_id "p1" repeats element 0`, isKey: true},
		{name: "integer and string keys collide", db: `{"plans":[{"plan_id":1},{"plan_id":"1"}]}`, keys: map[string]string{"plans": "plan_id"},
			err: `element 1: key plan_id "1" repeats element 0`, isKey: true},
		{name: "object document whose key is not its id", db: `{"plans":{"p1":{"plan_id":"p1"},"p2":{"plan_id":"p3"}}}`, keys: map[string]string{"plans": "plan_id"},
			err: `collection plans: document "p2": key plan_id is "p3", not the document's id`, isKey: true},
		{name: "object document without the key", db: `{"plans":{"p1":{}}}`, keys: map[string]string{"plans": "plan_id"},
			err: `collection plans: document "p1": no key field plan_id`, isKey: true},
		{name: "key for a collection the data lacks", db: `{"plans":{}}`, keys: map[string]string{"lines": "line_id"},
			err: "a key is declared for collection lines, which the data does not have (have [plans])", isKey: true},
		{name: "empty key field", db: `{"plans":[]}`, keys: map[string]string{"plans": ""},
			err: "collection plans: the declared key field is empty", isKey: true},
		{name: "collection a scalar", db: `{"plans":3}`, err: "collection plans: want an object of documents keyed by id or an array of documents, not a number"},
		{name: "not an object of collections", db: `[1]`, err: "want an object of collections"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeJSON(t, "db.json", c.db)
			var opts []datasource.DocumentsOption
			if c.keys != nil {
				opts = append(opts, datasource.WithKeys(c.keys))
			}
			d, err := datasource.OpenDocuments(path, opts...)
			if c.err != "" {
				require.Error(t, err)
				assert.Nil(t, d)
				assert.Contains(t, err.Error(), c.err)
				assert.Contains(t, err.Error(), path)
				assert.Equal(t, c.isKey, errors.Is(err, datasource.ErrBadKeys))
				return
			}
			require.NoError(t, err)
			checkIDs(t, d, c.ids)
		})
	}
}

// checkIDs requires d to have exactly the collections of want, each with
// exactly the documents of the ids listed.
func checkIDs(t *testing.T, d *datasource.Documents, want map[string][]string) {
	t.Helper()
	assert.Equal(t, slices.Sorted(maps.Keys(want)), d.Collections())
	for c, ids := range want {
		rows, err := d.Rows(context.Background(), &datasource.View{Name: "all", Document: &datasource.DocumentView{Collection: c}}, map[string]any{})
		require.NoError(t, err)
		assert.Len(t, rows, len(ids), c)
		for _, id := range ids {
			assert.NotNil(t, doc(t, d, c, id), "%s %s", c, id)
		}
	}
}

// TestOpenCollectionsKeyed: OpenCollections takes the same keys, one file
// per collection; an element's document is the element itself.
func TestOpenCollectionsKeyed(t *testing.T) {
	plans := writeJSON(t, "plans.json", `[{"plan_id":"p1","fee":5},{"plan_id":"p2"}]`)
	users := writeJSON(t, "users.json", `{"u1":{"plan":"p1"}}`)
	d, err := datasource.OpenCollections(map[string]string{"plans": plans, "users": users}, datasource.WithKeys(map[string]string{"plans": "plan_id"}))
	require.NoError(t, err)
	checkIDs(t, d, map[string][]string{"plans": {"p1", "p2"}, "users": {"u1"}})
	assert.Equal(t, datasource.Row{"plan_id": "p1", "fee": 5.0}, doc(t, d, "plans", "p1"))

	_, err = datasource.OpenCollections(map[string]string{"plans": plans})
	require.ErrorIs(t, err, datasource.ErrBadKeys)
	assert.Contains(t, err.Error(), plans+": bad collection keys: collection plans is an array")

	_, err = datasource.OpenCollections(map[string]string{"users": users}, datasource.WithKeys(map[string]string{"plans": "plan_id"}))
	require.ErrorIs(t, err, datasource.ErrBadKeys)
	assert.Contains(t, err.Error(), "collection plans, which the data does not have (have [users])")

	// Keys accumulate over options; a later one wins.
	d, err = datasource.OpenCollections(map[string]string{"plans": plans},
		datasource.WithKeys(map[string]string{"plans": "nope"}), datasource.WithKeys(map[string]string{"plans": "plan_id"}))
	require.NoError(t, err)
	checkIDs(t, d, map[string][]string{"plans": {"p1", "p2"}})
}
