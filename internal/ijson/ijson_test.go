package ijson_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/ijson"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr error  // nil: valid
		ptr     string // Error.Pointer
		isName  bool   // Error.Name
		offset  int    // Error.Offset, when wantErr is a string rule
	}{
		{name: "plain", doc: `{"a":[1,"x",true,false,null,{"b":-1.5e+3}]}`},
		{name: "scalar top level", doc: ` "x" `},
		{name: "empty containers", doc: `{"a":{},"b":[],"c":[[]]}`},
		{name: "escaped pair", doc: `{"a":"\ud83d\ude00"}`},
		{name: "literal astral", doc: `{"a":"😀"}`},
		{name: "escaped BMP", doc: `{"\u00e9":"\u005f\uFFFD"}`},
		{name: "escaped backslash then u", doc: `{"a":"\\ud800"}`},
		{name: "every short escape", doc: `["\"\\\/\b\f\n\r\t"]`},

		{name: "lone high", doc: `{"a":"\ud800"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "lone low", doc: `{"a":"x\udc00"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 7},
		{name: "high then low reversed", doc: `{"a":"\udc00\ud800"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "high then non-surrogate escape", doc: `{"a":"\ud800\u0041"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "high then another high", doc: `{"a":"\ud800\ud800"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "high then bad escape", doc: `{"a":"\ud800\uZZZZ"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "high then literal", doc: `{"a":"\ud800x"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a", offset: 6},
		{name: "high at end", doc: `["\ud800"]`, wantErr: ijson.ErrLoneSurrogate, ptr: "/0", offset: 2},
		{name: "uppercase hex", doc: `["\uD800"]`, wantErr: ijson.ErrLoneSurrogate, ptr: "/0", offset: 2},
		{name: "in a member name", doc: `{"ok":1,"\udfff":2}`, wantErr: ijson.ErrLoneSurrogate, ptr: "", isName: true, offset: 9},
		{name: "in a nested member name", doc: `{"a":[{"x":1},{"\ud800":2}]}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a/1", isName: true, offset: 16},
		{name: "deep value", doc: `{"a":{"b/c":[0,{"d~e":"\udc00"}]}}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/a/b~1c/1/d~0e", offset: 23},
		{name: "after an escaped key", doc: `{"\u0061b":"\ud800"}`, wantErr: ijson.ErrLoneSurrogate, ptr: "/ab", offset: 12},
		{name: "top-level string", doc: `"\ud800"`, wantErr: ijson.ErrLoneSurrogate, ptr: "", offset: 1},
		{name: "bad escape hex", doc: `["\u12G4"]`, wantErr: ijson.ErrBadEscape, ptr: "/0", offset: 2},
		{name: "short escape", doc: `["\u12"]`, wantErr: ijson.ErrBadEscape, ptr: "/0", offset: 2},

		{name: "invalid byte", doc: "{\"a\":\"\xff\"}", wantErr: ijson.ErrInvalidUTF8, ptr: "/a", offset: 6},
		{name: "encoded surrogate", doc: "[\"\xed\xa0\x80\"]", wantErr: ijson.ErrInvalidUTF8, ptr: "/0", offset: 2},
		{name: "overlong", doc: "[\"\xc0\xaf\"]", wantErr: ijson.ErrInvalidUTF8, ptr: "/0", offset: 2},
		{name: "truncated sequence", doc: "[\"\xe2\x82\"]", wantErr: ijson.ErrInvalidUTF8, ptr: "/0", offset: 2},
		{name: "invalid byte in a name", doc: "{\"a\":{\"\x80\":1}}", wantErr: ijson.ErrInvalidUTF8, ptr: "/a", isName: true, offset: 7},

		{name: "empty", doc: ``, wantErr: ijson.ErrSyntax},
		{name: "trailing data", doc: `{} {}`, wantErr: ijson.ErrSyntax},
		{name: "unterminated", doc: `{"a":"x`, wantErr: ijson.ErrSyntax},
		{name: "missing colon", doc: `{"a" 1}`, wantErr: ijson.ErrSyntax},
		{name: "trailing comma", doc: `[1,]`, wantErr: ijson.ErrSyntax},
		{name: "mismatched bracket", doc: `[1}`, wantErr: ijson.ErrSyntax},
		{name: "control character", doc: "[\"\x01\"]", wantErr: ijson.ErrSyntax},
		{name: "leading zero", doc: `[01]`, wantErr: ijson.ErrSyntax},
		{name: "bad literal", doc: `[tru]`, wantErr: ijson.ErrSyntax},
		{name: "bad escape letter", doc: `["\x"]`, wantErr: ijson.ErrSyntax},
		{name: "non-string name", doc: `{1:2}`, wantErr: ijson.ErrSyntax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ijson.Check([]byte(tc.doc))
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ijson.ErrNotIJSON)
			assert.ErrorIs(t, err, tc.wantErr)
			var e *ijson.Error
			require.True(t, errors.As(err, &e))
			if tc.wantErr == ijson.ErrSyntax {
				assert.False(t, json.Valid([]byte(tc.doc)), "encoding/json agrees it is not JSON")
				return
			}
			assert.Equal(t, tc.ptr, e.Pointer)
			assert.Equal(t, tc.isName, e.Name)
			assert.Equal(t, tc.offset, e.Offset)
			assert.True(t, utf8.ValidString(err.Error()), "the message is printable: %q", err.Error())
		})
	}
}

// TestCheckDeep: nesting costs no stack.
func TestCheckDeep(t *testing.T) {
	const n = 1 << 20
	doc := strings.Repeat("[", n) + `"\ud800"` + strings.Repeat("]", n)
	err := ijson.Check([]byte(doc))
	require.ErrorIs(t, err, ijson.ErrLoneSurrogate)
	var e *ijson.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, n+1, e.Offset, "the backslash")
	assert.NoError(t, ijson.Check([]byte(strings.Repeat("[", n)+strings.Repeat("]", n))))
}

func TestUnescapeU(t *testing.T) {
	tests := []struct {
		in   string
		r    rune
		n    int
		want error
	}{
		{`\u0041`, 'A', 6, nil},
		{`\u00e9rest`, 'é', 6, nil},
		{`\ud83d\ude00`, '😀', 12, nil},
		{`\uD83D\uDE00`, '😀', 12, nil},
		{`\ud800`, 0, 6, ijson.ErrLoneSurrogate},
		{`\udc00\ud800`, 0, 6, ijson.ErrLoneSurrogate},
		{`\ud800\u0041`, 0, 6, ijson.ErrLoneSurrogate},
		{`\ud800\`, 0, 6, ijson.ErrLoneSurrogate},
		{`\u12`, 0, 2, ijson.ErrBadEscape},
		{`\ug000`, 0, 2, ijson.ErrBadEscape},
		{`\n`, 0, 2, ijson.ErrBadEscape},
		{``, 0, 2, ijson.ErrBadEscape},
	}
	for _, tc := range tests {
		r, n, err := ijson.UnescapeU([]byte(tc.in))
		assert.ErrorIs(t, err, tc.want, tc.in)
		if tc.want == nil {
			assert.NoError(t, err, tc.in)
		}
		assert.Equal(t, tc.r, r, tc.in)
		assert.Equal(t, tc.n, n, tc.in)
	}
}

// FuzzCheck: Check never panics; what it accepts is JSON; what the
// catalog's strict parser accepts, Check accepts, so a lone surrogate or a
// bad byte Check reports is refused by the catalog too (one rule).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `["\ud83d\ude00"]`, "[\"\xff\"]", `{"\udc00":1}`, `[1,{"a":[null,true]}]`, `"\ud800\u0041"`, `{"a":1e5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := ijson.Check(doc)
		if err == nil && !json.Valid(doc) {
			t.Fatalf("Check accepted %q, which is not JSON", doc)
		}
		if err != nil && !errors.Is(err, ijson.ErrNotIJSON) {
			t.Fatalf("error %v does not wrap ErrNotIJSON", err)
		}
		// The catalog's parser is stricter (duplicate names, depth,
		// exponents), never laxer.
		if _, cerr := catalog.CanonicalJSON(doc); cerr == nil && err != nil {
			t.Fatalf("the catalog accepts %q, Check refuses: %v", doc, err)
		}
	})
}

// BenchmarkCheck is the cost Check adds to every subject at the edge: the
// 10-action proposal of the admission benchmark, and a 1 MiB string-heavy
// document.
func BenchmarkCheck(b *testing.B) {
	root, err := testwasm.Root()
	require.NoError(b, err)
	plan, err := os.ReadFile(filepath.Join(root, "testdata/static-verify/bench-10-actions.json"))
	require.NoError(b, err)
	big := []byte(`{"a":["` + strings.Repeat(`x\u00e9\ud83d\ude00é`, 1<<16) + `"]}`)
	for name, doc := range map[string][]byte{"10-actions": plan, "1MiB-strings": big} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := ijson.Check(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
