package mcpgateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway"
)

// Concurrent sessions calling one URL upstream keep their connections to
// it: the upstream is dialled about once per connection the sessions hold
// at once, not once per request (http.DefaultTransport keeps 2 idle
// connections per host, so past two at once nearly every request dialled).
func TestURLUpstreamConnectionsKept(t *testing.T) {
	for _, revision := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(revision, func(t *testing.T) {
			up := newTestUpstream(nil)
			upSrv := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
			var dials atomic.Int64
			upSrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					dials.Add(1)
				}
			}
			upSrv.Start()
			t.Cleanup(upSrv.Close)
			// Under -race on a loaded machine a call may wait long for the
			// host: no call may be refused for that (the count is the test).
			f := newFixtureWith(t, confirmNonIdempotent, nil, nil, func(c *host.Config) {
				c.MaxQueuedRuns, c.QueueTimeout = 1000, 5*time.Minute
			})
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}},
				ActivateOnList: []string{"*"}})
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(gw.Close)

			const clients, calls = 8, 30
			sessions := make([]*mcp.ClientSession, clients)
			for i := range sessions {
				sessions[i] = connectHTTPAt(t, gw.URL, revision)
				_, err := sessions[i].ListTools(context.Background(), nil)
				require.NoError(t, err)
			}
			before := dials.Load()
			var wg sync.WaitGroup
			errs := make(chan error, clients*calls)
			for _, cs := range sessions {
				wg.Go(func() {
					for range calls {
						r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": "x"}})
						if err == nil && r.IsError {
							err = assert.AnError
						}
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			// A client's requests are sequential, so its upstream session
			// has at most a few connections in use at once (a request, the
			// standing GET stream, and at 2026-07-28 the closing of the
			// previous request's upstream session, in the background):
			// kept connections need a few dials per client, however many
			// calls (6 and 12 here idle, up to 21 under load). Dialling
			// per request, as with http.DefaultTransport, was 140 and 338.
			got := dials.Load() - before
			t.Logf("%d calls from %d sessions: %d new upstream connections", clients*calls, clients, got)
			assert.Less(t, got, int64(clients*calls/4), "upstream connections dialled for %d calls", clients*calls)
		})
	}
}
