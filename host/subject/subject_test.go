package subject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehost/gatehost/internal/abischema"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// want is the part of an action a table checks.
type want struct {
	id, tool, params, parseError string
}

func actionsOf(p abi.Proposal) []want {
	out := make([]want, len(p.Actions))
	for i, a := range p.Actions {
		out[i] = want{a.ID, a.Tool, string(a.Parameters), a.ParseError}
	}
	return out
}

func TestParseProposalFormats(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		format Format
		want   []want
	}{
		{
			name:   "native",
			in:     `{"id":"p1","actions":[{"id":"a","type":"tool_call","tool":"get_me","parameters":{}}]}`,
			format: FormatNative,
			want:   []want{{"a", "get_me", `{}`, ""}},
		},
		{
			name:   "native without parameters keeps them absent",
			in:     `{"actions":[{"tool":"get_me"}]}`,
			format: FormatNative,
			want:   []want{{"", "get_me", "", ""}},
		},
		{
			name:   "native with no actions",
			in:     `{"actions":[]}`,
			format: FormatNative,
			want:   []want{},
		},
		{
			name:   "native with unknown members",
			in:     `{"actions":[{"tool":"get_me","note":"x"}],"trace":{"span":1}}`,
			format: FormatNative,
			want:   []want{{"", "get_me", "", ""}},
		},
		{
			name: "mcp list",
			in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me"}},
				{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"list_issues","arguments":{"owner":"o","repo":"r"}}},
				{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"get_me","arguments":null}}]`,
			format: FormatMCP,
			want: []want{
				{"1", "get_me", `{}`, ""},
				{"two", "list_issues", `{"owner":"o","repo":"r"}`, ""},
				{"-3", "get_me", `{}`, ""},
			},
		},
		{
			name:   "mcp single request",
			in:     `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_me","arguments":{}}}`,
			format: FormatMCP,
			want:   []want{{"9", "get_me", `{}`, ""}},
		},
		{
			name: "openai assistant message",
			in: `{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_me","arguments":""}},
				{"id":"call_2","type":"function","function":{"name":"list_issues","arguments":" {\"owner\":\"o\", \"repo\":\"r\"} "}}]}`,
			format: FormatOpenAI,
			want: []want{
				{"call_1", "get_me", `{}`, ""},
				{"call_2", "list_issues", `{"owner":"o", "repo":"r"}`, ""},
			},
		},
		{
			name: "openai chat completion reads the first choice",
			in: `{"id":"chatcmpl-1","object":"chat.completion","choices":[
				{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_me","arguments":"{}"}}]}},
				{"index":1,"message":{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"delete_repository","arguments":"{}"}}]}}]}`,
			format: FormatOpenAI,
			want:   []want{{"c1", "get_me", `{}`, ""}},
		},
		{
			name: "openai responses output list",
			in: `[{"type":"reasoning","id":"rs_1","summary":[]},
				{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_me","arguments":"{}"},
				{"type":"function_call","id":"fc_2","name":"get_me","arguments":"{}"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}]`,
			format: FormatOpenAI,
			want:   []want{{"call_1", "get_me", `{}`, ""}, {"fc_2", "get_me", `{}`, ""}},
		},
		{
			name:   "openai responses object",
			in:     `{"id":"resp_1","object":"response","output":[{"type":"function_call","call_id":"call_1","name":"get_me","arguments":"{}"}]}`,
			format: FormatOpenAI,
			want:   []want{{"call_1", "get_me", `{}`, ""}},
		},
		{
			name:   "openai bare tool_calls list",
			in:     `[{"id":"call_1","type":"function","function":{"name":"get_me","arguments":"{}"}}]`,
			format: FormatOpenAI,
			want:   []want{{"call_1", "get_me", `{}`, ""}},
		},
		{
			name: "anthropic message",
			in: `{"id":"msg_1","type":"message","role":"assistant","content":[
				{"type":"thinking","thinking":"...","signature":"x"},
				{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"toolu_1","name":"list_issues","input":{"owner":"o","repo":"r"}}]}`,
			format: FormatAnthropic,
			want:   []want{{"toolu_1", "list_issues", `{"owner":"o","repo":"r"}`, ""}},
		},
		{
			name:   "anthropic bare content",
			in:     `[{"type":"tool_use","id":"toolu_1","name":"get_me","input":{}}]`,
			format: FormatAnthropic,
			want:   []want{{"toolu_1", "get_me", `{}`, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f, err := ParseProposal([]byte(tt.in), FormatAuto)
			require.NoError(t, err)
			assert.Equal(t, tt.format, f)
			assert.Equal(t, tt.want, actionsOf(p))
			if tt.format != FormatNative {
				for _, a := range p.Actions {
					assert.Equal(t, abi.ActionToolCall, a.Type)
				}
			}
			requireValidNative(t, p)

			// Forcing the detected format gives the same result.
			forced, f, err := ParseProposal([]byte(tt.in), tt.format)
			require.NoError(t, err)
			assert.Equal(t, tt.format, f)
			assert.Equal(t, p, forced)
		})
	}
}

func TestParseProposalForcedMismatch(t *testing.T) {
	native := `{"actions":[{"tool":"get_me"}]}`
	mcp := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me"}}]`
	openai := `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"get_me","arguments":"{}"}}]}`
	anthropic := `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"get_me","input":{}}]}`
	tests := []struct {
		in     string
		forced Format
		looks  Format
	}{
		{native, FormatOpenAI, FormatNative},
		{native, FormatMCP, FormatNative},
		{mcp, FormatNative, FormatMCP},
		{mcp, FormatAnthropic, FormatMCP},
		{openai, FormatAnthropic, FormatOpenAI},
		{anthropic, FormatOpenAI, FormatAnthropic},
		{anthropic, FormatNative, FormatAnthropic},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s as %s", tt.looks, tt.forced), func(t *testing.T) {
			_, f, err := ParseProposal([]byte(tt.in), tt.forced)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.forced, f)
			assert.Equal(t, tt.forced, e.Format)
			assert.Equal(t, -1, e.Index)
			assert.Contains(t, e.Error(), fmt.Sprintf("looks like %s, not %s", tt.looks, tt.forced))
		})
	}

	// Input no format claims is handed to the forced parser, which says
	// what it is missing.
	_, _, err := ParseProposal([]byte(`{}`), FormatNative)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Reason, "actions")
}

func TestParseProposalErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		format Format
		// What the *Error must say.
		errFormat Format
		index     int
		field     string
		reason    string
		is        error
	}{
		{name: "not JSON", in: `{"actions": [}`, errFormat: FormatAuto, index: -1, reason: "invalid JSON"},
		{name: "trailing data", in: `{"actions": []} {}`, errFormat: FormatAuto, index: -1, reason: "invalid JSON"},
		{name: "empty", in: " \n", errFormat: FormatAuto, index: -1, reason: "input is empty"},
		{name: "scalar", in: `"tool_calls"`, errFormat: FormatAuto, index: -1, reason: "want an object or an array"},
		{name: "invalid UTF-8", in: "{\"actions\":[{\"tool\":\"\xff\"}]}", errFormat: FormatAuto, index: -1, reason: "UTF-8"},
		{name: "unknown format", in: `{"actions":[]}`, format: "xml", errFormat: "xml", index: -1, reason: "unknown format"},
		{name: "unrecognized object", in: `{"tool":"get_me"}`, errFormat: FormatAuto, index: -1, reason: "unrecognized format"},
		{name: "unrecognized list", in: `[1, 2]`, errFormat: FormatAuto, index: -1, reason: "unrecognized format"},
		{name: "empty list", in: `[]`, errFormat: FormatAuto, index: -1, reason: "no tool calls", is: ErrNoToolCalls},
		{
			name: "ambiguous native and openai", errFormat: FormatAuto, index: -1, reason: "ambiguous format",
			in: `{"actions":[],"tool_calls":[{"id":"c","type":"function","function":{"name":"delete_repository"}}]}`,
		},
		{
			name: "ambiguous list", errFormat: FormatAuto, index: -1, reason: "ambiguous format",
			in: `[{"type":"tool_use","id":"t","name":"a","input":{}},{"type":"function_call","call_id":"c","name":"b"}]`,
		},

		// native
		{name: "native actions not array", in: `{"actions":{}}`, errFormat: FormatNative, index: -1, field: "/actions", reason: "expected array"},
		{name: "native action not object", in: `{"actions":[{"tool":"a"},1]}`, errFormat: FormatNative, index: 1, field: "/actions/1", reason: "expected object"},
		{name: "native bad type", in: `{"actions":[{"tool":"a","type":"shell"}]}`, errFormat: FormatNative, index: 0, field: "/actions/0/type"},
		{name: "native parameters not object", in: `{"actions":[{"tool":"a","parameters":"{}"}]}`, errFormat: FormatNative, index: 0, field: "/actions/0/parameters", reason: "expected object"},
		{name: "native negative depends_on", in: `{"actions":[{"tool":"a","depends_on":[-1]}]}`, errFormat: FormatNative, index: 0, field: "/actions/0/depends_on/0"},
		{name: "native precondition without key", in: `{"actions":[{"tool":"a","preconditions":[{"value":1}]}]}`, errFormat: FormatNative, index: 0, field: "/actions/0/preconditions/0", reason: "key"},
		{name: "native integer too large for Go", in: `{"actions":[{"tool":"a"},{"tool":"b","max_retries":1e30}]}`, errFormat: FormatNative, index: 1, field: "/actions/1/max_retries", reason: "does not fit"},
		{name: "native integral float", in: `{"actions":[{"tool":"a","depends_on":[1.0]}]}`, errFormat: FormatNative, index: 0, field: "/actions/0/depends_on", reason: "does not fit"},
		{name: "native native list", in: `[{"actions":[]}]`, format: FormatNative, errFormat: FormatNative, index: -1, reason: "must be an object"},
		{
			name: "native case-folded actions", errFormat: FormatNative, index: -1, field: "/Actions", reason: "only in case",
			in: `{"actions":[],"Actions":[{"tool":"delete_repository"}]}`,
		},
		{
			name: "native case-folded tool", errFormat: FormatNative, index: 0, field: "/actions/0/TOOL", reason: "only in case",
			in: `{"actions":[{"tool":"get_me","TOOL":"delete_repository"}]}`,
		},
		{
			name: "native Kelvin-sign key", errFormat: FormatNative, index: 0, field: "/actions/0/preconditions/0/\u212aey", reason: "only in case",
			in: `{"actions":[{"tool":"a","preconditions":[{"key":"x","\u212aey":"y"}]}]}`,
		},

		// mcp
		{
			name: "mcp other method", errFormat: FormatMCP, index: 1, field: "/1/method", reason: `"tools/list" is not tools/call`,
			in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		},
		{name: "mcp single other method", in: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`, errFormat: FormatMCP, index: 0, field: "/method"},
		{name: "mcp missing id", in: `[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}]`, errFormat: FormatMCP, index: 0, field: "/0/id", reason: "required"},
		{name: "mcp null id", in: `[{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}]`, errFormat: FormatMCP, index: 0, field: "/0/id", reason: "got null"},
		{name: "mcp fractional id", in: `[{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"a"}}]`, errFormat: FormatMCP, index: 0, field: "/0/id"},
		{name: "mcp wrong version", in: `[{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}]`, errFormat: FormatMCP, index: 0, field: "/0/jsonrpc"},
		{name: "mcp no params", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`, errFormat: FormatMCP, index: 0, field: "/0/params", reason: "must be an object"},
		{name: "mcp no name", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}]`, errFormat: FormatMCP, index: 0, field: "/0/params/name", reason: "required"},
		{name: "mcp numeric name", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}]`, errFormat: FormatMCP, index: 0, field: "/0/params/name", reason: "must be a string"},
		{name: "mcp element not object", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},"x"]`, errFormat: FormatMCP, index: 1, field: "/1"},
		{name: "mcp case-folded name", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me","Name":"x"}}]`, errFormat: FormatMCP, index: 0, field: "/0/params/Name"},

		// openai
		{name: "openai tool_calls not array", in: `{"role":"assistant","tool_calls":{}}`, errFormat: FormatOpenAI, index: -1, field: "/tool_calls"},
		{name: "openai no function name", in: `{"tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}`, errFormat: FormatOpenAI, index: 0, field: "/tool_calls/0/function/name", reason: "required"},
		{name: "openai no function", in: `{"tool_calls":[{"id":"c","type":"function"}]}`, errFormat: FormatOpenAI, index: 0, field: "/tool_calls/0/function", reason: "must be an object"},
		{name: "openai custom tool call", in: `{"tool_calls":[{"id":"c","type":"custom","custom":{"name":"a","input":"x"}}]}`, errFormat: FormatOpenAI, index: 0, field: "/tool_calls/0/type"},
		{name: "openai numeric id", in: `{"tool_calls":[{"id":3,"function":{"name":"a"}}]}`, errFormat: FormatOpenAI, index: 0, field: "/tool_calls/0/id"},
		{name: "openai user role", in: `{"role":"user","tool_calls":[]}`, errFormat: FormatOpenAI, index: -1, field: "/role"},
		{name: "openai legacy function_call", in: `{"role":"assistant","function_call":{"name":"a","arguments":"{}"}}`, errFormat: FormatOpenAI, index: -1, field: "/function_call"},
		{name: "text only", in: `{"role":"assistant","content":"Hello."}`, errFormat: FormatAuto, index: -1, reason: "no tool calls", is: ErrNoToolCalls},
		{name: "openai null tool_calls", in: `{"role":"assistant","content":"Hi","tool_calls":null}`, errFormat: FormatOpenAI, index: -1, is: ErrNoToolCalls},
		{name: "openai no choices", in: `{"choices":[]}`, errFormat: FormatOpenAI, index: -1, field: "/choices", is: ErrNoToolCalls},
		{name: "openai choice without message", in: `{"choices":[{"index":0}]}`, errFormat: FormatOpenAI, index: -1, field: "/choices/0/message"},
		{name: "openai choices and tool_calls", in: `{"choices":[],"tool_calls":[]}`, errFormat: FormatOpenAI, index: -1, reason: "ambiguous"},
		{
			name: "openai unsupported output item", errFormat: FormatOpenAI, index: 1, field: "/1/type", reason: `"local_shell_call"`,
			in: `[{"type":"function_call","call_id":"c","name":"a","arguments":"{}"},{"type":"local_shell_call","action":{"command":["rm","-rf","/"]}}]`,
		},
		{name: "openai reasoning only", in: `{"output":[{"type":"reasoning","summary":[]}]}`, errFormat: FormatOpenAI, index: -1, is: ErrNoToolCalls},

		// anthropic
		{
			name: "anthropic server tool", errFormat: FormatAnthropic, index: 1, field: "/content/1/type", reason: `"server_tool_use"`,
			in: `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{}},{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`,
		},
		{name: "anthropic no name", in: `{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}`, errFormat: FormatAnthropic, index: 0, field: "/content/0/name"},
		{name: "anthropic block not object", in: `[{"type":"tool_use","id":"t","name":"a","input":{}},null]`, errFormat: FormatAnthropic, index: 1, field: "/1"},
		{name: "anthropic text only", in: `{"role":"assistant","content":[{"type":"text","text":"Done."}]}`, errFormat: FormatAnthropic, index: -1, is: ErrNoToolCalls},
		{name: "anthropic string content", in: `{"role":"assistant","content":"Done."}`, format: FormatAnthropic, errFormat: FormatAnthropic, index: -1, is: ErrNoToolCalls},
		{name: "openai string content", in: `{"role":"assistant","content":"Done."}`, format: FormatOpenAI, errFormat: FormatOpenAI, index: -1, is: ErrNoToolCalls},
		{name: "anthropic user role", in: `{"role":"user","content":[{"type":"tool_use","id":"t","name":"a","input":{}}]}`, errFormat: FormatAnthropic, index: -1, field: "/role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f, err := ParseProposal([]byte(tt.in), tt.format)
			var e *Error
			require.ErrorAs(t, err, &e, "got proposal %+v", p)
			assert.Equal(t, abi.Proposal{}, p)
			assert.Equal(t, tt.errFormat, f, "returned format")
			assert.Equal(t, tt.errFormat, e.Format, "Error.Format")
			assert.Equal(t, tt.index, e.Index, "Error.Index")
			assert.Equal(t, tt.field, e.Field, "Error.Field")
			assert.Contains(t, e.Reason, tt.reason)
			if tt.field != "" {
				assert.Contains(t, e.Error(), tt.field+": ", "Error() names the field")
			}
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestParseProposalJSONErrorIsWrapped(t *testing.T) {
	_, _, err := ParseProposal([]byte(`[{"jsonrpc":"2.0",}]`), FormatAuto)
	var se *json.SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "at offset")
}

func TestParseProposalTooLarge(t *testing.T) {
	// A valid proposal one byte over the cap.
	head, tail := `{"actions":[],"pad":"`, `"}`
	data := []byte(head + strings.Repeat("x", DefaultMaxBytes+1-len(head)-len(tail)) + tail)
	require.Len(t, data, DefaultMaxBytes+1)
	_, _, err := ParseProposal(data, FormatAuto)
	require.ErrorIs(t, err, ErrTooLarge)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, -1, e.Index)

	// At the cap it parses.
	data = append(data[:len(data)-len(tail)-1], tail...)
	p, f, err := ParseProposal(data, FormatAuto)
	require.NoError(t, err)
	assert.Equal(t, FormatNative, f)
	assert.Empty(t, p.Actions)
}

// Bad arguments never fail the parse: the action carries ParseError so that a
// gate blocks that action by name.
func TestParseProposalBadArguments(t *testing.T) {
	openai := func(args string) string {
		return `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"create_issue","arguments":` + args + `}}]}`
	}
	tests := []struct {
		name, in, parseError, params string
	}{
		{name: "openai not JSON", in: openai(`"{\"owner\": \"o\", \"title\": \"cut sho"`), parseError: "arguments is not valid JSON"},
		{name: "openai two values", in: openai(`"{}{}"`), parseError: "arguments is not valid JSON"},
		{name: "openai array", in: openai(`"[1,2]"`), parseError: "must encode a JSON object, got array"},
		{name: "openai number", in: openai(`"42"`), parseError: "must encode a JSON object, got number"},
		{name: "openai null string", in: openai(`"null"`), parseError: "must encode a JSON object, got null"},
		{name: "openai object not string", in: openai(`{"owner":"o"}`), parseError: "must be a JSON string, got object"},
		{name: "openai empty", in: openai(`""`), params: `{}`},
		{name: "openai blank", in: openai(`"  \n"`), params: `{}`},
		{name: "openai absent", in: `{"tool_calls":[{"id":"call_1","function":{"name":"create_issue"}}]}`, params: `{}`},
		{name: "responses not JSON", in: `[{"type":"function_call","call_id":"call_1","name":"create_issue","arguments":"{oops"}]`, parseError: "not valid JSON"},
		{name: "mcp array arguments", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":[1]}}]`, parseError: "arguments must be a JSON object, got array"},
		{name: "mcp string arguments", in: `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":"{}"}}]`, parseError: "got string"},
		{name: "anthropic string input", in: `[{"type":"tool_use","id":"call_1","name":"create_issue","input":"{}"}]`, parseError: "input must be a JSON object, got string"},
		{name: "anthropic null input", in: `[{"type":"tool_use","id":"call_1","name":"create_issue","input":null}]`, parseError: "got null"},
		{name: "anthropic missing input", in: `[{"type":"tool_use","id":"call_1","name":"create_issue"}]`, parseError: "input is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := ParseProposal([]byte(tt.in), FormatAuto)
			require.NoError(t, err)
			require.Len(t, p.Actions, 1)
			a := p.Actions[0]
			assert.Equal(t, "create_issue", a.Tool)
			assert.NotEmpty(t, a.ID)
			if tt.parseError == "" {
				assert.Empty(t, a.ParseError)
				assert.Equal(t, tt.params, string(a.Parameters))
			} else {
				assert.Contains(t, a.ParseError, tt.parseError)
				assert.Nil(t, a.Parameters, "Parameters is absent when ParseError is set")
			}
			requireValidNative(t, p)
		})
	}
}

// Parameters keep the agent's bytes: white space, key order, duplicate keys
// and numbers beyond float64 all reach the gates as sent.
func TestParseProposalParametersByteExact(t *testing.T) {
	const args = `{ "b" : 1.000000000000000000001,"a":[ 1 , 2e300 ], "s":"\u00e9\n" }`
	inputs := map[string]string{
		"native":    `{"actions":[{"tool":"t","parameters":` + args + `}]}`,
		"mcp":       `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":` + args + `}}]`,
		"anthropic": `[{"type":"tool_use","id":"x","name":"t","input":` + args + `}]`,
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			p, _, err := ParseProposal([]byte(in), FormatAuto)
			require.NoError(t, err)
			require.Len(t, p.Actions, 1)
			assert.Equal(t, args, string(p.Actions[0].Parameters))
		})
	}
	t.Run("openai decodes the string once", func(t *testing.T) {
		quoted, err := json.Marshal(args)
		require.NoError(t, err)
		in := `{"tool_calls":[{"id":"x","type":"function","function":{"name":"t","arguments":` + string(quoted) + `}}]}`
		p, _, err := ParseProposal([]byte(in), FormatAuto)
		require.NoError(t, err)
		assert.Equal(t, args, string(p.Actions[0].Parameters))
	})
	t.Run("parameters do not alias the input", func(t *testing.T) {
		in := []byte(inputs["mcp"])
		p, _, err := ParseProposal(in, FormatAuto)
		require.NoError(t, err)
		for i := range in {
			in[i] = ' '
		}
		assert.Equal(t, args, string(p.Actions[0].Parameters))
	})
}

// Free-form native values keep their numbers exact through a re-encoding.
func TestParseProposalNativeNumbers(t *testing.T) {
	in := `{"actions":[{"tool":"t","expected_effects":{"n":12345678901234567890123},` +
		`"preconditions":[{"key":"k","operator":"gt","value":0.10000000000000000001}]}],"context":{"max":1e300}}`
	p, _, err := ParseProposal([]byte(in), FormatAuto)
	require.NoError(t, err)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	for _, n := range []string{"12345678901234567890123", "0.10000000000000000001", "1e300"} {
		assert.Contains(t, string(out), n)
	}
	// Beyond a double's range the schema validator fails (or panics), so
	// such numbers are refused at the edge.
	for _, n := range []string{"1e400", "1e9999999", "-1e400"} {
		_, _, err := ParseProposal([]byte(`{"actions":[],"context":{"max":`+n+`}}`), FormatAuto)
		assert.Error(t, err, n)
	}
}

// Duplicate member names anywhere in the input are refused: parsers that
// keep the first value would read another tool or other arguments.
func TestDuplicateMembersRefused(t *testing.T) {
	for _, in := range []string{
		`{"actions":[{"tool":"delete_file","tool":"get_me"}]}`,
		`{"actions":[{"tool":"x","parameters":{"a":1,"a":2}}]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}]`,
		`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"a","name":"b","arguments":"{}"}}]}`,
		`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"a","input":{"k":1,"\u212a":2}}]}`,
	} {
		_, _, err := ParseProposal([]byte(in), FormatAuto)
		assert.ErrorIs(t, err, abischema.ErrMemberName, in)
	}
	for _, in := range []string{
		`{"tool":"merge_pull_request","parameters":{},"tool":"create_pull_request"}`,
		`{"name":"merge_pull_request","name":"create_pull_request","arguments":{}}`,
	} {
		_, _, err := ParseToolCall([]byte(in), FormatAuto)
		assert.ErrorIs(t, err, abischema.ErrMemberName, in)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Format: FormatMCP, Index: 2, Field: "/2/method", Reason: `method "tools/list" is not tools/call`}
	assert.Equal(t, `subject mcp [2]: /2/method: method "tools/list" is not tools/call`, e.Error())
	e = &Error{Index: -1, Reason: "input is empty"}
	assert.Equal(t, "subject: input is empty", e.Error())
	e = &Error{Index: -1, Reason: "too large", Err: ErrTooLarge}
	assert.ErrorIs(t, e, ErrTooLarge)
}

// requireValidNative checks that p re-encodes to a document the native
// schema accepts, and that parsing that document again is the identity.
func requireValidNative(t testing.TB, p abi.Proposal) {
	t.Helper()
	out, err := json.Marshal(p)
	require.NoError(t, err)
	var doc any
	require.NoError(t, decodeNumbers(out, &doc))
	require.NoError(t, abischema.ValidateValue(abi.SchemaProposal, doc), "%s", out)

	again, f, err := ParseProposal(out, FormatNative)
	require.NoError(t, err, "%s", out)
	require.Equal(t, FormatNative, f)
	out2, err := json.Marshal(again)
	require.NoError(t, err)
	require.True(t, bytes.Equal(out, out2), "re-parse changed\n%s\nto\n%s", out, out2)
}

func TestMain(m *testing.M) {
	// A broken embedded schema would make every native parse fail; say so
	// once instead.
	if err := abischema.ValidateValue(abi.SchemaProposal, map[string]any{"actions": []any{}}); err != nil {
		panic(errors.Join(errors.New("compiling the proposal schema"), err))
	}
	m.Run()
}

func TestParseProposalMaxActions(t *testing.T) {
	list := func(n int, elem string) string {
		return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
	}
	const (
		action  = `{"tool":"get_me"}`
		request = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me"}}`
		call    = `{"id":"c","type":"function","function":{"name":"get_me","arguments":"{}"}}`
		block   = `{"type":"tool_use","id":"t","name":"get_me","input":{}}`
	)
	inputs := map[string]struct {
		in    func(n int) string
		field string
	}{
		"native":           {func(n int) string { return `{"actions":[` + list(n, action) + `]}` }, "/actions"},
		"mcp":              {func(n int) string { return `[` + list(n, request) + `]` }, ""},
		"openai":           {func(n int) string { return `{"role":"assistant","tool_calls":[` + list(n, call) + `]}` }, "/tool_calls"},
		"openai choices":   {func(n int) string { return `{"choices":[` + list(n, `{"message":{"tool_calls":[`+call+`]}}`) + `]}` }, "/choices"},
		"openai output":    {func(n int) string { return `{"output":[` + list(n, `{"type":"reasoning"}`) + `,` + call + `]}` }, "/output"},
		"anthropic":        {func(n int) string { return `{"role":"assistant","content":[` + list(n, block) + `]}` }, "/content"},
		"anthropic blocks": {func(n int) string { return `[` + list(n, `{"type":"text","text":"a, [b]"}`) + `,` + block + `]` }, ""},
	}
	for name, tt := range inputs {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseProposal([]byte(tt.in(MaxActions-1)), FormatAuto)
			require.NoError(t, err)

			_, _, err = ParseProposal([]byte(tt.in(MaxActions+1)), FormatAuto)
			require.ErrorIs(t, err, ErrTooLarge)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.field, e.Field)
		})
	}
}

func TestCountElems(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{`[]`, 0},
		{" [ \n ] ", 0},
		{`[1]`, 1},
		{`[{}, []]`, 2},
		{`["a,b", "[", {"x": [1, 2]}, "\"", "\\", "\\\"],"]`, 6},
		{`[[1, 2], {"a": 1, "b": [3, 4]}, null]`, 3},
		{`{"a": 1}`, 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, countElems([]byte(tt.in), 100), tt.in)
		var list []json.RawMessage
		if json.Unmarshal([]byte(tt.in), &list) == nil {
			assert.Len(t, list, tt.want, tt.in)
		}
	}
	assert.Equal(t, 4, countElems([]byte(`[1,2,3,4,5,6]`), 3), "stops past the limit")
}

func TestQuoteCutsLongValues(t *testing.T) {
	assert.Equal(t, `"tools/list"`, quote("tools/list"))
	long := strings.Repeat("é", 100) // 2 bytes each: the cut falls mid-rune
	q := quote(long)
	assert.True(t, strings.HasSuffix(q, `"...`), q)
	assert.LessOrEqual(t, len(q), 64+5)
	assert.True(t, utf8.ValidString(q))

	_, _, err := ParseProposal([]byte(`[{"jsonrpc":"2.0","id":1,"method":"`+strings.Repeat("x", 10000)+`"}]`), FormatAuto)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200)
}
