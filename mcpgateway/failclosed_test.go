package mcpgateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// listChanged returns client options whose tools/list_changed handler
// signals on the channel, for waiting on the gateway's re-list.
func listChanged() (*mcp.ClientOptions, chan struct{}) {
	ch := make(chan struct{}, 16)
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		ch <- struct{}{}
	}}, ch
}

// TestRugPull: a tool granted to the session that changes its schema or
// downgrades its annotations afterwards is denied (drift) until an
// operator grants it again; listing the tools again does not re-grant it.
func TestRugPull(t *testing.T) {
	for _, tc := range []struct {
		mode string
		code string
	}{
		{"schema", "tool_drifted"},
		{"annotations", "tool_drifted"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
			opts, changed := listChanged()
			cs := connect(t, g, opts)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "before"})
			require.False(t, w.IsError, text(w))

			r := call(t, cs, "rug_pull", map[string]any{"mode": tc.mode})
			require.False(t, r.IsError, text(r))
			<-changed // the gateway re-listed and published the new catalog

			w = call(t, cs, "write_note", map[string]any{"name": "a", "text": "after"})
			assert.True(t, w.IsError)
			assert.Equal(t, []string{tc.code}, findingCodes(t, w))
			assert.Equal(t, "note: before", text(call(t, cs, "read_note", map[string]any{"name": "a"})), "nothing was written")

			// A new listing shows the changed tool but grants nothing.
			_, err = cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			w = call(t, cs, "write_note", map[string]any{"name": "a", "text": "after"})
			assert.Equal(t, []string{tc.code}, findingCodes(t, w))
		})
	}
}

// TestUpstreamFailures: a crash, a hang, a frame that is not JSON-RPC and
// an oversized answer each give the agent a clear error result; the
// upstream is restarted (and its tools re-listed) before the next call.
func TestUpstreamFailures(t *testing.T) {
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		// Whether the call's error or the end of the process is seen
		// first is the scheduler's: either says the call may have run.
		{"crash", nil, "closed the connection before answering|was disconnected during the call"},
		{"hang", nil, "did not answer within"},
		// The SDK drops a frame it cannot decode: the call then ends at
		// the call timeout, and nothing of the garbage reaches the agent.
		{"garbage", nil, "did not answer within"},
		{"big", map[string]any{"size": 100_000}, "over 65536 bytes"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			// The call timeout only bounds how long the hang case waits;
			// no assertion depends on it.
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
				ActivateOnList: []string{"*"}, CallTimeout: 2 * time.Second, MaxResultBytes: 64 << 10, RestartBackoff: time.Millisecond})
			cs := connect(t, g, nil)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			args := tc.args
			if args == nil {
				args = map[string]any{}
			}
			r := call(t, cs, tc.tool, args)
			assert.True(t, r.IsError)
			assert.Regexp(t, tc.want, text(r))
			assert.Regexp(t, `^[0-9a-f]{32}$`, r.Meta[mcpgateway.MetaRunID], "the accepted decision's run id")

			w := call(t, cs, "write_note", map[string]any{"name": "b", "text": "again"})
			assert.False(t, w.IsError, text(w))
			assert.Equal(t, "note: again", text(call(t, cs, "read_note", map[string]any{"name": "b"})))
		})
	}
}

// TestUpstreamDoesNotStart: an upstream that cannot be started leaves out
// its own tools only: initialize succeeds, and a call is refused with
// nothing sent.
func TestUpstreamDoesNotStart(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "gone", Command: []string{"/nonexistent/mcp-server"}}}})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, ct, sessionful)
	require.NoError(t, err)
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, lt.Tools)
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.True(t, r.IsError)
}
