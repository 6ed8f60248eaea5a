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

// numberFindings reports every number in v that is not numberInRange, in
// document order with object members by name. The validator would spend
// unbounded time on, or panic over, such numbers, so a value holding one is
// not validated further.
func numberFindings(v any) []abi.SchemaFinding {
	var out []abi.SchemaFinding
	badNumbers(v, "", func(path string) {
		out = append(out, abi.SchemaFinding{Pointer: path, Keyword: "json", Message: numberMessage})
	})
	return out
}

// badNumbers calls fn with the JSON Pointer of every number in v that is
// not numberInRange, in a fixed order.
func badNumbers(v any, path string, fn func(path string)) {
	switch v := v.(type) {
	case json.Number:
		if !numberInRange(string(v)) {
			fn(path)
		}
	case []any:
		for i, e := range v {
			badNumbers(e, path+"/"+strconv.Itoa(i), fn)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			badNumbers(v[k], jsonptr.Append(path, k), fn)
		}
	}
}
