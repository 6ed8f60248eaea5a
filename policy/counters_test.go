package policy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestSessionSchema: context.session type-checks with the declared
// windows only, and a set naming it is decided only with the counts.
func TestSessionSchema(t *testing.T) {
	tools := []abi.Tool{{ID: "mcp.fs:write_file", Name: "write_file", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	s, err := NewSchema(tools, Options{Windows: []string{"60m"}})
	require.NoError(t, err)
	limit := `forbid (principal, action, resource) when { context.session.window["1h"].calls["mcp.fs:write_file"] >= 20 };
permit (principal, action, resource) when { context.session.calls["mcp.fs:write_file"] < 100 && context.session.principal.window["1h"].calls["mcp.fs:write_file"] < 50 };`
	set, err := Parse([]Source{{Text: limit}})
	require.NoError(t, err)
	assert.Empty(t, s.Validate(set))
	assert.True(t, set.UsesSession())

	undeclared, err := Parse([]Source{{Text: `forbid (principal, action, resource) when { context.session.window["1d"].calls["mcp.fs:write_file"] >= 20 };`}})
	require.NoError(t, err)
	assert.NotEmpty(t, s.Validate(undeclared), "a window not declared is refused")
	unknownTool, err := Parse([]Source{{Text: `forbid (principal, action, resource) when { context.session.calls["mcp.fs:nope"] >= 20 };`}})
	require.NoError(t, err)
	assert.NotEmpty(t, s.Validate(unknownTool), "a tool not in the catalog is refused")

	eng := NewEngine(set, Options{Windows: []string{"1h"}})
	call := Call{Tool: tools[0], Now: time.Now()}
	counts := func(hour int64) *Counts {
		w := map[string]abi.CounterWindow{"1h": {Calls: map[string]int64{"mcp.fs:write_file": hour}}}
		return &Counts{Calls: map[string]int64{"mcp.fs:write_file": hour}, Windows: w, Principal: w}
	}
	call.Counts = counts(19)
	assert.Equal(t, Allow, eng.Evaluate(call).Decision)
	call.Counts = counts(20)
	assert.Equal(t, Deny, eng.Evaluate(call).Decision)
	call.Counts = nil
	r := eng.Evaluate(call)
	assert.Equal(t, Error, r.Decision)
	assert.Equal(t, CodeCountersUnavailable, r.Errors[0].Code)

	plain, err := Parse([]Source{{Text: `permit (principal, action, resource);`}})
	require.NoError(t, err)
	assert.False(t, plain.UsesSession())
	assert.Equal(t, Allow, NewEngine(plain, Options{}).Evaluate(call).Decision, "no counts needed")
	assert.Error(t, ValidateOptions(Options{Windows: []string{"0s"}}))
}
