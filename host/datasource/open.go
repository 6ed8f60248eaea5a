package datasource

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/gatehost/gatehost/internal/safefile"
)

// MaxFileBytes caps each file OpenDocuments and OpenCollections read: the
// documents are held in memory, decoded, at several times their size.
// Larger data belongs in a database (sqlsource).
const MaxFileBytes = 128 << 20

// DocumentsOption configures OpenDocuments and OpenCollections.
type DocumentsOption func(*documentsOptions)

type documentsOptions struct {
	keys map[string]string // collection → key field
}

// WithKeys declares the key field of collections (collection name → field
// name). A collection given as a JSON array of documents needs one: each
// element becomes the document whose id is its key field's value. A
// collection given as an object of documents keyed by id may have one too,
// and then every document's key field must equal its id. Every collection
// named must be in the data. Calls accumulate; a later one wins for a
// collection both name.
func WithKeys(keys map[string]string) DocumentsOption {
	return func(o *documentsOptions) {
		if o.keys == nil {
			o.keys = map[string]string{}
		}
		maps.Copy(o.keys, keys)
	}
}

// ErrBadKeys: a collection's documents do not fit its declared key (or an
// array collection has none), or a key names a collection the data does not
// have. The error names the collection, the element index or document id,
// and why.
var ErrBadKeys = errors.New("bad collection keys")

// OpenDocuments reads a JSON file whose top level is an object of
// collections, each an object of documents keyed by id (tau2's db.json) or,
// with a key declared by WithKeys, an array of documents. The file must be
// a regular file of at most MaxFileBytes: a named pipe or a device is
// refused without being read.
func OpenDocuments(path string, opts ...DocumentsOption) (*Documents, error) {
	o := options(opts)
	b, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("datasource: %w", err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("datasource: %s: want an object of collections: %w", path, err)
	}
	if err := o.known(slices.Collect(maps.Keys(top))); err != nil {
		return nil, fmt.Errorf("datasource: %s: %w", path, err)
	}
	colls := make(map[string]map[string]any, len(top))
	for name, v := range top {
		c, err := o.collection(name, v)
		if err != nil {
			return nil, fmt.Errorf("datasource: %s: %w", path, err)
		}
		colls[name] = c
	}
	return NewDocuments(colls), nil
}

// OpenCollections reads one JSON file per collection (collection name →
// file), each an object of documents keyed by id or, with a key declared by
// WithKeys, an array of documents, under the rules of OpenDocuments.
func OpenCollections(files map[string]string, opts ...DocumentsOption) (*Documents, error) {
	o := options(opts)
	if err := o.known(slices.Collect(maps.Keys(files))); err != nil {
		return nil, fmt.Errorf("datasource: %w", err)
	}
	colls := map[string]map[string]any{}
	for name, path := range files {
		b, err := safefile.ReadFile(path, MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("datasource: collection %s: %w", name, err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("datasource: collection %s: %s: want an object keyed by id: %w", name, path, err)
		}
		c, err := o.collection(name, v)
		if err != nil {
			return nil, fmt.Errorf("datasource: %s: %w", path, err)
		}
		colls[name] = c
	}
	return NewDocuments(colls), nil
}

func options(opts []DocumentsOption) documentsOptions {
	var o documentsOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// known checks that every declared key names one of have, the collections
// of the data, and names a field.
func (o documentsOptions) known(have []string) error {
	for _, name := range slices.Sorted(maps.Keys(o.keys)) {
		switch {
		case !slices.Contains(have, name):
			return fmt.Errorf("%w: a key is declared for collection %s, which the data does not have (have %v)", ErrBadKeys, name, slices.Sorted(slices.Values(have)))
		case o.keys[name] == "":
			return fmt.Errorf("%w: collection %s: the declared key field is empty", ErrBadKeys, name)
		}
	}
	return nil
}

// collection turns v, collection name as decoded, into documents by id.
func (o documentsOptions) collection(name string, v any) (map[string]any, error) {
	key, keyed := o.keys[name]
	switch c := v.(type) {
	case nil: // null: an empty collection, as before keys existed
		return map[string]any{}, nil
	case map[string]any:
		if !keyed {
			return c, nil
		}
		for _, id := range slices.Sorted(maps.Keys(c)) {
			k, err := keyOf(c[id], key)
			if err != nil {
				return nil, fmt.Errorf("%w: collection %s: document %q: %w", ErrBadKeys, name, id, err)
			}
			if k != id {
				return nil, fmt.Errorf("%w: collection %s: document %q: key %s is %q, not the document's id", ErrBadKeys, name, id, key, k)
			}
		}
		return c, nil
	case []any:
		if !keyed {
			return nil, fmt.Errorf("%w: collection %s is an array: declare its key field (keys: {%s: FIELD})", ErrBadKeys, name, name)
		}
		out := make(map[string]any, len(c))
		first := make(map[string]int, len(c))
		for i, doc := range c {
			k, err := keyOf(doc, key)
			if err != nil {
				return nil, fmt.Errorf("%w: collection %s: element %d: %w", ErrBadKeys, name, i, err)
			}
			if j, dup := first[k]; dup {
				return nil, fmt.Errorf("%w: collection %s: element %d: key %s %q repeats element %d", ErrBadKeys, name, i, key, k, j)
			}
			first[k] = i
			out[k] = doc
		}
		return out, nil
	}
	return nil, fmt.Errorf("collection %s: want an object of documents keyed by id or an array of documents, not %s", name, jsonKind(v))
}

// keyOf returns the id a document's key field gives: a string as is, an
// integer number in decimal.
func keyOf(doc any, key string) (string, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return "", fmt.Errorf("want an object, not %s", jsonKind(doc))
	}
	switch k := m[key].(type) {
	case string:
		return k, nil
	case float64:
		if k == math.Trunc(k) && math.Abs(k) <= 1<<53 {
			return strconv.FormatInt(int64(k), 10), nil
		}
		return "", fmt.Errorf("key %s is %v, not an integer", key, k)
	case nil:
		if _, present := m[key]; !present {
			return "", fmt.Errorf("no key field %s", key)
		}
	}
	return "", fmt.Errorf("key %s is %s, want a string or an integer", key, jsonKind(m[key]))
}

// jsonKind names the JSON type of a decoded value, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, int64, int, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
