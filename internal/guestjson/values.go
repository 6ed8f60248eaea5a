package guestjson

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"sync"
)

// The decoders of one value into a field, each with encoding/json's rules
// for the field's kind (decode.go, literalStore, array, object).

// setString decodes a string into *s; null leaves it unchanged.
func setString[S ~string](d *decoder, s *S) error {
	switch d.peek() {
	case '"':
		v, err := d.str()
		*s = S(v)
		return err
	case 'n':
		return d.literal("null")
	}
	return d.typeErr("string")
}

// setInt decodes an integer into *n; null leaves it unchanged. A fraction,
// an exponent or a value outside int64 is refused.
func setInt[N int | int64](d *decoder, n *N) error {
	return setInteger(d, n, "an integer", func(s string) (N, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		return N(v), err
	})
}

// setUint decodes a non-negative integer into *n; null leaves it unchanged.
func setUint(d *decoder, n *uint64) error {
	return setInteger(d, n, "an unsigned integer", func(s string) (uint64, error) {
		return strconv.ParseUint(s, 10, 64)
	})
}

// setInteger decodes an integer literal with parse, as encoding/json does
// for integer fields (strconv on the literal's text); null leaves *n
// unchanged.
func setInteger[N int | int64 | uint64](d *decoder, n *N, want string, parse func(string) (N, error)) error {
	switch c := d.peek(); {
	case c == 'n':
		return d.literal("null")
	case c == '-' || isDigit(c):
		at := d.off
		text, integer, err := d.number()
		if err != nil {
			return err
		}
		v, perr := parse(string(text))
		if !integer || perr != nil {
			return &Error{Offset: at, Reason: "number " + string(text) + " is not " + want + " in range", kind: ErrType}
		}
		*n = v
		return nil
	}
	return d.typeErr(want)
}

// setPtr decodes into a pointer: null sets it to nil; anything else is
// decoded by set into the value it points to, allocated when nil (a
// repeated member decodes into the same value, as encoding/json does).
func setPtr[T any](d *decoder, p **T, set func(*decoder, *T) error) error {
	if isNull, err := d.null(); isNull || err != nil {
		if err == nil {
			*p = nil
		}
		return err
	}
	if *p == nil {
		*p = new(T)
	}
	return set(d, *p)
}

func setBool(d *decoder, b *bool) error {
	switch d.peek() {
	case 't':
		*b = true
		return d.literal("true")
	case 'f':
		*b = false
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return d.typeErr("bool")
}

// setRaw checks one value and keeps a copy of its bytes, null included,
// as json.RawMessage's UnmarshalJSON does (reusing *r's array).
func setRaw[R ~[]byte](d *decoder, r *R) error {
	start := d.off
	if err := d.skip(); err != nil {
		return err
	}
	*r = append((*r)[:0], d.data[start:d.off]...)
	return nil
}

// rawMemo is a value kept raw that was checked whole once, and the depth it
// was checked at: the request's config, which a module instance receives
// byte for byte the same on every run of its stage. Checking 8 KB of it
// again costs a guest about 30 µs in wazero; comparing the bytes about 4.
type rawMemo struct {
	mu    sync.Mutex // for native use; a guest has one thread
	b     []byte
	depth int
}

// minMemo: smaller values are checked faster than they are compared.
const minMemo = 256

// setRawMemo is setRaw for one member that m remembers. When the input here
// starts with the object, array or string m holds, checked at the same
// depth, that value is the one here, and checking it would succeed and end
// right after it: these values end at their closing byte, the decoder
// reads nothing past it, and their check depends on nothing but their
// bytes and the depth. The result is what setRaw gives, error included.
func setRawMemo[R ~[]byte](d *decoder, r *R, m *rawMemo) error {
	start := d.off
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.b) > 0 && m.depth == d.depth && hasPrefix(d.data[start:], m.b) {
		d.off += len(m.b)
	} else {
		if err := d.skip(); err != nil {
			return err
		}
		if v := d.data[start:d.off]; len(v) >= minMemo && (v[0] == '{' || v[0] == '[' || v[0] == '"') {
			m.b, m.depth = append(m.b[:0], v...), d.depth
		}
	}
	*r = append((*r)[:0], d.data[start:d.off]...)
	return nil
}

// hasPrefix is bytes.HasPrefix eight bytes a step: a guest's memequal
// compares one byte a step.
func hasPrefix(s, prefix []byte) bool {
	if len(s) < len(prefix) {
		return false
	}
	s = s[:len(prefix)]
	for len(s) >= 8 {
		if binary.LittleEndian.Uint64(s) != binary.LittleEndian.Uint64(prefix) {
			return false
		}
		s, prefix = s[8:], prefix[8:]
	}
	return string(s) == string(prefix)
}

// setSlice decodes an array into *s as encoding/json does: null sets nil;
// elements are decoded into the slice's existing elements (a repeated
// member merges into them), the slice grows as append grows it, is cut to
// the array's length, and an empty array gives an empty, non-nil slice.
func setSlice[T any](d *decoder, s *[]T, set func(*decoder, *T) error) error {
	if isNull, err := d.null(); isNull || err != nil {
		if err == nil {
			*s = nil
		}
		return err
	}
	if d.peek() != '[' {
		return d.typeErr("array")
	}
	v := *s
	n := 0
	more, err := d.begin(']')
	for ; more && err == nil; n++ {
		if n >= cap(v) {
			var zero T
			v = append(v[:n], zero)
		}
		if n >= len(v) {
			v = v[:n+1]
		}
		if err = set(d, &v[n]); err != nil {
			return in(err, "["+strconv.Itoa(n)+"]")
		}
		more, err = d.next(']')
	}
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		v = []T{}
	case n < len(v):
		v = v[:n]
	}
	*s = v
	return nil
}

// setMap decodes an object into *m: null sets nil; the members are added
// to the map, made when nil (a repeated member adds to the same map).
func setMap(d *decoder, m *map[string]any) error { return setMapOf(d, m, setAny) }

// setMapOf decodes an object into a map of V as encoding/json does: null
// sets nil; the map is made when nil; each member decodes into a fresh zero
// V (not into what the map already holds) that replaces the entry.
func setMapOf[V any](d *decoder, m *map[string]V, set func(*decoder, *V) error) error {
	if isNull, err := d.null(); isNull || err != nil {
		if err == nil {
			*m = nil
		}
		return err
	}
	if d.peek() != '{' {
		return d.typeErr("object")
	}
	if *m == nil {
		*m = map[string]V{}
	}
	return membersOf(d, *m, set)
}

// membersOf decodes the members of the object here into m, each into a
// fresh zero V, as encoding/json does (a repeated name replaces the entry).
func membersOf[V any](d *decoder, m map[string]V, set func(*decoder, *V) error) error {
	more, err := d.begin('}')
	for more && err == nil {
		var name []byte
		if name, err = d.name(); err != nil {
			break
		}
		var v V
		if err = set(d, &v); err != nil {
			return in(err, string(name))
		}
		m[string(name)] = v
		more, err = d.next('}')
	}
	return err
}

// members decodes the members of the object here into m, each value as
// into an empty interface.
func (d *decoder) members(m map[string]any) error {
	return membersOf(d, m, setAny)
}

// setAny decodes into an any; null sets nil.
func setAny(d *decoder, v *any) error {
	x, err := d.any()
	if err == nil {
		*v = x
	}
	return err
}

// any decodes a value as encoding/json decodes into an empty interface:
// map[string]any, []any, string, float64 (json.Number with d.numbers),
// bool or nil.
func (d *decoder) any() (any, error) {
	switch c := d.peek(); {
	case c == '{':
		m := map[string]any{}
		return m, d.members(m)
	case c == '[':
		a := []any{}
		more, err := d.begin(']')
		for more && err == nil {
			var v any
			if v, err = d.any(); err != nil {
				return nil, in(err, "["+strconv.Itoa(len(a))+"]")
			}
			a = append(a, v)
			more, err = d.next(']')
		}
		return a, err
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || isDigit(c):
		at := d.off
		text, _, err := d.number()
		if err != nil {
			return nil, err
		}
		if d.numbers {
			return json.Number(text), nil
		}
		f, perr := strconv.ParseFloat(string(text), 64)
		if perr != nil {
			return nil, &Error{Offset: at, Reason: "number " + string(text) + " is out of float64 range", kind: ErrType}
		}
		return f, nil
	}
	return nil, d.skip() // a syntax error: skip says which
}
