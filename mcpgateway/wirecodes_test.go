package mcpgateway_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// TestErrorsCarryACode: every JSON-RPC error the gateway answers carries a
// JSON-RPC code, never 0 — here those of an upstream that cannot be
// started — and the gateway knows that no upstream was ever up.
func TestErrorsCarryACode(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "gone", Command: []string{"/nonexistent/mcp-server"}}}})
	assert.False(t, g.NoUpstreamEverUp(), "before any start")
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, ct, sessionful)
	require.NoError(t, err)
	defer cs.Close()
	for name, call := range map[string]func() error{
		"prompts/list":   func() error { _, err := cs.ListPrompts(ctx, nil); return err },
		"prompts/get":    func() error { _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"}); return err },
		"resources/list": func() error { _, err := cs.ListResources(ctx, nil); return err },
		"resources/read": func() error { _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///x"}); return err },
		"resources/templates/list": func() error {
			_, err := cs.ListResourceTemplates(ctx, nil)
			return err
		},
		"completion/complete": func() error {
			_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"},
				Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}})
			return err
		},
	} {
		err := call()
		require.Error(t, err, name)
		var je *jsonrpc.Error
		require.True(t, errors.As(err, &je), "%s: %T %v", name, err, err)
		assert.Equal(t, int64(jsonrpc.CodeInternalError), je.Code, "%s: %v", name, err)
	}
	assert.True(t, g.NoUpstreamEverUp())
	assert.Equal(t, "failing", g.Upstreams()[0].State)
}
