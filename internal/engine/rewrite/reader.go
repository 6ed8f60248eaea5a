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

// uleb reads an unsigned LEB128 of at most bits bits. The spec bounds its
// encoding to ceil(bits/7) bytes, and the unused bits of the last byte must
// be zero (binary format, "Integers").
func (r *reader) uleb(bits uint, what string) (uint64, error) {
	start := r.pos
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.buf) {
			r.pos = start
			return 0, r.malformed("truncated: %s (LEB128)", what)
		}
		b := r.buf[r.pos]
		r.pos++
		if shift+7 >= bits {
			// Last byte the width allows: no continuation, no bits past the width.
			if b&0x80 != 0 || (bits-shift < 7 && b>>(bits-shift) != 0) {
				r.pos = start
				return 0, r.malformed("%s: LEB128 longer or wider than %d bits", what, bits)
			}
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, nil
		}
	}
}

// sleb reads a signed LEB128 of at most bits bits; the unused bits of the
// last byte must be the sign extension of the value (binary format,
// "Integers").
func (r *reader) sleb(bits uint, what string) (int64, error) {
	start := r.pos
	var v int64
	for shift := uint(0); ; shift += 7 {
		if r.pos >= len(r.buf) {
			r.pos = start
			return 0, r.malformed("truncated: %s (LEB128)", what)
		}
		b := r.buf[r.pos]
		r.pos++
		if shift+7 >= bits {
			if b&0x80 != 0 {
				r.pos = start
				return 0, r.malformed("%s: LEB128 longer than %d bits", what, bits)
			}
			// The bits from the sign bit up must all equal it.
			used := bits - shift // 1..7 bits of this byte carry the value
			rest := int8(b<<1) >> 1 >> (used - 1)
			if rest != 0 && rest != -1 {
				r.pos = start
				return 0, r.malformed("%s: LEB128 wider than %d bits", what, bits)
			}
		}
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			if shift+7 < 64 && b&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, nil
		}
	}
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
