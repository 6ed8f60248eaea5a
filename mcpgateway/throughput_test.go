package mcpgateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/mcpgateway"
)

// BenchmarkGatewayThroughput sends gated tools/call requests through the
// gateway (Streamable HTTP both ways, the exec pipeline deciding each
// call, its decision fsynced to a file event log whose head trails, as
// gatehost mcp runs it by default) from 1, 2, 4 and 32 clients at once.
// A client at 2025-11-25 has its MCP session (and the gateway its
// upstream session for it); at 2026-07-28 every request is a gatehost
// session of its own, with an upstream session of its own (a URL upstream
// is per session). Metrics: gated calls per second over the whole run,
// and the p50 and p99 of a call in µs. Concurrent decisions' records share
// a group commit (one write, one fsync).
func BenchmarkGatewayThroughput(b *testing.B) {
	for _, bc := range []struct {
		revision string
		clients  int
	}{{"2025-11-25", 1}, {"2025-11-25", 2}, {"2025-11-25", 4}, {"2025-11-25", 32}, {"2026-07-28", 1}, {"2026-07-28", 32}} {
		b.Run(fmt.Sprintf("revision=%s/clients=%d", bc.revision, bc.clients), func(b *testing.B) {
			clients := bc.clients
			gwURL := throughputSetup(b)
			sessions := make([]*mcp.ClientSession, clients)
			ctx := context.Background()
			for i := range sessions {
				sessions[i] = connectHTTPAs(b, gwURL, bc.revision, benchToken(i))
				_, err := sessions[i].ListTools(ctx, nil)
				require.NoError(b, err)
			}
			args := map[string]any{"name": "bench"}
			call := func(cs *mcp.ClientSession) (time.Duration, error) {
				start := time.Now()
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: args})
				if err == nil && r.IsError {
					err = fmt.Errorf("denied: %s", text(r))
				}
				return time.Since(start), err
			}
			for _, cs := range sessions { // warm the pools and the sessions
				_, err := call(cs)
				require.NoError(b, err)
			}
			// b.N calls shared out among the clients, each of which
			// sends its next call as soon as the last one is answered.
			work := make(chan struct{}, b.N)
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			lat := make([][]time.Duration, clients)
			errs := make(chan error, clients)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i, cs := range sessions {
				wg.Go(func() {
					for range work {
						d, err := call(cs)
						if err != nil {
							errs <- err
							return
						}
						lat[i] = append(lat[i], d)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(percentile(all, 0.5), "p50-µs")
			b.ReportMetric(percentile(all, 0.99), "p99-µs")
		})
	}
}

// throughputSetup is httpSetup with the event log as gatehost mcp opens
// it by default (the head checkpoint trailing by a second).
func throughputSetup(b *testing.B) (gatewayURL string) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	b.Cleanup(upSrv.Close)
	evlog, err := eventlog.Open(filepath.Join(b.TempDir(), "events.jsonl"), eventlog.Options{HeadInterval: time.Second})
	require.NoError(b, err)
	b.Cleanup(func() { _ = evlog.Close() })
	f := newFixtureWith(b, confirmNonIdempotent, nil, nil, func(c *host.Config) {
		c.EventLog = evlog
		c.MaxQueuedRuns, c.QueueTimeout = 1000, 5*time.Minute
	})
	g := f.newGateway(b, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}},
		ActivateOnList: []string{"*"}, MaxSessionsPerPrincipal: 64, MaxSessions: 64})
	// Each client is a principal of its own, by its bearer token, as
	// callers of a gateway served over HTTP are.
	tokens := identity.NewTokenSource("bench", func(tok string) (string, bool) {
		sub, ok := strings.CutSuffix(tok, benchTokenSuffix)
		return sub, ok && strings.HasPrefix(sub, "client-")
	})
	gw := httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
	b.Cleanup(gw.Close)
	return gw.URL
}

const benchTokenSuffix = "-token-0123456789"

// benchToken is the bearer token of the throughput benchmark's client i.
func benchToken(i int) string { return fmt.Sprintf("client-%02d%s", i, benchTokenSuffix) }
