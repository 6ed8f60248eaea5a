package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// Overlayer is implemented by sources that can answer a query as if effects
// had been applied: WithOverlay returns a source over the data with effects
// applied in order, and leaves the receiver unchanged. *Documents
// implements it; a source that does not cannot serve a dry check's
// query.rows with an overlay (the host answers unavailable).
type Overlayer interface {
	WithOverlay(ctx context.Context, effects []abi.Effect) (DataSource, error)
}

// MaxEffectPathSegments caps the dotted segments of one abi.Effect set path.
const MaxEffectPathSegments = 32

// Errors of effects, for errors.Is.
var (
	// ErrBadEffect: an effect is malformed whatever the data: an empty
	// collection or id, no set, a set path of more than
	// MaxEffectPathSegments segments. CheckEffects reports these.
	ErrBadEffect = errors.New("malformed effect")
	// ErrEffect: an effect cannot be applied to this data: an unknown
	// collection, an array index past the end, a path through a scalar, a
	// value that is not JSON.
	ErrEffect = errors.New("effect cannot be applied")
)

// CheckEffects reports the first structural fault of effects (an error
// wrapping ErrBadEffect and naming the effect's index), whatever the data
// they would apply to.
func CheckEffects(effects []abi.Effect) error {
	for i, e := range effects {
		if err := checkEffect(e); err != nil {
			return fmt.Errorf("effect %d: %w: %w", i, ErrBadEffect, err)
		}
	}
	return nil
}

func checkEffect(e abi.Effect) error {
	switch {
	case e.Collection == "":
		return errors.New("collection is empty")
	case e.ID == "":
		return errors.New("id is empty")
	case len(e.Set) == 0:
		return errors.New("set is empty")
	}
	for _, p := range setPaths(e.Set) {
		if n := strings.Count(p, ".") + 1; n > MaxEffectPathSegments {
			return fmt.Errorf("set path %.64q…: %d segments (at most %d)", p, n, MaxEffectPathSegments)
		}
	}
	return nil
}

// setPaths returns the paths of set, sorted.
func setPaths(set map[string]any) []string {
	if len(set) == 1 {
		for p := range set {
			return []string{p}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// WithOverlay implements Overlayer with Apply.
func (d *Documents) WithOverlay(ctx context.Context, effects []abi.Effect) (DataSource, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nd, err := d.Apply(effects)
	if err != nil {
		return nil, err
	}
	return nd, nil
}

// Apply returns the documents as they are after effects, applied in order,
// and leaves d unchanged. Within an effect the set paths are applied in
// sorted order. A path is split on dots; on an array a segment of decimal
// digits is an index (below the length it replaces the element, at the
// length it appends, past it is an error); on an object a segment names
// the member, which is created (as an object, when the path goes on) if
// missing; any other value on the path (a string, a number, a boolean,
// null) is an error. A missing document is created as {}. Values must be
// JSON values (nil, bool, string, float64, int64, int, json.Number, []any,
// map[string]any) and are copied, so the caller may change them
// afterwards.
//
// The result shares every document and container the effects do not
// touch: only the touched documents, and the objects and arrays on each
// set path, are copied. Errors wrap ErrBadEffect (see CheckEffects) or
// ErrEffect, naming the effect's index; on error nothing is returned.
func (d *Documents) Apply(effects []abi.Effect) (*Documents, error) {
	if err := CheckEffects(effects); err != nil {
		return nil, err
	}
	if len(effects) == 0 {
		return d, nil
	}
	a := applier{d: d, over: maps.Clone(d.over), cloned: map[string]bool{}, owned: map[docKey]map[string]bool{}}
	if a.over == nil {
		a.over = map[string]map[string]any{}
	}
	for i, e := range effects {
		if err := a.apply(e); err != nil {
			return nil, fmt.Errorf("effect %d (%s %q): %w: %w", i, e.Collection, e.ID, ErrEffect, err)
		}
	}
	// The source's sorted ids are shared; documents created are listed
	// apart, so that gaining one costs its collection's size nothing.
	created := d.created
	if len(a.added) > 0 {
		created = maps.Clone(d.created)
		if created == nil {
			created = map[string][]string{}
		}
		for coll, added := range a.added {
			created[coll] = slices.Sorted(slices.Values(append(slices.Clone(d.created[coll]), added...)))
		}
	}
	return &Documents{colls: d.colls, over: a.over, ids: d.ids, created: created}, nil
}

type docKey struct{ coll, id string }

// applier applies effects to a copy-on-write view of d.
type applier struct {
	d *Documents
	// over is the result's overlay; its inner map for a collection is
	// cloned from d's before the first change (cloned).
	over   map[string]map[string]any
	cloned map[string]bool
	// owned lists, per document, the canonical paths ("" for the root) of
	// the containers this Apply made, which it may change in place: every
	// other container may belong to d (or to an earlier overlay) and is
	// copied before a change.
	owned map[docKey]map[string]bool
	added map[string][]string // ids of documents created, per collection
}

func (a *applier) apply(e abi.Effect) error {
	if _, ok := a.d.colls[e.Collection]; !ok {
		return fmt.Errorf("unknown collection %q (have %v)", e.Collection, a.d.Collections())
	}
	k := docKey{e.Collection, e.ID}
	root, exists := a.current(k)
	owned := a.owned[k]
	if owned == nil {
		owned = map[string]bool{}
		a.owned[k] = owned
	}
	if !exists {
		root = map[string]any{}
		owned[""] = true
		if a.added == nil {
			a.added = map[string][]string{}
		}
		a.added[e.Collection] = append(a.added[e.Collection], e.ID)
	}
	for _, p := range setPaths(e.Set) {
		val, err := copyJSON(e.Set[p], 0)
		if err != nil {
			return fmt.Errorf("set %s: %w", p, err)
		}
		root, err = put(owned, root, "", strings.Split(p, "."), val)
		if err != nil {
			return fmt.Errorf("set %s: %w", p, err)
		}
	}
	if !a.cloned[e.Collection] {
		a.over[e.Collection] = maps.Clone(a.over[e.Collection])
		if a.over[e.Collection] == nil {
			a.over[e.Collection] = map[string]any{}
		}
		a.cloned[e.Collection] = true
	}
	a.over[e.Collection][e.ID] = root
	return nil
}

// current returns the document k as this Apply has left it so far.
func (a *applier) current(k docKey) (any, bool) {
	if v, ok := a.over[k.coll][k.id]; ok {
		return v, true
	}
	v, ok := a.d.colls[k.coll][k.id]
	return v, ok
}

// put returns cur, the container at canonical path at, with the rest of
// the path segs given val: cur itself when owned lists it, else a copy.
func put(owned map[string]bool, cur any, at string, segs []string, val any) (any, error) {
	seg, rest := segs[0], segs[1:]
	switch c := cur.(type) {
	case map[string]any:
		if !owned[at] {
			if c = maps.Clone(c); c == nil {
				c = map[string]any{}
			}
			owned[at] = true
		}
		if len(rest) == 0 {
			c[seg] = val
			return c, nil
		}
		child, ok := c[seg]
		if !ok {
			child = map[string]any{}
			owned[join(at, seg)] = true
		}
		nc, err := put(owned, child, join(at, seg), rest, val)
		if err != nil {
			return nil, err
		}
		c[seg] = nc
		return c, nil
	case []any:
		idx, ok := index(seg)
		if !ok {
			return nil, fmt.Errorf("%s is an array and %q is not an index", where(at), seg)
		}
		if idx > len(c) {
			return nil, fmt.Errorf("index %s is past the end of %s (%d elements)", seg, where(at), len(c))
		}
		if !owned[at] {
			n := make([]any, len(c), len(c)+1)
			copy(n, c)
			c = n
			owned[at] = true
		}
		childAt := join(at, strconv.Itoa(idx))
		var child any = map[string]any{}
		if idx < len(c) {
			child = c[idx]
		} else {
			owned[childAt] = true
		}
		if len(rest) > 0 {
			var err error
			if child, err = put(owned, child, childAt, rest, val); err != nil {
				return nil, err
			}
		} else {
			child = val
		}
		if idx == len(c) {
			return append(c, child), nil
		}
		c[idx] = child
		return c, nil
	}
	return nil, fmt.Errorf("%s is %s: cannot set %s through it", where(at), jsonKind(cur), strings.Join(segs, "."))
}

func join(at, seg string) string {
	if at == "" {
		return seg
	}
	return at + "." + seg
}

func where(at string) string {
	if at == "" {
		return "the document"
	}
	return at
}

// index parses seg as an array index: decimal digits only. An index too
// large for an int is past any array's end, so it maps to MaxInt.
func index(seg string) (int, bool) {
	if seg == "" {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(seg)
	if err != nil {
		return math.MaxInt, true
	}
	return n, true
}

// maxValueDepth caps the nesting of an effect's value, so that copying it
// cannot run the stack out whatever a caller built.
const maxValueDepth = 1000

// copyJSON deep-copies v, a JSON value; anything else is an error.
func copyJSON(v any, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("value nested more than %d deep", maxValueDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, int64, int:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("value %v is not a JSON number", x)
		}
		return x, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("value %q is not a JSON number", string(x))
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := copyJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := copyJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("value of type %T is not a JSON value", v)
}
