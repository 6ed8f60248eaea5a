package mcpgateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
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
// session of its own, whose URL upstream session is kept for the
// principal's next request. The load comes from the Go SDK's clients, or
// (load=raw) from a load generator that sends prepared bytes and reads
// the answer's (rawCaller), so that the clients' own cost can be told
// from the gateway's. Metrics: gated calls per second over the whole
// run, the p50 and p99 of a call in µs, and the event log's records per
// commit and fsync p50: concurrent decisions' records share a group
// commit (one write, one fsync).
func BenchmarkGatewayThroughput(b *testing.B) {
	for _, bc := range []struct {
		revision string
		clients  int
		load     string
	}{
		{"2025-11-25", 1, "sdk"}, {"2025-11-25", 2, "sdk"}, {"2025-11-25", 4, "sdk"}, {"2025-11-25", 32, "sdk"},
		{"2026-07-28", 1, "sdk"}, {"2026-07-28", 32, "sdk"},
		{"2025-11-25", 1, "raw"}, {"2025-11-25", 32, "raw"}, {"2026-07-28", 1, "raw"}, {"2026-07-28", 32, "raw"},
	} {
		name := fmt.Sprintf("revision=%s/clients=%d", bc.revision, bc.clients)
		if bc.load != "sdk" {
			name += "/load=" + bc.load
		}
		b.Run(name, func(b *testing.B) {
			clients := bc.clients
			gwURL, commits := throughputSetup(b)
			calls := make([]func() error, clients)
			ctx := context.Background()
			args := map[string]any{"name": "bench"}
			for i := range calls {
				cs := connectHTTPAs(b, gwURL, bc.revision, benchToken(i))
				_, err := cs.ListTools(ctx, nil)
				require.NoError(b, err)
				calls[i] = func() error {
					r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_note", Arguments: args})
					if err == nil && r.IsError {
						err = fmt.Errorf("denied: %s", text(r))
					}
					return err
				}
				if bc.load == "raw" {
					calls[i] = newRawCaller(gwURL, bc.revision, benchToken(i), cs.ID()).call
				}
			}
			for _, call := range calls { // warm the pools and the sessions
				require.NoError(b, call())
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
			commits.reset()
			b.ResetTimer()
			start := time.Now()
			for i, call := range calls {
				wg.Go(func() {
					for range work {
						t0 := time.Now()
						if err := call(); err != nil {
							errs <- err
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
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
			commits.report(b)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(percentile(all, 0.5), "p50-µs")
			b.ReportMetric(percentile(all, 0.99), "p99-µs")
		})
	}
}

// rawCaller is the benchmark's load generator: it sends a tools/call as
// bytes built once, over a connection pool of its own, and checks the
// answer's bytes for the upstream's text, as wrk or oha would drive a
// proxy. It spends a small part of what an SDK client does on each call
// (no JSON decoding, no session machinery), so the figures it gives are
// the gateway's and the upstream's. The MCP session of a 2025-11-25
// client is the SDK client's; a 2026-07-28 request carries its _meta.
type rawCaller struct {
	client   *http.Client
	url      string
	revision string
	token    string
	session  string
	id       int
	body     []byte
}

func newRawCaller(url, revision, token, session string) *rawCaller {
	return &rawCaller{
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		url:    url, revision: revision, token: token, session: session, id: 1 << 20,
	}
}

// rawAnswer is what the test upstream's read_note answers for "bench".
var rawAnswer = []byte(`"content":[{"type":"text","text":"note: "}]`)

func (c *rawCaller) call() error {
	c.id++
	c.body = append(c.body[:0], `{"jsonrpc":"2.0","id":`...)
	c.body = strconv.AppendInt(c.body, int64(c.id), 10)
	c.body = append(c.body, `,"method":"tools/call","params":{`...)
	if c.revision == "2026-07-28" {
		c.body = append(c.body, `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},`...)
	}
	c.body = append(c.body, `"name":"read_note","arguments":{"name":"bench"}}}`...)
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{c.revision}
	h["Authorization"] = []string{"Bearer " + c.token}
	if c.session != "" {
		h["Mcp-Session-Id"] = []string{c.session}
	} else {
		h["Mcp-Method"] = []string{"tools/call"}
		h["Mcp-Name"] = []string{"read_note"}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, rawAnswer) {
		return fmt.Errorf("call %d: HTTP %d: %.300s", c.id, resp.StatusCode, got)
	}
	return nil
}

// throughputSetup is httpSetup with the event log as gatehost mcp opens
// it by default (the head checkpoint trailing by a second).
func throughputSetup(b testing.TB) (gatewayURL string, commits *commitStats) {
	commits = &commitStats{}
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	b.Cleanup(upSrv.Close)
	evlog, err := eventlog.Open(filepath.Join(b.TempDir(), "events.jsonl"), eventlog.Options{HeadInterval: time.Second, OnCommit: commits.add})
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
	return gw.URL, commits
}

// commitStats collects the event log's commits (eventlog.Options.OnCommit):
// how many records share an fsync, and how long the fsyncs take.
type commitStats struct {
	mu  sync.Mutex
	all []eventlog.Commit
}

func (s *commitStats) add(c eventlog.Commit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, c)
}

// report adds the commits since the last reset to b's metrics.
func (s *commitStats) report(b *testing.B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs int
	var fsyncs []time.Duration
	for _, c := range s.all {
		if c.Records > 0 {
			recs += c.Records
			fsyncs = append(fsyncs, c.Fsync)
		}
	}
	if len(fsyncs) > 0 {
		b.ReportMetric(float64(recs)/float64(len(fsyncs)), "records/commit")
		b.ReportMetric(percentile(fsyncs, 0.5), "fsync-p50-µs")
	}
}

func (s *commitStats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = nil
}

const benchTokenSuffix = "-token-0123456789"

// benchToken is the bearer token of the throughput benchmark's client i.
func benchToken(i int) string { return fmt.Sprintf("client-%02d%s", i, benchTokenSuffix) }
