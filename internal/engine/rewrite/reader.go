package rewrite

import (
	"fmt"
	"unicode/utf8"
)

// reader decodes the binary format from one byte slice. base is the offset
// of buf[0] in the whole input, so every Error names an input offset.
type reader struct {
	buf  []byte
	pos  int
	base int
}

func (r *reader) off() int     { return r.base + r.pos }
func (r *reader) done() bool   { return r.pos >= len(r.buf) }
func (r *reader) left() int    { return len(r.buf) - r.pos }
func (r *reader) at(p int) int { return r.base + p }

func (r *reader) malformed(format string, args ...any) *Error {
	return &Error{Offset: r.off(), Reason: fmt.Sprintf(format, args...), Err: ErrMalformed}
}

func (r *reader) unsupported(off int, format string, args ...any) *Error {
	return &Error{Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}

func (r *reader) byte(what string) (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, r.malformed("truncated: %s", what)
	}
	b := r.buf[r.pos]
	r.pos++
	return b, nil
}

func (r *reader) bytes(n int, what string) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, r.malformed("truncated: %s needs %d bytes, %d left", what, n, r.left())
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// leb reads a LEB128 of at most bits bits (binary format, "Integers"): at
// most ceil(bits/7) bytes, and the bits of the last byte past the width
// are zero, or for a signed value the sign's extension.
func (r *reader) leb(bits uint, signed bool, what string) (uint64, error) {
	start := r.pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.buf) {
			r.pos = start
			return 0, r.malformed("truncated: %s (LEB128)", what)
		}
		b := r.buf[r.pos]
		r.pos++
		if shift+7 >= bits && !lastByteFits(b, bits-shift, signed) {
			r.pos = start
			return 0, r.malformed("%s: LEB128 longer or wider than %d bits", what, bits)
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			if signed && shift+7 < 64 && b&0x40 != 0 {
				v |= ^uint64(0) << (shift + 7)
			}
			return v, nil
		}
	}
}

// lastByteFits reports whether b can be the last byte the width allows,
// of which used bits carry the value.
func lastByteFits(b byte, used uint, signed bool) bool {
	switch {
	case b&0x80 != 0:
		return false
	case used >= 7:
		return true
	case !signed:
		return b>>used == 0
	}
	rest := int8(b<<1) >> 1 >> (used - 1) // the sign bit and the bits above it
	return rest == 0 || rest == -1
}

func (r *reader) uleb(bits uint, what string) (uint64, error) { return r.leb(bits, false, what) }

func (r *reader) sleb(bits uint, what string) (int64, error) {
	v, err := r.leb(bits, true, what)
	return int64(v), err
}

func (r *reader) u32(what string) (uint32, error) {
	v, err := r.uleb(32, what)
	return uint32(v), err
}

// count reads a vector length; every element takes at least one byte, so a
// count past the bytes left is refused before any loop runs.
func (r *reader) count(what string) (uint32, error) {
	off := r.pos
	n, err := r.u32(what + " count")
	if err != nil {
		return 0, err
	}
	if uint64(n) > uint64(r.left()) {
		r.pos = off
		return 0, r.malformed("%s count %d exceeds the %d bytes left", what, n, r.left())
	}
	return n, nil
}

// name reads a UTF-8 name (binary format, "Names").
func (r *reader) name(what string) (string, error) {
	n, err := r.count(what)
	if err != nil {
		return "", err
	}
	off := r.pos
	b, err := r.bytes(int(n), what)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		r.pos = off
		return "", r.malformed("%s is not valid UTF-8", what)
	}
	return string(b), nil
}
