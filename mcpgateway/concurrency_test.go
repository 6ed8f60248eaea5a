package mcpgateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway"
)

// httpSetup serves the test upstream over Streamable HTTP and a gateway in
// front of it, also over Streamable HTTP.
func httpSetup(t testing.TB) (upstreamURL, gatewayURL string, f *fixture) {
	t.Helper()
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	// 200 sessions' calls can all wait for a run slot and a gate instance
	// at once: the queue takes them all, and the waits last as long as a
	// loaded machine needs (the defaults refuse the excess at once, with
	// host_overloaded).
	f = newFixtureWith(t, confirmNonIdempotent, nil, nil, func(c *host.Config) {
		c.MaxQueuedRuns, c.QueueTimeout = 1000, 5*time.Minute
		p := c.Pipelines["exec"]
		p.Stages[0].Timeout = 5 * time.Minute
		c.Pipelines["exec"] = p
	})
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}, MaxSessionsPerPrincipal: 256, MaxSessions: 256})
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	return upSrv.URL, gw.URL, f
}

// TestConcurrentSessions: 200 sessions at once on one gateway, each with
// its own upstream session and gatehost session, without an error.
func TestConcurrentSessions(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	_, gwURL, _ := httpSetup(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- func() error {
				ctx := context.Background()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gwURL, DisableStandaloneSSE: true}, nil)
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
		assert.NoError(t, err)
	}
}

// BenchmarkGatewayVsDirect measures, side by side in one run, a tools/call
// and a resources/read sent to the upstream directly and through the
// gateway (Streamable HTTP both ways; the exec pipeline decides each
// call). Metrics: p50 and p99 of each, in µs; the gateway's added latency
// is the difference between the through and direct figures.
func BenchmarkGatewayVsDirect(b *testing.B) {
	upURL, gwURL, f := httpSetup(b)
	direct, through := connectHTTP(b, upURL), connectHTTP(b, gwURL)
	ctx := context.Background()
	_, err := through.ListTools(ctx, nil)
	require.NoError(b, err)
	// The pipeline's own time (exec gate and the event log's fsync), on
	// the same call in a session of its own.
	_, err = session.Create(ctx, f.h.Sessions(), f.h.Catalog().Snapshot(), "bench", "read_note")
	require.NoError(b, err)
	subject := []byte(`{"tool":"read_note","parameters":{"name":"bench"}}`)
	args := map[string]any{"name": "bench"}
	ops := []struct {
		name string
		do   func(cs *mcp.ClientSession) error
	}{
		{"call", func(cs *mcp.ClientSession) error {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: args})
			if err == nil && r.IsError {
				err = fmt.Errorf("denied: %s", text(r))
			}
			return err
		}},
		{"read", func(cs *mcp.ClientSession) error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://readme"})
			return err
		}},
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for b.Loop() {
		for _, op := range ops {
			for _, side := range []struct {
				name string
				cs   *mcp.ClientSession
			}{{"direct", direct}, {"gateway", through}} {
				start := time.Now()
				if err := op.do(side.cs); err != nil {
					b.Fatal(err)
				}
				k := op.name + "-" + side.name
				lat[k] = append(lat[k], time.Since(start))
			}
		}
		start := time.Now()
		d, err := f.h.Check(ctx, "exec", subject, host.RunOptions{Session: "bench"})
		if err != nil || d.Verdict != "accepted" {
			b.Fatal(err, d)
		}
		lat["pipeline"] = append(lat["pipeline"], time.Since(start))
	}
	p50 := map[string]float64{}
	for k, d := range lat {
		p50[k] = percentile(d, 0.5)
		b.ReportMetric(p50[k], k+"-p50-µs")
		b.ReportMetric(percentile(d, 0.99), k+"-p99-µs")
	}
	b.ReportMetric(p50["call-gateway"]-p50["call-direct"]-p50["pipeline"], "call-added-minus-pipeline-p50-µs")
	b.ReportMetric(p50["read-gateway"]-p50["read-direct"], "read-added-p50-µs")
}

func connectHTTP(tb testing.TB, url string) *mcp.ClientSession {
	tb.Helper()
	return connectHTTPAt(tb, url, "")
}

// connectHTTPAt is connectHTTP asking for revision version ("" for the
// SDK's default).
func connectHTTPAt(tb testing.TB, url, version string) *mcp.ClientSession {
	tb.Helper()
	return connectHTTPAs(tb, url, version, "")
}

// connectHTTPAs is connectHTTPAt with a bearer token on every request
// ("" for none).
func connectHTTPAs(tb testing.TB, url, version, token string) *mcp.ClientSession {
	tb.Helper()
	// A connection pool of its own, as a client in a process of its own
	// has: sharing http.DefaultTransport, which keeps 2 idle connections
	// per host, concurrent clients would dial the gateway anew for most
	// requests.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearer{tr, token}}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = cs.Close(); tr.CloseIdleConnections() })
	return cs
}

func percentile(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)].Microseconds())
}

// bearer sets a bearer token on each request, when it has one.
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}
