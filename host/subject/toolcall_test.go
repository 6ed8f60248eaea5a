package subject

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/ijson"
)

const callDir = "../../testdata/exec/calls"

var callFixtures = map[string]Format{
	"mcp-params":                 FormatMCP,
	"mcp-request":                FormatMCP,
	"openai-tool-call":           FormatOpenAI,
	"openai-function-call-item":  FormatOpenAI,
	"anthropic-tool-use":         FormatAnthropic,
	"anthropic-message-one-call": FormatAnthropic,
	"native":                     FormatNative,
}

func TestToolCallGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(callDir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, len(callFixtures))
	for name, format := range callFixtures {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(callDir, name+".json"))
			require.NoError(t, err)
			c, f, err := ParseToolCall(data, FormatAuto)
			require.NoError(t, err)
			assert.Equal(t, format, f)
			forced, _, err := ParseToolCall(data, format)
			require.NoError(t, err)
			assert.Equal(t, c, forced)
			requireValidToolCall(t, c)
			got, err := json.MarshalIndent(c, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			golden := filepath.Join(callDir, "golden", name+".native.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

func TestParseToolCallRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		in     string
		format Format
		want   string
	}{
		"two calls":         {`[{"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_use","id":"b","name":"y","input":{}}]`, FormatAuto, "holds 2 tool calls"},
		"no name":           {`{"name":"","arguments":{}}`, FormatAuto, "name is required"},
		"case folded key":   {`{"name":"a","Name":"b"}`, FormatAuto, "only in case"},
		"state write":       {`{"actions":[{"type":"state_write"}]}`, FormatAuto, "not a tool call"},
		"not a call":        {`{"hello":1}`, FormatAuto, "unrecognized format"},
		"forced mismatch":   {`{"type":"tool_use","id":"a","name":"x","input":{}}`, FormatOpenAI, ""},
		"bad utf8":          {"{\"name\":\"\xff\"}", FormatAuto, "UTF-8"},
		"native bad params": {`{"tool":"a","parameters":[1]}`, FormatAuto, "parameters must be an object"},
		"unknown format":    {`{"tool":"a"}`, Format("yaml"), "unknown format"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseToolCall([]byte(tc.in), tc.format)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseToolCallBadArgumentsKeepTheCall(t *testing.T) {
	c, _, err := ParseToolCall([]byte(`{"id":"c","type":"function","function":{"name":"create_issue","arguments":"{\"title\": \"secret-value"}}`), FormatAuto)
	require.NoError(t, err)
	assert.Equal(t, "create_issue", c.Tool)
	assert.Empty(t, c.Parameters)
	assert.Contains(t, c.ParseError, "not valid JSON")
	assert.NotContains(t, c.ParseError, "secret-value")
}

func requireValidToolCall(t testing.TB, c abi.ToolCall) {
	t.Helper()
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, abischema.Validate(abi.SchemaToolCall, b), string(b))
	require.NotEmpty(t, c.Tool)
	require.False(t, c.ParseError != "" && len(c.Parameters) > 0, "parameters and parse_error together")
	back, _, err := ParseToolCall(b, FormatNative)
	require.NoError(t, err, string(b))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.Equal(t, string(b), string(again))
}

// FuzzParseToolCall checks that no input panics, that every failure is an
// *Error, and that every success is a valid native tool call that parses
// back to itself.
func FuzzParseToolCall(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(callDir, "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i := range fuzzFormats {
			f.Add(data, uint8(i))
		}
	}
	for _, s := range []string{`{"tool":"a","parameters":{"x":1},"parse_error":"e"}`, `{"name":"a","arguments":7}`,
		`{"type":"function_call","call_id":"c","name":"a","arguments":"[]"}`, `{"type":"tool_use","name":"a"}`, `{}`, `[]`, ``,
		`{"tool":"a","parameters":{"k":"\ud83d\ude00"}}`, `{"name":"a","arguments":{"k":"\udc00"}}`,
		`{"id":"c","type":"function","function":{"name":"a","arguments":"{\"k\":\"\\ud800\"}"}}`,
		`{"type":"function_call","call_id":"c","name":"a","arguments":"{\"\\udbff\\u0041\":1}"}`,
		`{"type":"tool_use","id":"t","name":"a","input":{"k":["\ud800"]}}`} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, fi uint8) {
		c, _, err := ParseToolCall(data, fuzzFormats[int(fi)%len(fuzzFormats)])
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, not *Error", err, err)
			}
			return
		}
		requireValidToolCall(t, c)
		// Whatever the format, a gate never gets a string it could read
		// differently from the tool.
		out, err := json.Marshal(c)
		require.NoError(t, err)
		require.NoError(t, ijson.Check(out), "%q parsed to %s", data, out)
	})
}
