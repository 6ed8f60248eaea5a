package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

func TestCheckSchemas(t *testing.T) {
	tool := func(name, schema string) catalog.Tool {
		return catalog.Tool{Name: name, InputSchema: []byte(schema)}
	}
	tests := []struct {
		name  string
		tools []catalog.Tool
		// wantTool is the tool the error names; "" means no error.
		wantTool string
		wantMsg  string
	}{
		{name: "none"},
		{name: "all compile", tools: []catalog.Tool{tool("a", `{"type":"object"}`), tool("b", `{"type":"object","properties":{"x":{"type":"string","format":"date"}}}`)}},
		{name: "bad type", tools: []catalog.Tool{tool("a", `{"type":"object"}`), tool("get_me", `{"type":"object","properties":{"x":{"type":5}}}`)},
			wantTool: "get_me", wantMsg: "tool get_me: input_schema does not compile: "},
		{name: "remote reference", tools: []catalog.Tool{tool("fetch", `{"$ref":"https://example.com/s.json"}`)},
			wantTool: "fetch", wantMsg: `remote reference not allowed: "https://example.com/s.json"`},
		{name: "bad pattern", tools: []catalog.Tool{tool("grep", `{"type":"string","pattern":"("}`)},
			wantTool: "grep", wantMsg: "tool grep: input_schema does not compile: "},
		{name: "long name is cut", tools: []catalog.Tool{tool(strings.Repeat("n", 300), `{"type":7}`)},
			wantTool: strings.Repeat("n", 128) + "...", wantMsg: "input_schema does not compile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catalog.CheckSchemas(tt.tools)
			if tt.wantTool == "" {
				require.NoError(t, err)
				return
			}
			var se *catalog.SchemaError
			require.True(t, errors.As(err, &se), "a *SchemaError: %v", err)
			assert.Equal(t, tt.wantTool, se.Tool)
			assert.Contains(t, err.Error(), tt.wantMsg)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}
