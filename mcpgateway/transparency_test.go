package mcpgateway_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// recorder is a client that records what servers ask of it.
type recorder struct {
	mu       sync.Mutex
	sampled  []string
	elicited []string
	progress []float64
	logs     []string
	// progressed is signalled per progress notification: notifications
	// are handled on their own goroutines, so one may arrive after the
	// result of the call it reports on.
	progressed chan struct{}
}

func (r *recorder) options() *mcp.ClientOptions {
	r.progressed = make(chan struct{}, 64)
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.sampled = append(r.sampled, req.Params.SystemPrompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled answer"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.elicited = append(r.elicited, req.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, req.Params.Progress)
			r.progressed <- struct{}{}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, string(req.Params.Level))
		},
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestTransparency: @modelcontextprotocol/server-everything answers the
// same through the gateway as directly, for every method that is not
// tools/call; and what it asks of the client (sampling, elicitation,
// progress) reaches the client through the gateway.
func TestTransparency(t *testing.T) {
	bin := nodeServer(t, "mcp-server-everything")
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, (&recorder{}).options()).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })

	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "everything", Command: []string{bin}}}, ActivateOnList: []string{"*"}})
	rec := &recorder{}
	gw := connect(t, g, rec.options())

	assert.Equal(t, direct.InitializeResult().ServerInfo.Name, gw.InitializeResult().ServerInfo.Name)
	assert.Equal(t, asJSON(t, direct.InitializeResult().Capabilities.Resources), asJSON(t, gw.InitializeResult().Capabilities.Resources))
	assert.Equal(t, direct.InitializeResult().Instructions, gw.InitializeResult().Instructions)

	require.NoError(t, gw.Ping(ctx, nil))
	for _, tc := range []struct {
		name string
		do   func(cs *mcp.ClientSession) (any, error)
	}{
		{"resources/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResources(ctx, nil) }},
		{"resources/templates/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResourceTemplates(ctx, nil) }},
		{"resources/read", func(cs *mcp.ClientSession) (any, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
		}},
		{"prompts/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListPrompts(ctx, nil) }},
		{"prompts/get", func(cs *mcp.ClientSession) (any, error) {
			return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"})
		}},
		{"completion/complete", func(cs *mcp.ClientSession) (any, error) {
			return cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
				Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"}})
		}},
		{"logging/setLevel", func(cs *mcp.ClientSession) (any, error) {
			return nil, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := tc.do(direct)
			got, gerr := tc.do(gw)
			require.NoError(t, werr)
			require.NoError(t, gerr)
			assert.JSONEq(t, asJSON(t, want), asJSON(t, got))
		})
	}

	_, err = gw.ListTools(ctx, nil) // activates the listed tools (ActivateOnList)
	require.NoError(t, err)
	t.Run("sampling from the server", func(t *testing.T) {
		r := call(t, gw, "trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})
		require.False(t, r.IsError, text(r))
		assert.Contains(t, text(r), "sampled answer")
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Len(t, rec.sampled, 1)
	})
	t.Run("elicitation from the server", func(t *testing.T) {
		r := call(t, gw, "trigger-elicitation-request", map[string]any{})
		require.False(t, r.IsError, text(r))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Len(t, rec.elicited, 1)
	})
	t.Run("progress", func(t *testing.T) {
		res, err := gw.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"progressToken": "p1"},
			Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.1, "steps": 2}})
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		// Both reach the client; the bound only ends a hang.
		for range 2 {
			select {
			case <-rec.progressed:
			case <-time.After(time.Minute):
				t.Fatal("a progress notification never reached the client")
			}
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.ElementsMatch(t, []float64{1, 2}, rec.progress)
	})
}
