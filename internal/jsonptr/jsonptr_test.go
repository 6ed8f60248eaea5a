package jsonptr

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEscape(t *testing.T) {
	for raw, esc := range map[string]string{
		"":      "",
		"a":     "a",
		"a/b":   "a~1b",
		"m~n":   "m~0n",
		"~1":    "~01",
		"/~":    "~1~0",
		"x y":   "x y",
		"%25":   "%25",
		"ü/~/ü": "ü~1~0~1ü",
	} {
		assert.Equal(t, esc, Escape(raw), raw)
		u, err := Unescape(esc)
		require.NoError(t, err, esc)
		assert.Equal(t, raw, u, esc)
		assert.True(t, EqualEscaped(esc, []byte(raw)), esc)
	}
}

func TestUnescapeBad(t *testing.T) {
	for tok, lenient := range map[string]string{
		"~":      "~",
		"a~":     "a~",
		"~2":     "~2",
		"~~1":    "~/",
		"~1~2~0": "/~2~",
		"~a":     "~a",
	} {
		u, err := Unescape(tok)
		assert.ErrorIs(t, err, ErrSyntax, tok)
		assert.Equal(t, lenient, u, "what a tolerant caller gets for %q", tok)
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		ptr  string
		toks []string
		err  string
	}{
		{ptr: "", toks: nil},
		{ptr: "/", toks: []string{""}},
		{ptr: "//", toks: []string{"", ""}},
		{ptr: "/a/0/b", toks: []string{"a", "0", "b"}},
		{ptr: "/a~1b/m~0n/~01", toks: []string{"a/b", "m~n", "~1"}},
		{ptr: "a/b", err: `invalid JSON pointer "a/b": must start with "/"`},
		{ptr: "#/a", err: `must start with "/"`},
		{ptr: "/a/~2", err: `invalid JSON pointer "/a/~2": "~" must be followed by 0 or 1`},
		{ptr: "/a~", err: `"~" must be followed by 0 or 1`},
	} {
		toks, err := Split(tt.ptr)
		if tt.err != "" {
			require.Error(t, err, tt.ptr)
			assert.ErrorIs(t, err, ErrSyntax)
			var pe *Error
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, tt.ptr, pe.Input)
			assert.Contains(t, err.Error(), tt.err)
			continue
		}
		require.NoError(t, err, tt.ptr)
		assert.Equal(t, tt.toks, toks, tt.ptr)
		assert.Equal(t, tt.ptr, Join(toks...), "round trip of %q", tt.ptr)
	}
}

func TestJoinAppend(t *testing.T) {
	assert.Equal(t, "", Join())
	assert.Equal(t, "/a~1b/~0", Join("a/b", "~"))
	assert.Equal(t, "/x/a~1b", Append("/x", "a/b"))
	assert.Equal(t, "/", Append("", ""))
}

func TestEqualEscaped(t *testing.T) {
	for _, tt := range []struct {
		tok, raw string
		want     bool
	}{
		{"", "", true},
		{"a", "a", true},
		{"a~1b", "a/b", true},
		{"a/b", "a/b", false},
		{"a~0", "a~", true},
		{"a~", "a~", false},
		{"ab", "a", false},
		{"a", "ab", false},
		{"~1", "~", false},
	} {
		assert.Equal(t, tt.want, EqualEscaped(tt.tok, []byte(tt.raw)), "%q %q", tt.tok, tt.raw)
		assert.Equal(t, Escape(tt.raw) == tt.tok, EqualEscaped(tt.tok, []byte(tt.raw)), "agrees with Escape: %q %q", tt.tok, tt.raw)
	}
}

// sequential is the two-pass unescaping the package replaced: "~1" first,
// then "~0".
func sequential(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a", "a/b", "~", "~0", "~1", "~01", "/~/", "~~1", "~2"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// Escape then Unescape is the identity.
		u, err := Unescape(Escape(a))
		if err != nil || u != a {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", a, u, err)
		}
		if !EqualEscaped(Escape(a), []byte(a)) {
			t.Fatalf("EqualEscaped(Escape(%q)) is false", a)
		}
		// Join then Split is the identity.
		toks, err := Split(Join(a, b))
		if err != nil || len(toks) != 2 || toks[0] != a || toks[1] != b {
			t.Fatalf("Split(Join(%q, %q)) = %q, %v", a, b, toks, err)
		}
		// Any input: a valid token unescapes as the two-pass rule did, and
		// a tolerant caller of a bad one gets what the two-pass rule gave.
		u, err = Unescape(a)
		if u != sequential(a) {
			t.Fatalf("Unescape(%q) = %q, the two-pass rule %q", a, u, sequential(a))
		}
		if err == nil && !strings.Contains(a, "/") && Escape(u) != a {
			t.Fatalf("Escape(Unescape(%q)) = %q", a, Escape(u))
		}
		// Split accepts exactly the pointers Join can write.
		if toks, err := Split("/" + a); err == nil && Join(toks...) != "/"+a {
			t.Fatalf("Join(Split(%q)) = %q", "/"+a, Join(toks...))
		}
	})
}
