package guestjson

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agree checks DecodeRequest and DecodeProposal against json.Unmarshal on
// b: the same value, or both an error.
func agree(t *testing.T, b []byte) {
	t.Helper()
	var wantR, gotR abi.Request
	wantErr := json.Unmarshal(b, &wantR)
	gotErr := DecodeRequest(b, &gotR)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "request %q: encoding/json %v, guestjson %v", b, wantErr, gotErr)
	} else {
		require.Equal(t, wantR, gotR, "request %q", b)
	}
	var wantC, gotC abi.ToolCall
	wantErr = json.Unmarshal(b, &wantC)
	gotErr = DecodeToolCall(b, &gotC)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "tool call %q: encoding/json %v, guestjson %v", b, wantErr, gotErr)
	} else {
		require.Equal(t, wantC, gotC, "tool call %q", b)
	}
	var wantP, gotP abi.Proposal
	wantErr = json.Unmarshal(b, &wantP)
	gotErr = DecodeProposal(b, &gotP)
	if wantErr != nil || gotErr != nil {
		require.Equal(t, wantErr != nil, gotErr != nil, "proposal %q: encoding/json %v, guestjson %v", b, wantErr, gotErr)
		if gotErr != nil {
			require.True(t, errors.Is(gotErr, ErrSyntax) || errors.Is(gotErr, ErrType), "untyped error %v", gotErr)
		}
		return
	}
	require.Equal(t, wantP, gotP, "proposal %q", b)
}

// shapes are inputs on every rule of the package doc, each checked
// against encoding/json; they seed the fuzz target.
var shapes = []string{
	// real inputs (testdata/README.md says where they come from)
	"@request.json", "@bench-10-actions.json",
	// syntax
	``, ` `, `{`, `}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `{"a":1}x`, `{} {}`, `01`, `-`, `1.`, `1e`, `.5`, `+1`,
	`nul`, `nullx`, `tru`, `"abc`, "\"a\x01\"", `"\x"`, `"\u12"`, `"\u12g4"`, `{"subject":[1,2}`, `{"subject":{"a":[}}`,
	` {"abi_version":1} `, "\t\n\r{}\n",
	// top-level kinds
	`null`, `[]`, `"s"`, `1`, `true`, `{}`,
	// member names: exact, case-folded, Unicode folds, escapes, unknown, duplicate
	`{"abi_version":1}`, `{"ABI_VERSION":2}`, `{"Abi_Version":3,"abi_version":4}`, `{"abi_version":4,"ABI_version":5}`,
	`{"stage":"a","ſtage":"b"}`, `{"subject_\u212aind":"proposal"}`, `{"subject_kind":"x","SUBJECT_KIND":"y"}`,
	`{"run\u005fid":"r"}`, `{"unknown":{"deep":[1,{"x":null}]},"stage":"s"}`, `{"stage":"a","stage":"b"}`,
	`{"ID":"p","Actions":[{"TOOL":"t","Parameters":{"A":1}}]}`, `{"actions":[{"tool":"t"}],"ACTIONS":[{"id":"x"}]}`,
	`{"actions":[{"id":"a"},{"id":"b"},{"id":"c"}],"actions":[{"tool":"x"}],"actions":[{"type":"y"},{"type":"z"}]}`,
	`{"actions":[{"id":"a"}],"actions":[]}`, `{"actions":[{"id":"a"}],"actions":null}`, `{"actions":[null,{}]}`,
	`{"context":{"a":1},"context":{"b":2}}`, `{"context":{"a":1},"context":null}`, `{"context":{"a":1,"a":2}}`,
	`{"context":{"catalog_generation":1},"context":{"session":"s"}}`, `{"context":{"confirmation":{"tool":"t"}},"context":{"confirmation":{"token":"k"}}}`,
	`{"context":{"confirmation":{"tool":"t"},"confirmation":null}}`, `{"context":null}`,
	// principal (minor 6): every member, merges, nulls, case folds, kinds that do not fit
	`{"context":{"principal":{"issuer":"https://idp","subject":"alice","method":"oidc","claims":{"role":"reviewer","groups":["a","b"],"n":1.5}}}}`,
	`{"context":{"principal":{"subject":"a"}},"context":{"principal":{"method":"mtls","claims":{"uris":["spiffe://x"]}}}}`,
	`{"context":{"principal":{"claims":{"a":1}},"principal":{"claims":{"b":2}}}}`, `{"context":{"principal":{"claims":null}}}`,
	`{"context":{"principal":null}}`, `{"context":{"PRINCIPAL":{"Subject":"s","METHOD":"token"}}}`,
	`{"context":{"principal":[]}}`, `{"context":{"principal":"alice"}}`, `{"context":{"principal":{"subject":1}}}`,
	`{"context":{"principal":{"claims":[]}}}`, `{"context":{"principal":{"claims":{"x":1e400}}}}`,
	// nulls into every kind
	`{"abi_version":null,"run_id":null,"subject":null,"config":null,"context":{"capabilities":null,"confirmation":null}}`,
	`{"actions":[{"parameters":null,"preconditions":null,"expected_effects":null,"depends_on":null,"idempotent":null,"max_retries":null,"timeout_ms":null,"metadata":null,"id":null}]}`,
	`{"actions":[{"preconditions":[{"key":"k","value":{"a":[1,"x",null,true]}},{"value":null}]}]}`,
	`{"actions":[{"preconditions":[{"value":{"a":1}}]}],"actions":[{"preconditions":[{"value":[2]}]}]}`,
	// kinds that do not fit
	`{"abi_version":"1"}`, `{"abi_version":1.0}`, `{"abi_version":1e0}`, `{"abi_version":-0}`, `{"abi_version":true}`,
	`{"abi_version":9223372036854775807}`, `{"abi_version":9223372036854775808}`, `{"abi_version":-9223372036854775808}`,
	`{"context":{"catalog_generation":-0}}`, `{"context":{"catalog_generation":-1}}`, `{"context":{"catalog_generation":18446744073709551615}}`,
	`{"context":{"catalog_generation":18446744073709551616}}`, `{"stage":1}`, `{"stage":{}}`, `{"context":[]}`, `{"context":"x"}`,
	`{"context":{"capabilities":"catalog"}}`, `{"context":{"capabilities":[1]}}`, `{"actions":{}}`, `{"actions":[1]}`,
	`{"actions":[{"depends_on":[1.5]}]}`, `{"actions":[{"depends_on":[0,-1,2]}]}`, `{"actions":[{"idempotent":"true"}]}`,
	`{"actions":[{"idempotent":true},{"idempotent":false}]}`, `{"actions":[{"max_retries":3,"timeout_ms":-5}]}`,
	`{"actions":[{"expected_effects":[]}]}`, `{"context":{"x":1e400}}`, `{"context":{"x":1e-400,"y":-0.0,"z":123456789012345678901234567890}}`,
	`{"stage":"x","abi_version":"bad","run_id":"r"}`,
	// strings: escapes, surrogates, invalid UTF-8
	`{"stage":"a\"b\\c\/d\b\f\n\r\t"}`, `{"stage":"\u00e9\u4e2d\ud83d\ude00"}`, `{"stage":"\ud83d"}`, `{"stage":"\ude00\ud83d"}`,
	`{"stage":"\ud83d\u0041"}`, `{"stage":"\ud83dx"}`, "{\"stage\":\"\xff\xfe\"}", "{\"st\xffage\":\"x\"}", "{\"stage\":\"é中😀\"}",
	"{\"subject\":\"\xff\"}", `{"context":{"\ud800":"\udfff"}}`,
}

func readShape(t testing.TB, s string) []byte {
	if name, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		return b
	}
	return []byte(s)
}

func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range shapes {
		t.Run(s, func(t *testing.T) { agree(t, readShape(t, s)) })
	}
}

func TestDepthLimit(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			// n levels in all: the proposal, its context, n-2 more.
			b := `{"context":{"a":` + strings.Repeat(open, n-2) + `1` + strings.Repeat(close, n-2) + `}}`
			agree(t, []byte(b))
			var p abi.Proposal
			err := DecodeProposal([]byte(b), &p)
			assert.Equal(t, n > maxDepth, err != nil, "depth %d %s: %v", n, open, err)
		}
	}
}

func TestErrorNamesTheField(t *testing.T) {
	tests := []struct {
		in    string
		field string
		kind  error
	}{
		{`{"actions":[{},{"depends_on":[1,"x"]}]}`, "actions[1].depends_on[1]", ErrType},
		{`{"actions":[{"preconditions":[{"value":1e999}]}]}`, "actions[0].preconditions[0].value", ErrType},
		{`{"context":{"a":[1,}}`, "context.a[1]", ErrSyntax},
		{`{"id":"x"} 1`, "", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var p abi.Proposal
			err := DecodeProposal([]byte(tt.in), &p)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.field, e.Field)
			assert.ErrorIs(t, err, tt.kind)
			assert.Contains(t, err.Error(), "guestjson: ")
		})
	}
}

// FuzzAgreesWithEncodingJSON checks every input as a request, a proposal
// and each answer type (answers_test.go).
func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range shapes {
		f.Add(readShape(f, s))
	}
	for _, b := range answerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		agree(t, b)
		agreeAnswers(t, b)
		agreeValue(t, b)
		agreeAny(t, b)
	})
}

func TestSpecial(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c == '"' || c == '\\' || c < ' ' || c >= 0x80
		for pos := 0; pos < 8; pos++ {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			m := special(binary.LittleEndian.Uint64(w))
			require.Equal(t, want, m != 0, "byte %#x at %d", c, pos)
			if want {
				require.Equal(t, pos, bits.TrailingZeros64(m)/8, "byte %#x at %d", c, pos)
			}
			// A special byte after another: the first is found.
			w[7] = '"'
			if pos < 7 && want {
				require.Equal(t, pos, bits.TrailingZeros64(special(binary.LittleEndian.Uint64(w)))/8)
			}
		}
	}
}
