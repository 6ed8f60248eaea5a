package mcpgateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway"
)

// countingUpstream is the stdio test upstream writing the pid of each of
// its starts to a file; started reads the distinct pids.
func countingUpstream(t *testing.T, name string) (mcpgateway.Upstream, func() []string) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	u := stdioUpstream(t, name)
	u.Env = append(u.Env, pidsEnv+"="+pids)
	return u, func() []string {
		b, err := os.ReadFile(pids)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		seen := map[string]bool{}
		var out []string
		for _, l := range strings.Fields(string(b)) {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
		return out
	}
}

// TestSharedUpstreamProcesses: 200 sessions at once over Streamable HTTP,
// each listing, writing and reading back its own note through a stdio
// upstream configured with 2 processes, start 2 processes in all (counted
// by the processes themselves), not one per session.
func TestSharedUpstreamProcesses(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	f := newFixtureWith(t, confirmNonIdempotent, nil, nil, func(c *host.Config) {
		c.MaxQueuedRuns, c.QueueTimeout = 1000, 5*time.Minute
		p := c.Pipelines["exec"]
		p.Stages[0].Timeout = 5 * time.Minute
		c.Pipelines["exec"] = p
	})
	up, started := countingUpstream(t, "notes")
	up.Processes = 2
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
		MaxSessionsPerPrincipal: 256, MaxSessions: 256})
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- func() error {
				ctx := context.Background()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL, DisableStandaloneSSE: true}, sessionful)
				if err != nil {
					return err
				}
				defer cs.Close()
				if _, err := cs.ListTools(ctx, nil); err != nil {
					return err
				}
				name := fmt.Sprint("n", i)
				w, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"name": name, "text": name}})
				if err != nil {
					return err
				}
				if w.IsError {
					return fmt.Errorf("session %d: write denied: %s", i, text(w))
				}
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": name}})
				if err != nil {
					return err
				}
				if got := text(r); got != "note: "+name {
					return fmt.Errorf("session %d: read %q", i, got)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	pids := started()
	t.Logf("%d sessions, %d upstream processes started: %v", n, len(pids), pids)
	assert.Len(t, pids, 2, "at most the 2 configured, and each given sessions in turn")
}

// TestSessionScopedUpstream: an upstream configured session_scoped gets
// one process per session, as before sharing.
func TestSessionScopedUpstream(t *testing.T) {
	f := newFixture(t, nil, nil)
	up, started := countingUpstream(t, "notes")
	up.SessionScoped = true
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
	for range 3 {
		cs := connect(t, g, nil)
		toolNames(t, cs)
	}
	assert.Len(t, started(), 3)
}

// TestSharedUpstreamListChanged: one session's call changes a shared
// upstream's tool; every session using it is told, and no session's next
// call is decided on the old listing.
func TestSharedUpstreamListChanged(t *testing.T) {
	f := newFixture(t, nil, nil)
	up, started := countingUpstream(t, "notes")
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
	optsA, changedA := listChanged()
	optsB, changedB := listChanged()
	a, b := connect(t, g, optsA), connect(t, g, optsB)
	toolByName(t, a, "write_note")
	toolByName(t, b, "write_note")
	require.False(t, call(t, b, "write_note", map[string]any{"name": "b", "text": "x"}).IsError)
	require.False(t, call(t, a, "rug_pull", map[string]any{"mode": "annotations"}).IsError)
	<-changedA
	<-changedB // the other session is told too
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, call(t, b, "write_note", map[string]any{"name": "b", "text": "y"})))
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, call(t, a, "write_note", map[string]any{"name": "a", "text": "y"})))
	assert.Len(t, started(), 1)
}

// TestSharedUpstreamRequests: what a shared upstream asks of the client
// cannot be attributed to one session: roots/list is answered with no
// roots, sampling and elicitation are refused; each is recorded, and no
// client is asked.
func TestSharedUpstreamRequests(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	var mu sync.Mutex
	var asked []string
	note := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, what)
	}
	cs := connect(t, g, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			note("elicitation")
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			note("sampling")
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		}})
	toolNames(t, cs)
	assert.Equal(t, "roots: 0", text(call(t, cs, "ask", map[string]any{"via": "roots"})))
	assert.Contains(t, text(call(t, cs, "ask", map[string]any{"via": "sample"})), "sampling failed")
	assert.Contains(t, text(call(t, cs, "ask", map[string]any{})), "elicitation failed", "not offered to a shared upstream")
	assert.Equal(t, "sent", text(call(t, cs, "ask", map[string]any{"via": "raw_elicit"})))
	var outcomes []string
	require.Eventually(t, func() bool {
		outcomes = outcomes[:0]
		for _, r := range logRecords(t, f.logPath, "mcp_upstream_request") {
			outcomes = append(outcomes, string(r.Data))
		}
		return len(outcomes) == 3
	}, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, outcomes[0], "answered: no roots")
	assert.Contains(t, outcomes[1], "sampling/createMessage")
	assert.Contains(t, outcomes[1], "refused: shared upstream")
	assert.Contains(t, outcomes[2], "elicitation/create")
	assert.Contains(t, outcomes[2], "refused: shared upstream")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, asked)
	// The upstream serves on.
	assert.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)
}

// TestSharedUpstreamCrash: a shared upstream that crashes is restarted
// once for every session using it: each session's next call waits for
// the restart and is answered.
func TestSharedUpstreamCrash(t *testing.T) {
	f := newFixture(t, nil, nil)
	up, started := countingUpstream(t, "notes")
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
	a, b := connect(t, g, nil), connect(t, g, nil)
	toolNames(t, a)
	toolNames(t, b)
	assert.True(t, call(t, a, "crash", map[string]any{}).IsError)
	var wg sync.WaitGroup
	for _, cs := range []*mcp.ClientSession{a, b} {
		wg.Go(func() {
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": "x"}})
			if assert.NoError(t, err) {
				assert.False(t, r.IsError, text(r))
			}
		})
	}
	wg.Wait()
	assert.Len(t, started(), 2, "one start, one restart")
}
