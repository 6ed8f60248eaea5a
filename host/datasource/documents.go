package datasource

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/internal/docpath"
)

// DocumentView defines a view over a Documents source.
//
// Paths are dotted: "payment_history.0.payment_method_id". A segment "*"
// maps the rest of the path over every element of an array (or value of an
// object, in key order) and yields an array; a final "#" yields an array's
// length. A segment may hold placeholders: "{name}" is the view parameter
// name, "{doc.path}" a path in the current document, "{item.path}" a path in
// the current element of a lookup's ForEach and "{item}" alone that element
// itself (a scalar such as an id in an array of ids). A value that is exactly one
// placeholder keeps its JSON type (so 1 still differs from "1").
type DocumentView struct {
	// Collection is the collection the rows come from.
	Collection string `json:"collection"`
	// ID selects the one document with that id (a placeholder such as
	// "{order_id}"); no such document is zero rows. Without ID every
	// document of the collection that matches Where is a row, in id order.
	ID string `json:"id,omitempty"`
	// Where keeps only documents whose path equals the value
	// (JSON-typed); a string value may be a placeholder.
	Where map[string]any `json:"where,omitempty"`
	// Fields projects each document: output field → path. Without Fields
	// the row is the whole document. A path with no value leaves the field
	// absent.
	Fields map[string]string `json:"fields,omitempty"`
	// Lookups add fields read from other documents: output field →
	// lookup.
	Lookups map[string]Lookup `json:"lookups,omitempty"`
}

// Lookup reads a value from another document of the source, for joins such
// as a reservation's per-segment flight status.
type Lookup struct {
	// ForEach, when set, is a path to an array in the current document:
	// the lookup runs once per element and the field is the array of
	// results (elements whose lookup finds nothing are skipped).
	ForEach string `json:"for_each,omitempty"`
	// Collection and ID (a placeholder) name the document.
	Collection string `json:"collection"`
	ID         string `json:"id"`
	// Path is the value within that document; empty means the whole
	// document.
	Path string `json:"path,omitempty"`
}

// Documents is an immutable, in-memory JSON-document source: collections of
// documents keyed by id, as the tau2 db.json files are. Safe for concurrent
// use. Apply derives a Documents with effects applied that shares every
// document they do not touch.
type Documents struct {
	colls map[string]map[string]any
	// over holds the documents an Apply replaced or added (collection → id
	// → document), read before colls; nil for a source fresh from its data.
	over map[string]map[string]any
	ids  map[string][]string // sorted ids per collection of colls
	// created are the sorted ids, per collection, of over's documents that
	// colls does not have: a scan merges them into ids.
	created map[string][]string
}

// doc returns document id of collection coll, the overlay's first.
func (d *Documents) doc(coll, id string) (any, bool) {
	if v, ok := d.over[coll][id]; ok {
		return v, true
	}
	v, ok := d.colls[coll][id]
	return v, ok
}

// NewDocuments returns a source over collections (name → id → document). It
// takes ownership of the maps; callers must not change them afterwards.
func NewDocuments(collections map[string]map[string]any) *Documents {
	d := &Documents{colls: collections, ids: map[string][]string{}}
	for name, c := range collections {
		d.ids[name] = slices.Sorted(maps.Keys(c))
	}
	return d
}

// Collections lists the collection names, sorted.
func (d *Documents) Collections() []string { return slices.Sorted(maps.Keys(d.colls)) }

// Prepare implements DataSource.
func (d *Documents) Prepare(_ context.Context, v *View) error {
	if v.Document == nil {
		return fmt.Errorf("view %s: %w: no document definition", v.Name, ErrUnsupported)
	}
	dv := v.Document
	if _, ok := d.colls[dv.Collection]; !ok {
		return fmt.Errorf("view %s: unknown collection %q (have %v)", v.Name, dv.Collection, d.Collections())
	}
	for name, l := range dv.Lookups {
		if _, ok := d.colls[l.Collection]; !ok {
			return fmt.Errorf("view %s: lookups.%s: unknown collection %q", v.Name, name, l.Collection)
		}
	}
	return nil
}

// Rows implements DataSource.
func (d *Documents) Rows(ctx context.Context, v *View, params map[string]any) ([]Row, error) {
	if err := CheckParams(v, params); err != nil {
		return nil, err
	}
	if err := d.Prepare(ctx, v); err != nil {
		return nil, err
	}
	dv := v.Document
	env := scope{params: params}
	var docs []any
	if dv.ID != "" {
		id, err := env.text(dv.ID)
		if err != nil {
			return nil, fmt.Errorf("view %s: id: %w", v.Name, err)
		}
		if doc, ok := d.doc(dv.Collection, id); ok {
			docs = append(docs, doc)
		}
	} else {
		coll, over, created := d.colls[dv.Collection], d.over[dv.Collection], d.created[dv.Collection]
		docs = make([]any, 0, len(coll)+len(created))
		for _, id := range d.ids[dv.Collection] {
			for len(created) > 0 && created[0] < id {
				docs, created = append(docs, over[created[0]]), created[1:]
			}
			doc, ok := over[id]
			if !ok {
				doc = coll[id]
			}
			docs = append(docs, doc)
		}
		for _, id := range created {
			docs = append(docs, over[id])
		}
	}
	rows := []Row{}
	for i, doc := range docs {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		env.doc = doc
		ok, err := env.matches(dv.Where)
		if err != nil {
			return nil, fmt.Errorf("view %s: where: %w", v.Name, err)
		}
		if !ok {
			continue
		}
		if len(rows) == MaxRows {
			return nil, fmt.Errorf("view %s: %w (more than %d)", v.Name, ErrTooManyRows, MaxRows)
		}
		row, err := d.project(env, dv)
		if err != nil {
			return nil, fmt.Errorf("view %s: %w", v.Name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func (d *Documents) project(env scope, dv *DocumentView) (Row, error) {
	row := Row{}
	if dv.Fields == nil {
		if m, ok := env.doc.(map[string]any); ok {
			maps.Copy(row, m)
		}
	}
	for name, path := range dv.Fields {
		v, ok, err := env.get(env.doc, path)
		if err != nil {
			return nil, fmt.Errorf("fields.%s: %w", name, err)
		}
		if ok {
			row[name] = v
		}
	}
	for name, l := range dv.Lookups {
		v, ok, err := d.lookup(env, l)
		if err != nil {
			return nil, fmt.Errorf("lookups.%s: %w", name, err)
		}
		if ok {
			row[name] = v
		}
	}
	return row, nil
}

func (d *Documents) lookup(env scope, l Lookup) (any, bool, error) {
	one := func(env scope) (any, bool, error) {
		id, err := env.text(l.ID)
		if err != nil {
			return nil, false, err
		}
		doc, ok := d.doc(l.Collection, id)
		if !ok {
			return nil, false, nil
		}
		if l.Path == "" {
			return doc, true, nil
		}
		return env.get(doc, l.Path)
	}
	if l.ForEach == "" {
		return one(env)
	}
	arr, ok, err := env.get(env.doc, l.ForEach)
	if err != nil || !ok {
		return nil, false, err
	}
	items, isArr := arr.([]any)
	if !isArr {
		return nil, false, fmt.Errorf("for_each %q is not an array", l.ForEach)
	}
	out := []any{}
	env.inItem = true
	for _, it := range items {
		env.item = it
		v, ok, err := one(env)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, true, nil
}

// scope resolves placeholders.
type scope struct {
	params map[string]any
	doc    any
	item   any
	// inItem is true inside a lookup's ForEach, where {item} alone is the
	// element itself.
	inItem bool
}

var errNoValue = errors.New("placeholder has no value")

// value resolves a string that may be one placeholder (typed) or text with
// placeholders (a string).
func (s scope) value(t string) (any, error) {
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") && strings.Count(t, "{") == 1 {
		return s.placeholder(t[1 : len(t)-1])
	}
	return s.text(t)
}

func (s scope) text(t string) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			return b.String(), nil
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed placeholder in %q", t)
		}
		b.WriteString(t[:i])
		v, err := s.placeholder(t[i+1 : i+j])
		if err != nil {
			return "", err
		}
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case float64:
			b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		case bool:
			b.WriteString(strconv.FormatBool(x))
		default:
			return "", fmt.Errorf("placeholder {%s} is %T, not a scalar", t[i+1:i+j], v)
		}
		t = t[i+j+1:]
	}
}

func (s scope) placeholder(name string) (any, error) {
	var root any
	var path string
	switch {
	case strings.HasPrefix(name, "doc."):
		root, path = s.doc, name[4:]
	case strings.HasPrefix(name, "item."):
		root, path = s.item, name[5:]
	case name == "item" && s.inItem:
		if s.item == nil {
			return nil, fmt.Errorf("{item}: %w", errNoValue)
		}
		return s.item, nil
	default:
		v, ok := s.params[name]
		if !ok {
			return nil, fmt.Errorf("{%s}: %w", name, ErrUnbound)
		}
		return v, nil
	}
	v, ok := docpath.Get(root, strings.Split(path, "."))
	if !ok {
		return nil, fmt.Errorf("{%s}: %w", name, errNoValue)
	}
	return v, nil
}

// get resolves a path whose segments may hold placeholders.
func (s scope) get(root any, path string) (any, bool, error) {
	segs := splitPath(path)
	for i, seg := range segs {
		if strings.Contains(seg, "{") {
			t, err := s.text(seg)
			if err != nil {
				return nil, false, err
			}
			segs[i] = t
		}
	}
	v, ok := docpath.Get(root, segs)
	return v, ok, nil
}

func (s scope) matches(where map[string]any) (bool, error) {
	for path, want := range where {
		if str, ok := want.(string); ok && strings.Contains(str, "{") {
			w, err := s.value(str)
			if err != nil {
				return false, err
			}
			want = w
		}
		got, ok, err := s.get(s.doc, path)
		if err != nil {
			return false, err
		}
		if !ok || !docpath.Equal(got, want) {
			return false, nil
		}
	}
	return true, nil
}

// splitPath splits a path on the dots outside placeholders, so that
// "dates.{item.date}.status" has three segments.
func splitPath(path string) []string {
	var segs []string
	depth, start := 0, 0
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '{':
			depth++
		case '}':
			if depth > 0 {
				depth--
			}
		case '.':
			if depth == 0 {
				segs = append(segs, path[start:i])
				start = i + 1
			}
		}
	}
	return append(segs, path[start:])
}

// Close implements DataSource; an in-memory source holds nothing.
func (d *Documents) Close() error { return nil }
