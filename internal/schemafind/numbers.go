package schemafind

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// MaxNumberLen bounds a number literal. The validator converts numbers to
// exact rationals, whose cost grows with the literal's digits and exponent;
// no tool needs a 100-digit number.
const MaxNumberLen = 100

// numberMessage is the message of a finding about a number no tool can
// receive; its keyword is "json".
var numberMessage = fmt.Sprintf("number outside the range a tool can receive (IEEE 754 double, at most %d characters)", MaxNumberLen)

// numberInRange reports whether a number literal is one the validator can
// check cheaply and a tool can receive: at most MaxNumberLen bytes, and
// within IEEE 754 double range without underflowing to zero, as I-JSON
// (RFC 7493 §2.2) asks of interoperable numbers.
func numberInRange(lit string) bool {
	if len(lit) > MaxNumberLen {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	if f == 0 {
		for i := 0; i < len(lit) && lit[i] != 'e' && lit[i] != 'E'; i++ {
			if lit[i] >= '1' && lit[i] <= '9' {
				return false
			}
		}
	}
	return true
}

// numberFindings reports the numbers in v that are not numberInRange, in
// document order with object members by name: at most
// abi.MaxSchemaFindings of them, and no more once their pointers together
// pass abi.MaxSchemaPointerBytes; truncated says some were left out. The
// validator would spend unbounded time on, or panic over, such numbers, so
// a value holding one is not validated further. A pointer is built only
// for a finding, so the walk costs time and memory linear in the value.
func numberFindings(v any) (out []abi.SchemaFinding, truncated bool) {
	w := numberWalk{}
	w.walk(v)
	return w.out, w.truncated
}

type numberWalk struct {
	path      []string // the reference tokens to the value being walked
	out       []abi.SchemaFinding
	bytes     int // of the pointers in out
	truncated bool
}

func (w *numberWalk) walk(v any) {
	switch v := v.(type) {
	case json.Number:
		if numberInRange(string(v)) {
			return
		}
		if len(w.out) == abi.MaxSchemaFindings || (len(w.out) > 0 && w.bytes > abi.MaxSchemaPointerBytes) {
			w.truncated = true
			return
		}
		p := jsonptr.Join(w.path...)
		w.bytes += len(p)
		w.out = append(w.out, abi.SchemaFinding{Pointer: p, Keyword: "json", Message: numberMessage})
	case []any:
		for i, e := range v {
			w.path = append(w.path, strconv.Itoa(i))
			w.walk(e)
			w.path = w.path[:len(w.path)-1]
			if w.truncated {
				return
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			w.path = append(w.path, k)
			w.walk(v[k])
			w.path = w.path[:len(w.path)-1]
			if w.truncated {
				return
			}
		}
	}
}
