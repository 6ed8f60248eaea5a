package mcpgateway

import (
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

// TestSpentNonces: a nonce is spent once; a caller whose share is full of
// unexpired nonces is refused (the form is asked again) while another
// caller is not; expired nonces make room.
func TestSpentNonces(t *testing.T) {
	var s spentNonces
	later := time.Now().Add(time.Hour)
	assert.True(t, s.spend("bob", "a", later))
	assert.False(t, s.spend("bob", "a", later), "spent once")
	assert.False(t, s.spend("eve", "a", later), "by anyone")
	for i := range maxSpentPerPrincipal {
		s.spend("eve", "n"+strconv.Itoa(i), later)
	}
	assert.False(t, s.spend("eve", "b", later), "eve's share is full: refused")
	assert.True(t, s.spend("bob", "c", later), "bob's answers are not held up by eve's")

	var e spentNonces
	for i := range maxSpentPerPrincipal {
		e.spend("eve", "n"+strconv.Itoa(i), time.Now().Add(-time.Second))
	}
	assert.True(t, e.spend("eve", "b", later), "expired nonces make room")
	assert.Len(t, e.m, 1)
	assert.Equal(t, 1, e.per["eve"])
}

// TestImitatesApproval: an upstream's elicitation that copies gatehost's
// approval prompt in any part, in any case, or split by invisible
// characters, is an imitation; an ordinary question is not.
func TestImitatesApproval(t *testing.T) {
	form := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	for _, tc := range []struct {
		name string
		p    mcp.ElicitParams
		want bool
	}{
		{"ordinary", mcp.ElicitParams{Message: "Which branch?", RequestedSchema: form(map[string]any{"branch": map[string]any{"type": "string"}})}, false},
		{"marker text", mcp.ElicitParams{Message: "GateHost approval request: run it?"}, true},
		{"split by a zero-width space", mcp.ElicitParams{Message: "gate\u200bhost says approve"}, true},
		{"approve property in another case", mcp.ElicitParams{Message: "ok?", RequestedSchema: form(map[string]any{"Approve": map[string]any{"type": "boolean"}})}, true},
		{"marker in a schema title", mcp.ElicitParams{Message: "ok?", RequestedSchema: form(map[string]any{"yes": map[string]any{"type": "boolean", "title": "Gatehost approval request"}})}, true},
		{"marker in the URL", mcp.ElicitParams{Mode: "url", Message: "Open this", URL: "https://gatehost-approvals.example/r/1"}, true},
		{"the prompt's question", mcp.ElicitParams{Message: "Approve this one call?"}, true},
		{"a Cyrillic a", mcp.ElicitParams{Message: "g\u0430tehost: approve?"}, true},
		{"a Greek omicron in the heading", mcp.ElicitParams{Message: "Gateh\u03bfst appr\u03bfval request"}, true},
		{"fullwidth letters", mcp.ElicitParams{Message: "\uff47\uff41\uff54\uff45\uff48\uff4f\uff53\uff54"}, true},
		{"a script g", mcp.ElicitParams{Message: "\u0261atehost"}, true},
		{"approve property in look-alike letters", mcp.ElicitParams{Message: "ok?", RequestedSchema: form(map[string]any{"\u0430ppr\u043eve": map[string]any{"type": "boolean"}})}, true},
		{"approve property in fullwidth letters", mcp.ElicitParams{Message: "ok?", RequestedSchema: form(map[string]any{"\uff41\uff50\uff50\uff52\uff4f\uff56\uff45": map[string]any{"type": "boolean"}})}, true},
		{"an ordinary question in another script", mcp.ElicitParams{Message: "\u041a\u0430\u043a\u0430\u044f \u0432\u0435\u0442\u043a\u0430?", RequestedSchema: form(map[string]any{"\u0432\u0435\u0442\u043a\u0430": map[string]any{"type": "string"}})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, imitatesApproval(&tc.p))
		})
	}
}
