package catalog

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/gatehost/gatehost/internal/ijson"
)

// maxDepth bounds the nesting of arrays and objects. Real schemas nest a few
// dozen levels at most; the bound keeps recursion on hostile input shallow.
const maxDepth = 1000

// CanonicalJSON returns the canonical encoding of the JSON text raw. Two texts
// that denote the same JSON value, whatever their key order, whitespace,
// escapes or number spelling, have the same canonical encoding.
//
// The form is that of RFC 8785 (JCS):
//   - no insignificant whitespace;
//   - object members sorted by their keys' UTF-16 code units;
//   - strings escape only '"', '\' and characters below U+0020, as \b \t \n
//     \f \r or \u00xx (lowercase hex); everything else, U+2028, U+2029 and
//     '<' '>' '&' included, is literal UTF-8;
//   - true, false and null as they are.
//
// The input must be strict JSON (RFC 8259) and I-JSON (RFC 7493), as JCS
// requires: valid UTF-8, no escaped lone surrogate, no duplicate key (after
// unescaping). Nesting deeper than 1000 levels, and number exponents beyond
// ±999999999, are refused too. Any violation is an *Error wrapping
// ErrInvalidJSON.
//
// Numbers are where this differs from RFC 8785. JCS writes the IEEE-754
// double nearest to the literal (ECMAScript Number.prototype.toString). We
// keep the literal's exact decimal value instead: the sign of zero, leading
// zeros and trailing zeros are dropped, and the remaining digits are laid out
// with ECMAScript's rules (plain notation for magnitudes in [1e-6, 1e21),
// otherwise d.ddde±n). So 1.0, 1e0 and 10E-1 all become 1, and 1e21 becomes
// 1e+21. The output is byte-identical to JCS for every number whose digits
// are already the shortest form of a double, which includes every number of
// at most 15 significant digits in the normal double range. A literal with
// more digits than a double holds, or outside the double range, keeps its
// exact digits where JCS would round it or fail: two schemas that a
// validator using exact arithmetic treats differently never share a digest.
func CanonicalJSON(raw []byte) ([]byte, error) {
	p := parser{data: raw, record: true}
	if err := p.document(); err != nil {
		return nil, err
	}
	p.pos = p.start
	return p.emit(make([]byte, 0, len(raw))), nil
}

// Digest returns the lowercase hex SHA-256 of CanonicalJSON(schema). Errors
// are those of CanonicalJSON.
func Digest(schema []byte) (string, error) {
	c, err := CanonicalJSON(schema)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// validateJSON checks that raw is strict JSON as CanonicalJSON defines it,
// without producing output. Catalog documents are checked this way before
// encoding/json reads them, because encoding/json silently keeps the last of
// duplicate keys and replaces bad UTF-8 and lone surrogates, where another
// reader of the same file could see something else.
func validateJSON(raw []byte) error {
	p := parser{data: raw}
	return p.document()
}

// parser is a strict JSON parser in two passes. The first validates and,
// when record is set, sorts every object's members and remembers them by
// the offset of the object's '{'. The second (emit) walks the input again
// and writes the canonical form, taking objects' members in sorted order.
// Sorting in place would copy each nested object once per enclosing level;
// two passes keep the work linear in the input size.
type parser struct {
	data   []byte
	pos    int
	start  int // offset of the top-level value
	depth  int
	record bool
	buf    []byte         // scratch for decoded strings
	stack  []member       // members of the objects being parsed
	sorted []member       // every object's members, sorted
	objs   map[int]object // offset of '{' -> its members in sorted
}

type member struct {
	key string
	val int // offset of the value
}

type object struct {
	first, n int // sorted[first : first+n]
	end      int // offset just past '}'
}

func (p *parser) fail(format string, args ...any) error {
	return &Error{Index: -1, Err: wrap(ErrInvalidJSON, "offset %d: %s", p.pos, fmt.Sprintf(format, args...))}
}

func (p *parser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) document() error {
	p.ws()
	p.start = p.pos
	if err := p.value(); err != nil {
		return err
	}
	p.ws()
	if p.pos != len(p.data) {
		return p.fail("data after the top-level value")
	}
	return nil
}

func (p *parser) value() error {
	switch c := p.peek(); {
	case p.pos >= len(p.data):
		return p.fail("unexpected end of input")
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		_, err := p.str(false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
			p.pos += len(lit)
			return nil
		}
	}
	return p.fail("unexpected byte %q", p.data[p.pos])
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("nesting deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) object() error {
	open := p.pos
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	base := len(p.stack)
	p.ws()
	if p.peek() == '}' {
		p.pos++
	} else {
		for done := false; !done; {
			p.ws()
			if p.peek() != '"' {
				return p.fail("expected a string key")
			}
			key, err := p.str(true)
			if err != nil {
				return err
			}
			k := string(key)
			p.ws()
			if p.peek() != ':' {
				return p.fail("expected ':'")
			}
			p.pos++
			p.ws()
			val := p.pos
			if err := p.value(); err != nil {
				return err
			}
			p.stack = append(p.stack, member{key: k, val: val})
			p.ws()
			switch p.peek() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				done = true
			default:
				return p.fail("expected ',' or '}'")
			}
		}
	}
	ms := p.stack[base:]
	slices.SortFunc(ms, func(a, b member) int { return compareUTF16(a.key, b.key) })
	for i := 1; i < len(ms); i++ {
		if ms[i-1].key == ms[i].key {
			at := p.pos
			p.pos = open
			err := p.fail("duplicate key %q in object", cut(ms[i].key))
			p.pos = at
			return err
		}
	}
	if p.record && len(ms) > 0 {
		if p.objs == nil {
			p.objs = make(map[int]object)
		}
		p.objs[open] = object{first: len(p.sorted), n: len(ms), end: p.pos}
		p.sorted = append(p.sorted, ms...)
	}
	clear(ms) // drop the key strings
	p.stack = p.stack[:base]
	p.depth--
	return nil
}

func (p *parser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++
	p.ws()
	if p.peek() == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		p.ws()
		if err := p.value(); err != nil {
			return err
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail("expected ',' or ']'")
		}
	}
}

// str reads the string at p.pos. With decode set it returns the unescaped
// bytes, valid until the next call.
func (p *parser) str(decode bool) ([]byte, error) {
	p.pos++
	buf := p.buf[:0]
	for {
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.buf = buf
			return buf, nil
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return nil, err
			}
			if decode {
				buf = utf8.AppendRune(buf, r)
			}
		case c < 0x20:
			return nil, p.fail("control character in string")
		case c < utf8.RuneSelf:
			if decode {
				buf = append(buf, c)
			}
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, p.fail("invalid UTF-8")
			}
			if decode {
				buf = append(buf, p.data[p.pos:p.pos+n]...)
			}
			p.pos += n
		}
	}
}

func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.data) {
		return 0, p.fail("unterminated escape")
	}
	e := p.data[p.pos+1]
	p.pos += 2
	switch e {
	case '"', '\\', '/':
		return rune(e), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		// The host's one rule for \u escapes and lone surrogates, shared
		// with every other edge where agent input enters.
		r, n, err := ijson.UnescapeU(p.data[p.pos-2:])
		p.pos += n - 2
		if err != nil {
			return 0, p.fail("%v", err)
		}
		return r, nil
	}
	p.pos--
	return 0, p.fail("invalid escape \\%c", e)
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

func (p *parser) number() error {
	if p.peek() == '-' {
		p.pos++
	}
	switch c := p.peek(); {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return p.fail("invalid number")
	}
	if p.peek() == '.' {
		p.pos++
		if p.digits() == 0 {
			return p.fail("invalid number: no digit after '.'")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		for p.peek() == '0' {
			p.pos++
		}
		// A run of zeros alone is a valid exponent; digits() counts the rest.
		zeros := p.data[p.pos-1] == '0'
		n := p.digits()
		if n == 0 && !zeros {
			return p.fail("invalid number: no digit in exponent")
		}
		if n > 9 {
			return p.fail("number exponent out of range")
		}
	}
	return nil
}

// emit appends the canonical form of the (validated) value at p.pos.
func (p *parser) emit(out []byte) []byte {
	switch c := p.data[p.pos]; {
	case c == '{':
		o, ok := p.objs[p.pos]
		if !ok { // empty objects are not recorded
			p.pos++
			p.ws()
			p.pos++
			return append(out, '{', '}')
		}
		out = append(out, '{')
		for i, m := range p.sorted[o.first : o.first+o.n] {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendString(out, m.key)
			out = append(out, ':')
			p.pos = m.val
			out = p.emit(out)
		}
		p.pos = o.end
		return append(out, '}')
	case c == '[':
		p.pos++
		p.ws()
		out = append(out, '[')
		if p.peek() == ']' {
			p.pos++
			return append(out, ']')
		}
		for {
			p.ws()
			out = p.emit(out)
			p.ws()
			if p.data[p.pos] == ']' {
				p.pos++
				return append(out, ']')
			}
			p.pos++ // ','
			out = append(out, ',')
		}
	case c == '"':
		s, _ := p.str(true)
		return appendString(out, s)
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		_ = p.number()
		return appendNumber(out, p.data[start:p.pos])
	}
	n := 4 // true, null
	if c := p.data[p.pos]; c == 'f' {
		n = 5
	}
	out = append(out, p.data[p.pos:p.pos+n]...)
	p.pos += n
	return out
}

// appendString writes s (valid UTF-8) as a JCS string.
func appendString[S ~string | ~[]byte](out []byte, s S) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			if c < 0x20 {
				out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				out = append(out, c)
			}
		}
	}
	return append(out, '"')
}

// appendNumber writes the validated number literal lit in canonical form:
// its exact decimal value laid out as ECMAScript's Number::toString does.
func appendNumber(out, lit []byte) []byte {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	mant, exp := lit, []byte(nil)
	if i := bytes.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	intPart, frac := mant, []byte(nil)
	if i := bytes.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	// value = digits × 10^e
	digits := append(append(make([]byte, 0, len(intPart)+len(frac)), intPart...), frac...)
	e := parseExp(exp) - int64(len(frac))
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return append(out, '0') // also for -0, as JCS does
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		e++
	}
	if neg {
		out = append(out, '-')
	}
	k := int64(len(digits))
	n := e + k // value = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		for range n - k {
			out = append(out, '0')
		}
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		out = append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for range -n {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = fmt.Appendf(out, "%d", n-1)
	}
	return out
}

// parseExp reads a validated exponent ([+-]?digits, at most 9 significant).
func parseExp(b []byte) int64 {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	var v int64
	for _, c := range b {
		v = v*10 + int64(c-'0')
	}
	if neg {
		return -v
	}
	return v
}

// compareUTF16 orders strings (valid UTF-8) by their UTF-16 code units, as
// JCS sorts keys. It differs from byte order only between characters in
// U+E000..U+FFFF and characters above U+FFFF, whose surrogates sort lower.
func compareUTF16(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) || i == len(b) {
		return cmp.Compare(len(a), len(b))
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	if ua, ub := utf16Lead(ra), utf16Lead(rb); ua != ub {
		return cmp.Compare(ua, ub)
	}
	return cmp.Compare(ra, rb)
}

// utf16Lead is the first UTF-16 code unit of r.
func utf16Lead(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xd800 + (r-0x10000)>>10
}
