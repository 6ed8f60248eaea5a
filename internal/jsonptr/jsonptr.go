// Package jsonptr is the one implementation of JSON Pointer (RFC 6901)
// syntax: escaping a reference token, unescaping one, and splitting or
// joining a pointer. It knows nothing of documents; resolving a pointer
// against a value is the caller's.
package jsonptr

import (
	"errors"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every error of Split and Unescape.
var ErrSyntax = errors.New("invalid JSON pointer")

// Error is a pointer or token that is not RFC 6901 syntax.
type Error struct {
	Input  string // the pointer or token as given
	Reason string
}

func (e *Error) Error() string {
	return ErrSyntax.Error() + " " + strconv.Quote(e.Input) + ": " + e.Reason
}

// Unwrap returns ErrSyntax.
func (e *Error) Unwrap() error { return ErrSyntax }

// escaper is built once: a Replacer builds its tables on first use, which
// per call cost 5% of a gate call (docs/PERFORMANCE.md).
var escaper = strings.NewReplacer("~", "~0", "/", "~1")

// Escape returns tok as a reference token (RFC 6901 §3): "~" becomes "~0"
// and "/" becomes "~1". A token with neither is returned as is, without
// allocating.
func Escape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return escaper.Replace(tok)
}

// Append returns ptr followed by the reference token for tok: ptr + "/" +
// Escape(tok).
func Append(ptr, tok string) string { return ptr + "/" + Escape(tok) }

// Join returns the pointer whose reference tokens are toks, each escaped;
// no tokens is the whole document, "".
func Join(toks ...string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(Escape(t))
	}
	return b.String()
}

// Unescape decodes a reference token (RFC 6901 §4): "~1" is "/" and "~0"
// is "~", read left to right, so "~01" is "~1". A "~" followed by anything
// else, or ending the token, is an error (*Error); the string returned with
// it has every valid escape decoded and each stray "~" kept as is, for
// callers that tolerate a token they did not write.
func Unescape(tok string) (string, error) {
	i := strings.IndexByte(tok, '~')
	if i < 0 {
		return tok, nil
	}
	var b strings.Builder
	b.Grow(len(tok))
	b.WriteString(tok[:i])
	var bad bool
	for ; i < len(tok); i++ {
		c := tok[i]
		if c == '~' && i+1 < len(tok) && (tok[i+1] == '0' || tok[i+1] == '1') {
			if tok[i+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			i++
			continue
		}
		if c == '~' {
			bad = true
		}
		b.WriteByte(c)
	}
	if bad {
		return b.String(), &Error{Input: tok, Reason: "\"~\" must be followed by 0 or 1"}
	}
	return b.String(), nil
}

// Split returns the unescaped reference tokens of ptr. The whole document
// "" has none (nil). A non-empty pointer must start with "/"; "/" alone is
// one empty token, the member named "". A bad escape is an error.
func Split(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, &Error{Input: ptr, Reason: "must start with \"/\""}
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		u, err := Unescape(t)
		if err != nil {
			return nil, &Error{Input: ptr, Reason: err.(*Error).Reason}
		}
		toks[i] = u
	}
	return toks, nil
}

// EqualEscaped reports whether tok is Escape(string(raw)), without building
// it.
func EqualEscaped(tok string, raw []byte) bool {
	for _, c := range raw {
		var want string
		switch c {
		case '~':
			want = "~0"
		case '/':
			want = "~1"
		default:
			if tok == "" || tok[0] != c {
				return false
			}
			tok = tok[1:]
			continue
		}
		if !strings.HasPrefix(tok, want) {
			return false
		}
		tok = tok[len(want):]
	}
	return tok == ""
}
