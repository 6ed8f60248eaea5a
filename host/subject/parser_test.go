package subject

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestParserMaxBytes: Parser.MaxBytes is the only byte limit, above or
// below DefaultMaxBytes, for proposals, tool calls and Native alike.
func TestParserMaxBytes(t *testing.T) {
	inputs := []struct {
		name string
		kind abi.SubjectKind
		tmpl string // "@" is padding
	}{
		{"native proposal", abi.SubjectProposal, `{"actions":[{"tool":"a","parameters":{"p":"@"}}]}`},
		{"mcp proposal", abi.SubjectProposal, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"p":"@"}}}`},
		{"openai tool call", abi.SubjectToolCall, `{"id":"c","type":"function","function":{"name":"a","arguments":"{\"p\":\"@\"}"}}`},
		{"native tool call", abi.SubjectToolCall, `{"tool":"a","parameters":{"p":"@"}}`},
	}
	pad := func(tmpl string, n int) []byte {
		return []byte(strings.Replace(tmpl, "@", strings.Repeat("x", n-(len(tmpl)-1)), 1))
	}
	parse := func(ps Parser, kind abi.SubjectKind, data []byte) error {
		var err error
		if kind == abi.SubjectProposal {
			_, _, err = ps.Proposal(data, FormatAuto)
		} else {
			_, _, err = ps.ToolCall(data, FormatAuto)
		}
		_, _, nerr := ps.Native(data, kind, FormatAuto)
		require.Equal(t, err == nil, nerr == nil, "Native agrees: %v / %v", err, nerr)
		return err
	}
	for _, in := range inputs {
		for _, limit := range []int{1 << 10, 6 << 20} {
			ps := Parser{MaxBytes: limit}
			require.NoError(t, parse(ps, in.kind, pad(in.tmpl, limit)), "%s at %d", in.name, limit)
			err := parse(ps, in.kind, pad(in.tmpl, limit+1))
			require.ErrorIs(t, err, ErrTooLarge, "%s over %d", in.name, limit)
			assert.Contains(t, err.Error(), "over the limit of ")
		}
		// The zero Parser is ParseProposal's: DefaultMaxBytes.
		require.ErrorIs(t, parse(Parser{}, in.kind, pad(in.tmpl, DefaultMaxBytes+1)), ErrTooLarge, in.name)
		require.NoError(t, parse(Parser{MaxBytes: -1}, in.kind, pad(in.tmpl, DefaultMaxBytes)), in.name)
	}
}

// TestNative: a native input is detected and returned as given, unread
// beyond detection; an agent format is converted to the native JSON that
// Proposal or ToolCall returns.
func TestNative(t *testing.T) {
	tests := []struct {
		name   string
		kind   abi.SubjectKind
		f      Format
		input  string
		got    Format
		asIs   bool
		errSub string
	}{
		{name: "native proposal", kind: abi.SubjectProposal, input: `{ "actions": [], "extra": 1 }`, got: FormatNative, asIs: true},
		{name: "native proposal, forced", kind: abi.SubjectProposal, f: FormatNative, input: `{"actions":[{"tool":"a","parse_error":""}]}`, got: FormatNative, asIs: true},
		{name: "native tool call", kind: abi.SubjectToolCall, input: `{"tool":"a","parse_error":""}`, got: FormatNative, asIs: true},
		{name: "native proposal of one call, as a tool call", kind: abi.SubjectToolCall, input: `{"actions":[{"tool":"a","parameters":{}}]}`, got: FormatNative},
		{name: "mcp proposal", kind: abi.SubjectProposal, input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, got: FormatMCP},
		{name: "openai tool call", kind: abi.SubjectToolCall, input: `{"id":"c","type":"function","function":{"name":"a","arguments":"{}"}}`, got: FormatOpenAI},
		{name: "anthropic proposal", kind: abi.SubjectProposal, f: FormatAnthropic, input: `[{"type":"tool_use","id":"t","name":"a","input":{}}]`, got: FormatAnthropic},
		{name: "merge has no agent formats", kind: abi.SubjectMerge, input: `{"file_changes":[]}`, errSub: "no agent formats"},
		{name: "unknown format", kind: abi.SubjectProposal, f: "yaml", input: `{"actions":[]}`, errSub: "unknown format"},
		{name: "case variant in an agent format", kind: abi.SubjectToolCall, input: `{"type":"tool_use","id":"t","name":"a","input":{"k":1,"K":2}}`, errSub: "ambiguous member name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, got, err := Parser{}.Native([]byte(tc.input), tc.kind, tc.f)
			if tc.errSub != "" {
				var e *Error
				require.True(t, errors.As(err, &e), "%v is an *Error", err)
				assert.Contains(t, err.Error(), tc.errSub)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.got, got)
			if tc.asIs {
				assert.Equal(t, tc.input, string(out), "returned as given")
				return
			}
			var want []byte
			if tc.kind == abi.SubjectProposal {
				p, _, err := ParseProposal([]byte(tc.input), tc.f)
				require.NoError(t, err)
				want, _ = json.Marshal(p)
			} else {
				c, _, err := ParseToolCall([]byte(tc.input), tc.f)
				require.NoError(t, err)
				want, _ = json.Marshal(c)
			}
			assert.Equal(t, string(want), string(out))
		})
	}
}

// FuzzNative: Native never panics, fails only with an *Error, returns a
// native input as given and otherwise what Proposal or ToolCall read.
func FuzzNative(f *testing.F) {
	for _, s := range []string{`{"actions":[]}`, `{"tool":"a"}`, `{"name":"a","arguments":{}}`,
		`{"type":"tool_use","id":"t","name":"a","input":7}`, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]`, `{"role":"assistant"}`} {
		for i := range fuzzFormats {
			f.Add([]byte(s), uint8(i), false)
			f.Add([]byte(s), uint8(i), true)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, fi uint8, call bool) {
		kind, format := abi.SubjectProposal, fuzzFormats[int(fi)%len(fuzzFormats)]
		if call {
			kind = abi.SubjectToolCall
		}
		out, got, err := Parser{}.Native(data, kind, format)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not *Error", err, err)
			}
			return
		}
		if got == FormatNative && string(out) == string(data) {
			return
		}
		if kind == abi.SubjectProposal {
			var p abi.Proposal
			if err := json.Unmarshal(out, &p); err != nil {
				t.Fatalf("converted %q to %q, not a proposal: %v", data, out, err)
			}
			requireValidNative(t, p)
			return
		}
		var c abi.ToolCall
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatalf("converted %q to %q, not a tool call: %v", data, out, err)
		}
		requireValidToolCall(t, c)
	})
}

// TestOpenAIArgumentsMemberNames: the JSON inside an OpenAI arguments
// string keeps the member-name rule of the input around it, in both
// OpenAI shapes: a name twice, exactly or under case folding, is an error.
func TestOpenAIArgumentsMemberNames(t *testing.T) {
	for _, args := range []string{`{\"a\":1,\"a\":2}`, `{\"k\":1,\"K\":2}`, `{\"o\":{\"x\":1,\"x\":1}}`} {
		for _, in := range []string{
			`{"id":"c","type":"function","function":{"name":"t","arguments":"` + args + `"}}`,
			`{"type":"function_call","call_id":"c","name":"t","arguments":"` + args + `"}`,
			`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"` + args + `"}}]}`,
		} {
			_, _, err := ParseToolCall([]byte(in), FormatAuto)
			var e *Error
			require.ErrorAs(t, err, &e, in)
			assert.Contains(t, e.Field, "arguments", in)
			assert.Contains(t, err.Error(), "ambiguous member name", in)
		}
	}
	// The control: distinct names are read.
	c, _, err := ParseToolCall([]byte(`{"id":"c","type":"function","function":{"name":"t","arguments":"{\"a\":1,\"b\":2}"}}`), FormatAuto)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1,"b":2}`, string(c.Parameters))
}
