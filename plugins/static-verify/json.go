package staticverify

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/gatehost/gatehost/internal/guestjson"
)

// strictUnmarshal decodes one JSON value into out, refusing unknown fields
// and trailing data.
func strictUnmarshal(raw []byte, out any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the value")
	}
	return nil
}

// decodeParams decodes an action's parameters with numbers as json.Number,
// so that the loop check compares them as written. Absent parameters mean
// {}. It decodes as a json.Decoder with UseNumber would, without reflection
// (guestjson.DecodeValue, fuzzed against encoding/json): in a module,
// encoding/json's decoding was a fifth of the gate's time.
func decodeParams(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	return guestjson.DecodeValue(raw)
}

// canonical appends an encoding of v in which object keys are sorted, so two
// parameter objects that differ only in key order or spacing encode the same.
// It only needs to be injective, not to be standard JSON: a string (or key)
// is written as '"', its length in bytes, ':' and its bytes as they are,
// which no other value's encoding starts like, and which is several times
// cheaper in a module than quoting it (strconv.Quote decodes every rune).
func canonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, v)
	case json.Number:
		b = append(b, canonicalNumber(string(v))...)
	case float64:
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	case string:
		b = canonicalString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = canonical(b, e)
		}
		b = append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = canonicalString(b, k)
			b = append(b, ':')
			b = canonical(b, v[k])
		}
		b = append(b, '}')
	default:
		b = append(b, '?')
	}
	return b
}

func canonicalString(b []byte, s string) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// canonicalNumber spells 1, 1.0 and 1e0 alike. A literal with at most 15
// digits round-trips through float64 exactly, so those are normalised; longer
// ones are kept as written (two spellings of one long number then count as
// different, which only weakens the advisory loop check). No arbitrary
// precision arithmetic: an exponent like 1e999999999 must stay cheap.
func canonicalNumber(lit string) string {
	digits, nonzero := 0, false
	for i := 0; i < len(lit) && lit[i] != 'e' && lit[i] != 'E'; i++ {
		if lit[i] >= '0' && lit[i] <= '9' {
			digits++
			nonzero = nonzero || lit[i] != '0'
		}
	}
	if digits <= 15 {
		// f == 0 from a nonzero literal is an underflow: keep the literal.
		if f, err := strconv.ParseFloat(lit, 64); err == nil && !math.IsInf(f, 0) && (f != 0 || !nonzero) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return lit
}
