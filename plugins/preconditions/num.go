package preconditions

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/gatehost/gatehost/internal/docpath"
)

// Numbers are compared and computed exactly: a JSON number enters as the
// rational of its shortest decimal text (0.1 is 1/10, not the binary
// double nearest it), arithmetic yields *big.Rat, and only a value that
// leaves the evaluator (a bind, an effect's value, evidence) is rounded to
// the nearest float64. Shortest decimal text preserves the order and the
// equality of float64s, so two plain JSON numbers compare exactly as
// float64s do.

// maxRatBits bounds the numerator and denominator of a computed number
// together. Every float64 fits in about 2,200 bits, so money and counts stay
// far below it; a chain of products or quotients past it is unknown rather
// than an ever slower computation.
const maxRatBits = 8192

// tooBig reports whether r is past maxRatBits.
func tooBig(r *big.Rat) bool { return r.Num().BitLen()+r.Denom().BitLen() > maxRatBits }

// rat returns v as an exact rational when it is a number: float64 through
// its shortest decimal text, int64 and int as they are, json.Number as
// written, *big.Rat itself (never modified).
func rat(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case *big.Rat:
		return x, true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, false
		}
		return new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	case int64:
		return new(big.Rat).SetInt64(x), true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case json.Number:
		return new(big.Rat).SetString(string(x))
	}
	return nil, false
}

// isNumber reports whether v is a number rat accepts.
func isNumber(v any) bool {
	switch x := v.(type) {
	case float64:
		return !math.IsInf(x, 0) && !math.IsNaN(x)
	case *big.Rat, int64, int, json.Number:
		return true
	}
	return false
}

// compareNumbers orders two numbers exactly; ok is false unless both are
// numbers.
func compareNumbers(a, b any) (cmp int, ok bool) {
	if x, okX := a.(float64); okX {
		if y, okY := b.(float64); okY && isNumber(x) && isNumber(y) {
			// Same order as the rationals of their shortest decimals.
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
	}
	ra, okA := rat(a)
	rb, okB := rat(b)
	if !okA || !okB {
		return 0, false
	}
	return ra.Cmp(rb), true
}

// equal is JSON-typed equality (docpath.Equal's) with two numbers
// compared exactly: 1 ≠ "1", and 17 + 4.1 equals 21.1. Numbers nested in
// arrays are compared element by element with the same rule (a let's array
// may hold computed numbers); numbers nested in objects are JSON float64s,
// which docpath.Equal already compares as their shortest decimals compare.
func equal(a, b any) bool {
	if isNumber(a) || isNumber(b) {
		c, ok := compareNumbers(a, b)
		return ok && c == 0
	}
	if x, ok := a.([]any); ok {
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return docpath.Equal(a, b)
}

// export turns an evaluated value into a JSON value: a computed number
// becomes the nearest float64, a time its RFC 3339 text.
// An array (a let's) is exported element by element.
func export(v any) any {
	switch x := v.(type) {
	case *big.Rat:
		f, _ := x.Float64()
		return f
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = export(el)
		}
		return out
	}
	return v
}

// exportValue is export for a value that is sent or applied (a bind, an
// effect's value): a computed number whose nearest float64 is infinite has
// no JSON form, so it is unknown rather than +Inf on the wire.
func exportValue(v any) (any, string) {
	switch x := v.(type) {
	case *big.Rat:
		if f, _ := x.Float64(); math.IsInf(f, 0) {
			return nil, "the result is outside the float64 range"
		}
	case []any:
		for _, el := range x {
			if _, why := exportValue(el); why != "" {
				return nil, why
			}
		}
	}
	return export(v), ""
}

// text is the text of a string or a number (a number in its shortest
// form: int64 in decimal, any other number as its nearest float64 in
// strconv's shortest 'g' form), as an effect's id and set-path
// placeholders use it; a number past the float64 range has no text.
func text(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	if !isNumber(v) {
		return "", false
	}
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	}
	f, _ := rat(v)
	ff, _ := f.Float64()
	if math.IsInf(ff, 0) {
		return "", false
	}
	return strconv.FormatFloat(ff, 'g', -1, 64), true
}
