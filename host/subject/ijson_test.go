package subject

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ijsonCase is one input with a string that two readers would read
// differently, and where the error must point.
type ijsonCase struct {
	name  string
	input string
	field string // Error.Field
	inner string // for the JSON inside an arguments string: its pointer, in Reason
}

// Escapes that make a string not I-JSON: each is tried in every position.
var badEscapes = []string{`\ud800`, `\udc00`, `\udbff\u0041`, `\ud800\ud800`, `\udfff\udfff`, `x\ud83d`, `\ud83dy`}

// ijsonCases puts bad into every place of every format where agent input
// enters: argument values and member names, envelopes, ids and tool names.
func ijsonCases(bad string) []ijsonCase {
	// For the JSON inside an arguments string, the escape's backslash is
	// itself escaped once more.
	inArgs := strings.ReplaceAll(bad, `\`, `\\`)
	return []ijsonCase{
		{name: "native parameter value", input: `{"actions":[{"tool":"t","parameters":{"path":"` + bad + `"}}]}`, field: "/actions/0/parameters/path"},
		{name: "native parameter name", input: `{"actions":[{"tool":"t","parameters":{"` + bad + `":1}}]}`, field: "/actions/0/parameters"},
		{name: "native nested in array", input: `{"actions":[{"tool":"t","parameters":{"a":[0,{"b":"` + bad + `"}]}}]}`, field: "/actions/0/parameters/a/1/b"},
		{name: "native tool name", input: `{"actions":[{"tool":"` + bad + `"}]}`, field: "/actions/0/tool"},
		{name: "native context", input: `{"actions":[],"context":{"k":"` + bad + `"}}`, field: "/context/k"},
		{name: "native precondition value", input: `{"actions":[{"tool":"t","preconditions":[{"key":"k","value":"` + bad + `"}]}]}`, field: "/actions/0/preconditions/0/value"},
		{name: "mcp argument value", input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":"` + bad + `"}}}`, field: "/params/arguments/q"},
		{name: "mcp argument name", input: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"` + bad + `":"v"}}}]`, field: "/0/params/arguments"},
		{name: "mcp id", input: `{"jsonrpc":"2.0","id":"` + bad + `","method":"tools/call","params":{"name":"t"}}`, field: "/id"},
		{name: "mcp unknown member", input: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"` + bad + `":0}}}`, field: "/params/_meta"},
		{name: "anthropic input value", input: `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"cmd":"` + bad + `"}}]}`, field: "/content/0/input/cmd"},
		{name: "anthropic input name", input: `[{"type":"tool_use","id":"t","name":"n","input":{"` + bad + `":1}}]`, field: "/0/input"},
		{name: "anthropic text block", input: `{"role":"assistant","content":[{"type":"text","text":"` + bad + `"},{"type":"tool_use","id":"t","name":"n","input":{}}]}`, field: "/content/0/text"},
		{name: "openai tool name", input: `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"` + bad + `","arguments":"{}"}}]}`, field: "/tool_calls/0/function/name"},
		{name: "openai arguments string itself", input: `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"` + bad + `"}}]}`, field: "/tool_calls/0/function/arguments"},
		{name: "openai JSON in arguments, value", input: `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{\"path\":\"` + inArgs + `\"}"}}]}`, field: "/tool_calls/0/function/arguments", inner: "at /path"},
		{name: "openai JSON in arguments, name", input: `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{\"a\":{\"` + inArgs + `\":1}}"}}]}}]}`, field: "/choices/0/message/tool_calls/0/function/arguments", inner: "member name in the object at /a"},
		{name: "openai JSON in arguments, responses item", input: `{"output":[{"type":"function_call","call_id":"c","name":"n","arguments":"{\"xs\":[\"ok\",\"` + inArgs + `\"]}"}]}`, field: "/output/0/arguments", inner: "at /xs/1"},
		{name: "openai reasoning item", input: `[{"type":"reasoning","summary":"` + bad + `"},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}]`, field: "/0/summary"},
	}
}

// TestParseRefusesNonIJSON: a lone surrogate anywhere in agent input, in
// any format, member names included, is an *Error wrapping ErrNotIJSON
// that points at the value; ParseToolCall refuses the same inputs.
func TestParseRefusesNonIJSON(t *testing.T) {
	for _, bad := range badEscapes {
		for _, c := range ijsonCases(bad) {
			t.Run(c.name+" "+bad, func(t *testing.T) {
				// The control: the same input with a plain string parses.
				good := strings.ReplaceAll(c.input, strings.ReplaceAll(bad, `\`, `\\`), "ok")
				good = strings.ReplaceAll(good, bad, "ok")
				_, _, err := ParseProposal([]byte(good), FormatAuto)
				require.NoError(t, err, good)

				_, _, err = ParseProposal([]byte(c.input), FormatAuto)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrNotIJSON)
				var e *Error
				require.True(t, errors.As(err, &e))
				assert.Equal(t, c.field, e.Field)
				assert.Contains(t, e.Reason, "lone surrogate")
				if c.inner != "" {
					assert.Contains(t, e.Reason, c.inner)
				}
				assert.NotContains(t, err.Error(), "\ufffd")

				_, _, err = ParseToolCall([]byte(c.input), FormatAuto)
				assert.ErrorIs(t, err, ErrNotIJSON, "ParseToolCall")
			})
		}
	}
}

// TestParseToolCallRefusesNonIJSON: the single-call shapes ParseProposal
// does not read.
func TestParseToolCallRefusesNonIJSON(t *testing.T) {
	tests := []struct{ name, input, field string }{
		{"native value", `{"tool":"t","parameters":{"a":"\ud800"}}`, "/parameters/a"},
		{"native name", `{"tool":"t","parameters":{"\udc00":1}}`, "/parameters"},
		{"native parse_error", `{"tool":"t","parse_error":"\ud800"}`, "/parse_error"},
		{"mcp params", `{"name":"t","arguments":{"a":"\ud800"}}`, "/arguments/a"},
		{"openai call", `{"id":"c","type":"function","function":{"name":"t","arguments":"{\"a\":\"\\udc00\"}"}}`, "/function/arguments"},
		{"openai item", `{"type":"function_call","call_id":"c","name":"t","arguments":"{\"\\ud800\":1}"}`, "/arguments"},
		{"anthropic block", `{"type":"tool_use","id":"i","name":"t","input":{"a":["\ud800"]}}`, "/input/a/0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseToolCall([]byte(tc.input), FormatAuto)
			require.ErrorIs(t, err, ErrNotIJSON)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, tc.field, e.Field)
		})
	}
}

// TestParseKeepsValidEscapes: I-JSON allows every escape that is not a lone
// surrogate; they reach the gates as the agent wrote them.
func TestParseKeepsValidEscapes(t *testing.T) {
	for _, in := range []string{
		`{"actions":[{"tool":"t","parameters":{"e":"\ud83d\ude00","\u00e9":"\\ud800","s":"\/\b"}}]}`,
		`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"{\"e\":\"\\ud83d\\ude00\",\"lit\":\"\\\\ud800\"}"}}]}`,
	} {
		p, _, err := ParseProposal([]byte(in), FormatAuto)
		require.NoError(t, err, in)
		var v map[string]string
		require.NoError(t, json.Unmarshal(p.Actions[0].Parameters, &v))
		assert.Equal(t, "😀", v["e"])
	}
}

// TestParseRefusesInvalidUTF8: bytes that are not UTF-8 are refused
// wherever they are, the JSON in an arguments string included (where they
// can only arrive escaped, and so as lone surrogates).
func TestParseRefusesInvalidUTF8(t *testing.T) {
	for _, in := range []string{
		"{\"actions\":[{\"tool\":\"t\",\"parameters\":{\"a\":\"\xff\"}}]}",
		"{\"actions\":[{\"tool\":\"t\",\"parameters\":{\"\xed\xa0\x80\":1}}]}",
		"[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"a\":\"\xc0\xaf\"}}]",
	} {
		_, _, err := ParseProposal([]byte(in), FormatAuto)
		var e *Error
		require.True(t, errors.As(err, &e), "%q", in)
		assert.Contains(t, e.Reason, "UTF-8")
	}
}
