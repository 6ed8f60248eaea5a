package abischema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walk is CheckNames by the decoder walk alone, the reference the one-pass
// scanner must agree with.
func walk(doc []byte, structs Structs) error {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	w := walker{d: d, structs: structs}
	return w.value("")
}

// TestCheckNamesScannerAgrees: on valid documents the one-pass scanner
// refuses exactly what the decoder walk refuses, with the same text.
func TestCheckNamesScannerAgrees(t *testing.T) {
	many := func(dup string) string {
		var b strings.Builder
		b.WriteString(`{"evidence":{`)
		for i := range 40 {
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
		}
		b.WriteString(dup + `:2}}`)
		return b.String()
	}
	tests := []struct {
		name    string
		doc     string
		structs Structs
		ok      bool
	}{
		{"exact duplicate", `{"a":1,"a":2}`, nil, false},
		{"case variant", `{"a":{"Name":1,"nAME":2}}`, nil, false},
		{"long s folds", `{"x":[{"s":1,"ſ":2}]}`, nil, false},
		{"kelvin folds", `{"k":1,"K":2}`, nil, false},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, nil, false},
		{"escaped case variant", `{"\u0041":1,"a":2}`, nil, false},
		{"lone surrogates both read as U+FFFD", `{"\ud800":1,"\udc00":2}`, nil, false},
		{"distinct escapes", `{"a\/b":1,"a~b":2,"a\"b":3}`, nil, true},
		{"large object, duplicate last", many(`"K"`), nil, false},
		{"large object, duplicate folded", many(`"KXX"`), nil, false},
		{"large object, no duplicate", many(`"other"`), nil, true},
		{"struct field misspelled", `{"actions":[{"Tool":"x"}]}`, ProposalStructs, false},
		{"struct field in nested element", `{"actions":[{"tool":"x","preconditions":[{"KEY":"a"}]}]}`, ProposalStructs, false},
		{"free-form member may vary", `{"actions":[{"tool":"x","parameters":{"Tool":1}}]}`, ProposalStructs, true},
		{"member named like a segment", `{"*":{"Tool":1}}`, Structs{"/*": {"tool"}}, false},
		{"escaped path segment", `{"a/b":{"Tool":1}}`, Structs{"/a~1b": {"tool"}}, false},
		{"scalars and white space", " \n{\"a\" : [ 1 , -2.5e3 , true , false , null , \"s\" ] , \"b\" : { } }\t", nil, true},
		{"top-level scalar", `"x"`, nil, true},
		{"nesting at the limit", strings.Repeat("[", maxDepth) + "1" + strings.Repeat("]", maxDepth), nil, true},
		{"nesting past the limit", strings.Repeat(`{"a":`, maxDepth) + "[]" + strings.Repeat("}", maxDepth), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(tt.doc)), "the case must be valid JSON")
			got, want := CheckNames([]byte(tt.doc), tt.structs), walk([]byte(tt.doc), tt.structs)
			assert.Equal(t, tt.ok, got == nil, "%v", got)
			if want == nil {
				assert.NoError(t, got)
				return
			}
			require.Error(t, got)
			assert.ErrorIs(t, got, ErrMemberName)
			assert.Equal(t, want.Error(), got.Error())
		})
	}
}

// FuzzCheckNamesScanner compares the one-pass scanner with the decoder walk
// on every valid document.
func FuzzCheckNamesScanner(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"actions":[{"Tool":"x"}]}`, `{"\u0041":[{"b":{"c":null}}]}`, `[[[{"ſ":1,"s":2}]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := CheckNames(doc, ProposalStructs)
		if !json.Valid(doc) || !utf8.Valid(doc) {
			return
		}
		want := walk(doc, ProposalStructs)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Fatalf("scanner %v, walk %v", got, want)
		}
	})
}

func BenchmarkCheckNames(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"actions":[`)
	for i := range 10 {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`{"tool":"create_issue","parameters":{"owner":"o","repo":"r","title":"t","body":"some text","labels":["a","b"]},"preconditions":[{"key":"k","value":1}]}`)
	}
	doc.WriteString(`]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckNames(doc.Bytes(), ProposalStructs); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIsEscaped(t *testing.T) {
	tests := []struct {
		part, seg string
		want      bool
	}{
		{"a", "a", true}, {"", "", true}, {"a~1b", "a/b", true}, {"a~0b", "a~b", true}, {"~0~1", "~/", true},
		{"a/b", "a/b", false}, {"a~b", "a~b", false}, {"ab", "a", false}, {"a", "ab", false}, {"~1", "~", false}, {"*", "x", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isEscaped(tt.part, []byte(tt.seg)), "%q %q", tt.part, tt.seg)
		assert.Equal(t, escape(tt.seg) == tt.part, isEscaped(tt.part, []byte(tt.seg)), "agrees with escape: %q %q", tt.part, tt.seg)
	}
}
