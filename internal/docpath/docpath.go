// Package docpath resolves dotted paths in decoded JSON and compares JSON
// values by type, with one meaning for the host's document source and for
// gates that test rows.
package docpath

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Split splits a dotted path into segments.
func Split(path string) []string { return strings.Split(path, ".") }

// Get follows segs into v: object members by name, array elements by
// decimal index (a negative one, -N, counts from the end: -1 is the last
// element), "*" to map the rest over every element (or object value,
// in key order) and "#" for an array's length. ok is false when the path has
// no value.
func Get(v any, segs []string) (any, bool) {
	for i, seg := range segs {
		switch seg {
		case "*":
			var elems []any
			switch x := v.(type) {
			case []any:
				elems = x
			case map[string]any:
				for _, k := range slices.Sorted(maps.Keys(x)) {
					elems = append(elems, x[k])
				}
			default:
				return nil, false
			}
			out := make([]any, 0, len(elems))
			for _, e := range elems {
				r, ok := Get(e, segs[i+1:])
				if !ok {
					return nil, false
				}
				out = append(out, r)
			}
			return out, true
		case "#":
			a, ok := v.([]any)
			if !ok || i != len(segs)-1 {
				return nil, false
			}
			return float64(len(a)), true
		}
		switch x := v.(type) {
		case map[string]any:
			n, ok := x[seg]
			if !ok {
				return nil, false
			}
			v = n
		case []any:
			idx, err := strconv.Atoi(seg)
			if err == nil && idx < 0 {
				idx += len(x)
			}
			if err != nil || idx < 0 || idx >= len(x) {
				return nil, false
			}
			v = x[idx]
		default:
			return nil, false
		}
	}
	if v == nil {
		return nil, false
	}
	return v, true
}

// Equal is JSON-typed equality of decoded values, the one the built-in
// gates share (preconditions' eq/in, static-verify's state checks): numbers
// equal numbers of the same value (float64, int64, int and json.Number
// alike), strings strings, arrays element-wise, objects member-wise
// whatever the order; 1 ≠ "1", and a value of any other Go type equals
// nothing.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64, int64, int, json.Number:
		fx, ok1 := toFloat(a)
		fy, ok2 := toFloat(b)
		return ok1 && ok2 && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
