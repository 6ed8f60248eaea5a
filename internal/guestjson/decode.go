// Package guestjson decodes the ABI's request and proposal (abi.Request,
// abi.Proposal), and the host-call answers gates decode on every run
// (Decode, DecodeEnvelope), without reflection, for the guest side of the
// SDK, where
// encoding/json's reflection and byte-at-a-time scanner cost several
// milliseconds per call in WebAssembly. The host decodes subjects and
// answers with DecodeValue too (internal/abischema).
//
// It decodes exactly what encoding/json's Unmarshal decodes into the same
// types, and refuses what it refuses:
//
//   - the input must be one JSON value (RFC 8259) with nothing but
//     whitespace after it, nested at most 10000 deep (encoding/json's
//     limit), with encoding/json's leniency kept: invalid UTF-8 in a string
//     decodes as U+FFFD, as does an unpaired surrogate escape;
//   - a member name matches a field when it equals the field's tag under
//     Unicode simple case folding (bytes.EqualFold), as encoding/json
//     matches; unknown members are skipped;
//   - a repeated member decodes again into the same field, as
//     encoding/json does: the last scalar wins, objects and pointers to
//     structs merge, a slice's elements are decoded into in place, a
//     map[string]any gains the members;
//   - null leaves a string, number, bool or struct field unchanged, sets a
//     pointer, slice, map or any to nil, and is kept as the bytes null in a
//     json.RawMessage;
//   - a value of the wrong kind, a fraction or exponent for an integer, or
//     a number out of range, is refused.
//
// It refuses on the first error: where encoding/json would go on after a
// type error and report it at the end, this package reports it at once,
// with the field's path. The error texts differ from encoding/json's;
// errors.Is tells ErrSyntax from ErrType.
//
// The host refuses duplicate and case-variant member names in subjects
// before a gate sees them (abi/SPEC.md §1); this package does not relax that:
// it decodes them as encoding/json would.
package guestjson

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit (scanner.go, maxNestingDepth):
// 10000 levels of objects and arrays are allowed, one more is refused.
const maxDepth = 10000

var (
	// ErrSyntax: the input is not one well-formed JSON value.
	ErrSyntax = errors.New("not valid JSON")
	// ErrType: a value does not fit the field it is decoded into.
	ErrType = errors.New("value does not fit its field")
)

// Error is a refusal: where in the input (byte offset), which field (a
// path such as "actions[2].depends_on[0]", empty for the value itself), and
// why. It wraps ErrSyntax or ErrType.
type Error struct {
	Field  string
	Offset int
	Reason string
	kind   error
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "guestjson: offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
	}
	return "guestjson: " + e.Field + " (offset " + strconv.Itoa(e.Offset) + "): " + e.Reason
}

func (e *Error) Unwrap() error { return e.kind }

// in prefixes the path of an error from a member or element.
func in(err error, seg string) error {
	if e, ok := err.(*Error); ok {
		switch {
		case e.Field == "":
			e.Field = seg
		case e.Field[0] == '[':
			e.Field = seg + e.Field
		default:
			e.Field = seg + "." + e.Field
		}
	}
	return err
}

type decoder struct {
	data  []byte
	off   int
	depth int
	// numbers: a number decodes into an any as a json.Number, as with
	// encoding/json's Decoder.UseNumber (DecodeValue).
	numbers bool
	// strict: a member that matches no field of a struct is refused, as
	// with encoding/json's Decoder.DisallowUnknownFields (DecodeStrict).
	strict bool
}

func (d *decoder) syntax(reason string) error {
	return &Error{Offset: d.off, Reason: reason, kind: ErrSyntax}
}

// typeErr refuses the value here as not the kind wanted, or, when no value
// starts here, as a syntax error.
func (d *decoder) typeErr(want string) error {
	switch c := d.peek(); {
	case c == '{', c == '[', c == '"', c == 't', c == 'f', c == 'n', c == '-', isDigit(c):
	default:
		return d.skip()
	}
	return &Error{Offset: d.off, Reason: "want " + want + ", have " + d.kindHere(), kind: ErrType}
}

func (d *decoder) kindHere() string {
	switch d.peek() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// ws skips whitespace. Most calls find none and return inlined: in a
// guest, every call of a function costs a deadline check.
func (d *decoder) ws() {
	if d.off >= len(d.data) || d.data[d.off] > ' ' {
		return
	}
	d.wsLoop()
}

func (d *decoder) wsLoop() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end of the input.
func (d *decoder) peek() byte {
	if d.off < len(d.data) {
		return d.data[d.off]
	}
	return 0
}

// top decodes the one value of the input with value, then refuses anything
// but whitespace after it.
func (d *decoder) top(value func() error) error {
	d.ws()
	if err := value(); err != nil {
		return err
	}
	d.ws()
	if d.off != len(d.data) {
		return d.syntax("data after the value")
	}
	return nil
}

// null consumes a null literal and reports whether there was one.
func (d *decoder) null() (bool, error) {
	if d.peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *decoder) literal(lit string) error {
	if len(d.data)-d.off < len(lit) || string(d.data[d.off:d.off+len(lit)]) != lit {
		return d.syntax("invalid literal, want " + lit)
	}
	d.off += len(lit)
	return nil
}

// enter and leave count nesting against maxDepth.
func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.syntax("nested too deeply")
	}
	return nil
}

// begin consumes the '{' or '[' here and reports whether a member or
// element follows (false: the closing byte was consumed too).
func (d *decoder) begin(closing byte) (bool, error) {
	if err := d.enter(); err != nil {
		return false, err
	}
	d.off++
	d.ws()
	if d.peek() == closing {
		d.off++
		d.depth--
		return false, nil
	}
	return true, nil
}

// name consumes a member's name and the ':' after it. The result may alias
// the input.
func (d *decoder) name() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.syntax("want a member name")
	}
	name, err := d.strBytes()
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.peek() != ':' {
		return nil, d.syntax("want ':' after a member name")
	}
	d.off++
	d.ws()
	return name, nil
}

// next consumes what follows a member or element: ',' (true: another
// follows) or the closing byte (false).
func (d *decoder) next(closing byte) (bool, error) {
	d.ws()
	switch d.peek() {
	case ',':
		d.off++
		d.ws()
		return true, nil
	case closing:
		d.off++
		d.depth--
		return false, nil
	}
	return false, d.syntax("want ',' or '" + string(closing) + "'")
}

// skip checks and consumes one value of any kind.
func (d *decoder) skip() error {
	switch c := d.peek(); {
	case c == '{', c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		more, err := d.begin(closing)
		for more && err == nil {
			if c == '{' {
				if _, err = d.name(); err != nil {
					break
				}
			}
			if err = d.skip(); err == nil {
				more, err = d.next(closing)
			}
		}
		return err
	case c == '"':
		return d.skipStr()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, _, err := d.number()
		return err
	case c == 0 && d.off >= len(d.data):
		return d.syntax("unexpected end of input")
	default:
		return d.syntax("invalid character " + strconv.QuoteRune(rune(c)) + " at the start of a value")
	}
}

// number consumes a number (RFC 8259 §6) and returns its text and whether
// it is an integer (no fraction, no exponent).
func (d *decoder) number() (text []byte, integer bool, err error) {
	start := d.off
	integer = true
	if d.peek() == '-' {
		d.off++
	}
	switch c := d.peek(); {
	case c == '0':
		d.off++
	case '1' <= c && c <= '9':
		d.digits()
	default:
		return nil, false, d.syntax("want a digit in a number")
	}
	if d.peek() == '.' {
		d.off++
		integer = false
		if !isDigit(d.peek()) {
			return nil, false, d.syntax("want a digit after the decimal point")
		}
		d.digits()
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.off++
		integer = false
		if c := d.peek(); c == '+' || c == '-' {
			d.off++
		}
		if !isDigit(d.peek()) {
			return nil, false, d.syntax("want a digit in the exponent")
		}
		d.digits()
	}
	return d.data[start:d.off], integer, nil
}

func (d *decoder) digits() {
	for isDigit(d.peek()) {
		d.off++
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// str consumes a string and returns its value.
func (d *decoder) str() (string, error) {
	b, err := d.strBytes()
	return string(b), err
}

// strBytes consumes a string and returns its value, decoded as
// encoding/json decodes it (decode.go, unquoteBytes): escapes resolved, an
// invalid UTF-8 byte or an unpaired surrogate escape as U+FFFD. The result
// may alias the input.
func (d *decoder) strBytes() ([]byte, error) {
	d.off++ // '"'
	start := d.off
	d.plain()
	if d.off < len(d.data) && d.data[d.off] == '"' {
		d.off++
		return d.data[start : d.off-1], nil
	}
	out := append([]byte(nil), d.data[start:d.off]...)
	for {
		if at := d.off; d.plain() > 0 {
			out = append(out, d.data[at:d.off]...)
		}
		if d.off >= len(d.data) {
			return nil, d.syntax("unterminated string")
		}
		c := d.data[d.off]
		switch {
		case c == '"':
			d.off++
			return out, nil
		case c < ' ':
			return nil, d.syntax("control character in a string")
		case c == '\\':
			if d.off+1 >= len(d.data) {
				return nil, d.syntax("unterminated string")
			}
			switch e := d.data[d.off+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := getu4(d.data[d.off:])
				if rr < 0 {
					return nil, d.syntax("invalid \\u escape")
				}
				d.off += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(d.data[d.off:])); dec != unicode.ReplacementChar {
						d.off += 6
						out = utf8.AppendRune(out, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, rr)
				continue
			default:
				return nil, d.syntax("invalid escape in a string")
			}
			d.off += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.off++
		default:
			r, size := utf8.DecodeRune(d.data[d.off:])
			out = utf8.AppendRune(out, r)
			d.off += size
		}
	}
}

// plain consumes plain ASCII (no '"', '\\' or control character) up to the
// next byte that needs a look, or the end, eight bytes a step while none
// needs one; it returns how many bytes it consumed. In a guest each loop
// iteration costs a deadline check, which dwarfs the work of one.
func (d *decoder) plain() int {
	start := d.off
	for {
		var w uint64
		if d.off+8 <= len(d.data) {
			w = binary.LittleEndian.Uint64(d.data[d.off:])
		} else {
			// Pad the last bytes with quotes: the first special byte
			// found past the end means the string is unterminated.
			var tail [8]byte
			for i := copy(tail[:], d.data[d.off:]); i < 8; i++ {
				tail[i] = '"'
			}
			w = binary.LittleEndian.Uint64(tail[:])
		}
		if m := special(w); m != 0 {
			d.off = min(d.off+bits.TrailingZeros64(m)/8, len(d.data))
			return d.off - start
		}
		d.off += 8
	}
}

// skipStr consumes a string as strBytes does, refusing what it refuses,
// without building its value: how a value kept raw (json.RawMessage, such
// as a request's config) or skipped is checked.
func (d *decoder) skipStr() error {
	d.off++ // '"'
	for {
		d.plain()
		if d.off >= len(d.data) {
			return d.syntax("unterminated string")
		}
		switch c := d.data[d.off]; {
		case c == '"':
			d.off++
			return nil
		case c < ' ':
			return d.syntax("control character in a string")
		case c == '\\':
			if d.off+1 >= len(d.data) {
				return d.syntax("unterminated string")
			}
			switch d.data[d.off+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.off += 2
			case 'u':
				if getu4(d.data[d.off:]) < 0 {
					return d.syntax("invalid \\u escape")
				}
				d.off += 6
			default:
				return d.syntax("invalid escape in a string")
			}
		default: // not ASCII: any byte is kept (invalid UTF-8 as U+FFFD)
			d.off++
		}
	}
}

// special returns, for the 8 bytes of w (little-endian), a mask with the
// high bit set in the first byte that is '"', '\\', a control character or
// not ASCII, and possibly in later bytes; 0 when there is none. The tests
// for a byte below a bound and for a zero byte (Sean Anderson, "Bit
// Twiddling Hacks": hasless, haszero) are exact up to the first match: a
// borrow only ever flags a byte above it.
func special(w uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	less := (w - 0x20*ones) &^ w
	quote := w ^ ('"' * ones)
	backslash := w ^ ('\\' * ones)
	return (w | less | ((quote - ones) &^ quote) | ((backslash - ones) &^ backslash)) & high
}

// getu4 decodes \uXXXX at the start of s, or returns -1 (encoding/json's
// getu4).
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
