// Package ijson holds the host's one implementation of the string rules of
// I-JSON (RFC 7493 §2.1): a JSON text is UTF-8 (RFC 8259 §8.1) and its
// strings, member names included, contain no escaped lone surrogate
// ("\ud800" alone, "\udc00", a high surrogate followed by anything but a
// low-surrogate escape).
//
// Readers differ exactly there: Go's encoding/json turns a lone surrogate
// or an invalid byte into U+FFFD, Python keeps the lone surrogate, and
// JavaScript keeps the UTF-16 code unit. A gate and the tool that runs a
// call could then read two different values from one input, so every edge
// where agent input enters refuses such text (catalogs, subjects, the
// JSON inside an OpenAI arguments string).
package ijson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gatehost/gatehost/internal/jsonptr"
)

var (
	// ErrNotIJSON is wrapped by every error of Check.
	ErrNotIJSON = errors.New("not I-JSON")
	// ErrLoneSurrogate: a \u escape of a surrogate that is not half of a
	// high-low pair of escapes.
	ErrLoneSurrogate = errors.New("lone surrogate in \\u escape")
	// ErrBadEscape: "\u" not followed by four hex digits.
	ErrBadEscape = errors.New("bad \\u escape")
	// ErrInvalidUTF8: bytes that are not UTF-8 (RFC 3629), encoded
	// surrogates (ED A0 80..ED BF BF) included.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrSyntax: the text is not JSON (RFC 8259) at all.
	ErrSyntax = errors.New("invalid JSON")
)

// Error says where a text breaks the rules and why.
type Error struct {
	// Pointer is a JSON Pointer (RFC 6901) to the value holding the bad
	// string or, when Name is set, to the object with the bad member
	// name; "" is the whole text.
	Pointer string
	// Name: the bad string is a member name of the object at Pointer.
	Name bool
	// Offset is the byte offset of the offending character in the text.
	Offset int
	// Err is ErrLoneSurrogate, ErrBadEscape, ErrInvalidUTF8 or ErrSyntax.
	Err error
	// Detail is the offending escape, or what the syntax error is.
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("not I-JSON: ")
	switch {
	case e.Name:
		b.WriteString("a member name of the object at " + cmpOr(e.Pointer, "the top level") + ": ")
	case e.Pointer != "":
		b.WriteString("at " + e.Pointer + ": ")
	}
	b.WriteString(e.Err.Error())
	if e.Detail != "" {
		b.WriteString(" " + e.Detail)
	}
	b.WriteString(" at offset " + strconv.Itoa(e.Offset))
	return b.String()
}

// Unwrap gives ErrNotIJSON and the specific cause.
func (e *Error) Unwrap() []error { return []error{ErrNotIJSON, e.Err} }

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// UnescapeU decodes the escape "\uXXXX" at the start of b, joined with the
// low-surrogate escape that must follow a high one. It returns the code
// point and how many bytes it read: 12 for a surrogate pair, 6 otherwise.
// On error n is how far the escape was read: 2 (just "\u") for
// ErrBadEscape, 6 for ErrLoneSurrogate. This is the one place the host
// decides what a lone surrogate is.
func UnescapeU(b []byte) (r rune, n int, err error) {
	r, ok := hex4(b, 2)
	if len(b) < 2 || b[0] != '\\' || b[1] != 'u' || !ok {
		return 0, 2, ErrBadEscape
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if r < 0xdc00 && len(b) >= 8 && b[6] == '\\' && b[7] == 'u' {
		if r2, ok := hex4(b, 8); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return utf16.DecodeRune(r, r2), 12, nil
		}
	}
	return 0, 6, ErrLoneSurrogate
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// Check returns nil if doc is one JSON value (RFC 8259; white space around
// it allowed) whose strings and member names keep to I-JSON's rules, and
// an *Error otherwise. It allocates nothing on success beyond a stack of
// one small frame per level of nesting, and never recurses, so any depth
// is safe; it runs in time linear in len(doc).
func Check(doc []byte) error {
	s := scanner{data: doc}
	return s.run()
}

type scanner struct {
	data  []byte
	pos   int
	stack []frame
}

// frame is an open array or object.
type frame struct {
	obj bool
	n   int    // index of the current element or member
	key []byte // the current member's name, raw (escaped, no quotes)
}

func (s *scanner) run() error {
	need := true // a value is expected next
	for {
		if need {
			s.ws()
			switch c := s.peek(); {
			case c == '{' || c == '[':
				s.pos++
				s.ws()
				if (c == '{' && s.peek() == '}') || (c == '[' && s.peek() == ']') {
					s.pos++
					break
				}
				s.stack = append(s.stack, frame{obj: c == '{'})
				if c == '{' {
					if err := s.member(); err != nil {
						return err
					}
				}
				continue
			case c == '"':
				if err := s.str(false); err != nil {
					return err
				}
			case c == 't':
				if err := s.literal("true"); err != nil {
					return err
				}
			case c == 'f':
				if err := s.literal("false"); err != nil {
					return err
				}
			case c == 'n':
				if err := s.literal("null"); err != nil {
					return err
				}
			case c == '-' || (c >= '0' && c <= '9'):
				if err := s.number(); err != nil {
					return err
				}
			default:
				return s.syntax("expected a value")
			}
			need = false
		}
		if len(s.stack) == 0 {
			break
		}
		s.ws()
		top := &s.stack[len(s.stack)-1]
		switch c := s.peek(); {
		case c == ',':
			s.pos++
			top.n++
			if top.obj {
				if err := s.member(); err != nil {
					return err
				}
			}
			need = true
		case (c == '}' && top.obj) || (c == ']' && !top.obj):
			s.pos++
			s.stack = s.stack[:len(s.stack)-1]
		default:
			return s.syntax("expected ',' or the end of the array or object")
		}
	}
	s.ws()
	if s.pos != len(s.data) {
		return s.syntax("data after the top-level value")
	}
	return nil
}

// member reads a member name and its colon, and makes it the current key
// of the object on top of the stack.
func (s *scanner) member() error {
	s.ws()
	if s.peek() != '"' {
		return s.syntax("expected a member name")
	}
	start := s.pos + 1
	if err := s.str(true); err != nil {
		return err
	}
	s.stack[len(s.stack)-1].key = s.data[start : s.pos-1]
	s.ws()
	if s.peek() != ':' {
		return s.syntax("expected ':' after a member name")
	}
	s.pos++
	return nil
}

// str reads a string, s.pos at its opening quote.
func (s *scanner) str(name bool) error {
	s.pos++
	for {
		if s.pos >= len(s.data) {
			return s.syntax("unterminated string")
		}
		switch c := s.data[s.pos]; {
		case c == '"':
			s.pos++
			return nil
		case c == '\\':
			if s.pos+1 >= len(s.data) {
				return s.syntax("unterminated escape")
			}
			switch s.data[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				_, n, err := UnescapeU(s.data[s.pos:])
				if err != nil {
					end := min(s.pos+n, len(s.data))
					return s.fail(name, err, string(s.data[s.pos:end]))
				}
				s.pos += n
			default:
				return s.syntax("invalid escape")
			}
		case c < 0x20:
			return s.syntax("control character in string")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n <= 1 {
				return s.fail(name, ErrInvalidUTF8, fmt.Sprintf("(byte 0x%02x)", c))
			}
			s.pos += n
		}
	}
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.syntax("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() error {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.syntax("invalid number")
	}
	if s.peek() == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.syntax("invalid number: no digit after '.'")
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if s.digits() == 0 {
			return s.syntax("invalid number: no digit in exponent")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) syntax(detail string) error {
	return &Error{Pointer: s.pointer(false), Offset: s.pos, Err: ErrSyntax, Detail: "(" + detail + ")"}
}

// fail reports a bad string: a member name of the object on top of the
// stack, or the value at the current position.
func (s *scanner) fail(name bool, err error, detail string) error {
	return &Error{Pointer: s.pointer(name), Name: name, Offset: s.pos, Err: err, Detail: detail}
}

// pointer is the JSON Pointer of the current value; with object set, of
// the object whose member name is being read.
func (s *scanner) pointer(object bool) string {
	var b strings.Builder
	for i, f := range s.stack {
		if !f.obj {
			b.WriteString("/" + strconv.Itoa(f.n))
			continue
		}
		if object && i == len(s.stack)-1 {
			break
		}
		if f.key == nil {
			break // no member name read yet
		}
		b.WriteString("/" + jsonptr.Escape(unquote(f.key)))
	}
	return b.String()
}

// unquote decodes a member name that has already passed the scanner.
func unquote(raw []byte) string {
	var k string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &k) != nil {
		return string(raw)
	}
	return k
}
