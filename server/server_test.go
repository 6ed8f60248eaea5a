package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// serveParams shape a test config. Catalog "a" is the GitHub MCP server's
// 117 tools; "b" is a 4-tool MCP list without list_issues, so the proposal
// read-then-write is accepted under a and rejected under b.
type serveParams struct {
	catalog   string // "a" or "b"
	stageName string // of the admission pipeline's stage
	twoGate   bool   // add pipeline two-gate: static-verify + preconditions
	slow      string // add pipeline slow (an endless loop) with this stage timeout
	limits    string // extra top-level YAML
}

var (
	precondOnce sync.Once
	precondWasm string
	loopWasm    []byte
)

func writeServeConfig(t testing.TB, dir string, p serveParams) string {
	t.Helper()
	cat := fmt.Sprintf("{format: mcp, path: %s, server: github}", filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"))
	if p.catalog == "b" {
		cat = fmt.Sprintf("{format: mcp, path: %s, server: github}", filepath.Join(repoRoot, "testdata/catalogs/mcp-tools-list.json"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "catalog:\n  sources:\n    - %s\nevent_log:\n  path: events.jsonl\ncache_dir: %s\npool_size: 2\n%s\n",
		cat, testwasm.CacheDir(), p.limits)
	fmt.Fprintf(&b, "plugins:\n  static-verify: {path: %s}\n", svWasm)
	if p.twoGate {
		precondOnce.Do(func() {
			var err error
			precondWasm, err = testwasm.Go("plugins/preconditions/wasm")
			require.NoError(t, err)
		})
		fmt.Fprintf(&b, "  preconditions: {path: %s}\n", precondWasm)
	}
	if p.slow != "" {
		if loopWasm == nil {
			var err error
			loopWasm, err = testwasm.WAT("testdata/hostile/infinite-loop.wat")
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "loop.wasm"), loopWasm, 0o644))
		b.WriteString("  loop: {path: loop.wasm}\n")
	}
	fmt.Fprintf(&b, `pipelines:
  admission:
    subject: proposal
    stages:
      - {name: %s, plugin: static-verify, timeout: 60s, capabilities: [catalog, schema], config: {max_actions: 100}}
`, cmpOr(p.stageName, "static-verify"))
	if p.twoGate {
		fmt.Fprintf(&b, `  two-gate:
    subject: proposal
    stages:
      - {name: static-verify, plugin: static-verify, timeout: 60s, capabilities: [catalog, schema], config: {max_actions: 100}}
      - {name: preconditions, plugin: preconditions, timeout: 60s, capabilities: [query], config: {domain: github, unknown_tools: allow}}
domains:
  github:
    catalog: %s
    source: {kind: documents, path: %s}
`, filepath.Join(repoRoot, "testdata/domains/github-bench/domain.yaml"), filepath.Join(repoRoot, "testdata/domains/github-bench/db.json"))
	}
	if p.slow != "" {
		fmt.Fprintf(&b, "  slow:\n    subject: proposal\n    stages:\n      - {plugin: loop, timeout: %s}\n", p.slow)
	}
	path := filepath.Join(dir, "gatehost.yaml")
	writeAtomic(t, path, b.String())
	return path
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeAtomic replaces path, as editors and config managers do, so a
// concurrent reader sees the old file or the new one.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// lockedBuffer collects log output from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type testServer struct {
	s      *Server
	url    string
	cfg    string
	logs   *lockedBuffer
	hup    chan os.Signal
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

// startServe runs a server on a loopback port and waits until it is ready.
func startServe(t testing.TB, cfgPath string, mod func(*Options)) *testServer {
	t.Helper()
	o := Options{ConfigPath: cfgPath, Listen: "127.0.0.1:0", ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 120 * time.Second, IdleTimeout: 30 * time.Second,
		ShutdownTimeout: 30 * time.Second, RetryAfter: time.Second}
	if mod != nil {
		mod(&o)
	}
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := New(o, logger)
	require.NoError(t, err)
	ln, err := s.Listen()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{s: s, url: "http://" + ln.Addr().String(), cfg: cfgPath, logs: logs,
		hup: make(chan os.Signal, 1), cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}, Timeout: 2 * time.Minute}}
	go func() { ts.done <- s.run(ctx, ln, ts.hup) }()
	t.Cleanup(func() { ts.stop(t) })
	require.Eventually(t, s.ready.Load, 2*time.Minute, 10*time.Millisecond, "server never became ready:\n%s", logs.String())
	return ts
}

// stop shuts the server down (idempotent) and returns run's error.
func (ts *testServer) stop(t testing.TB) error {
	t.Helper()
	ts.cancel()
	select {
	case err, ok := <-ts.done:
		if ok {
			close(ts.done)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatal("server did not stop within a minute")
	}
	return nil
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (ts *testServer) do(t testing.TB, method, path string, body []byte, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, b}
}

func (a answer) decision(t testing.TB) host.Decision {
	t.Helper()
	var d host.Decision
	require.NoError(t, json.Unmarshal(a.body, &d), string(a.body))
	return d
}

func (a answer) apiErr(t testing.TB) apiError {
	t.Helper()
	var e apiError
	require.NoError(t, json.Unmarshal(a.body, &e), string(a.body))
	return e
}

// decisionRecords counts the decision records of the event log at path.
func decisionRecords(t testing.TB, path string) (decisions int, byRequest map[string]eventlog.Record) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	byRequest = map[string]eventlog.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, eventlog.MaxRecordBytes+1)
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Kind == eventlog.KindDecision {
			decisions++
			byRequest[r.RequestID] = r
		}
	}
	require.NoError(t, sc.Err())
	return decisions, byRequest
}

var readThenWrite = func() []byte {
	b, err := os.ReadFile("../testdata/proposals/read-then-write.json")
	if err != nil {
		panic(err)
	}
	return b
}()

func TestServeStatusCodes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, serveParams{slow: "1500ms",
		limits: "max_concurrent_runs: 1\nmax_queued_runs: 1\nqueue_timeout: 30s"})
	ts := startServe(t, cfg, func(o *Options) { o.MaxBody = 64 << 10 })
	bad := readFile(t, "testdata/proposals/bad-args-and-unknown-tool.json")
	openai := readFile(t, "testdata/proposals/openai-repeated-calls.json")

	cases := []struct {
		name      string
		method    string
		path      string
		body      []byte
		hdr       []string
		status    int
		code      string // error code; "" for a decision
		field     string
		verdict   abi.Verdict
		requestID string // echoed, when set
	}{
		{name: "accepted", method: "POST", path: "/v1/pipelines/admission/check", body: readThenWrite,
			hdr: []string{"X-Request-Id", "req-accepted-1"}, status: 200, verdict: abi.Accepted, requestID: "req-accepted-1"},
		{name: "rejected is still 200", method: "POST", path: "/v1/pipelines/admission/check", body: bad, status: 200, verdict: abi.Rejected},
		{name: "openai format detected", method: "POST", path: "/v1/pipelines/admission/check", body: openai, status: 200, verdict: abi.Accepted},
		{name: "forced format that does not fit", method: "POST", path: "/v1/pipelines/admission/check?format=anthropic", body: readThenWrite,
			status: 400, code: errInvalidSubject},
		{name: "not JSON", method: "POST", path: "/v1/pipelines/admission/check", body: []byte(`{"actions":`), status: 400, code: errInvalidSubject},
		{name: "wrong type names the field", method: "POST", path: "/v1/pipelines/admission/check",
			body: []byte(`{"actions":[{"type":"tool_call","tool":7}]}`), status: 400, code: errInvalidSubject, field: "/actions/0/tool"},
		{name: "unknown format", method: "POST", path: "/v1/pipelines/admission/check?format=yaml", body: readThenWrite,
			status: 400, code: errInvalidRequest, field: "format"},
		{name: "bad request id", method: "POST", path: "/v1/pipelines/admission/check", body: readThenWrite,
			hdr: []string{"X-Request-Id", "bad id\twith tab"}, status: 400, code: errInvalidRequest, field: headerRequestID},
		{name: "confirmation on a proposal", method: "POST", path: "/v1/pipelines/admission/check", body: readThenWrite,
			hdr: []string{headerConfirmation, "yes"}, status: 400, code: errInvalidSubject, field: headerConfirmation},
		{name: "unknown pipeline", method: "POST", path: "/v1/pipelines/nope/check", body: readThenWrite,
			status: 404, code: errUnknownPipeline, field: "name"},
		{name: "over the size cap", method: "POST", path: "/v1/pipelines/admission/check",
			body: []byte(`{"actions":[],"pad":"` + strings.Repeat("x", 65<<10) + `"}`), status: 413, code: errSubjectTooLarge},
		{name: "GET on check", method: "GET", path: "/v1/pipelines/admission/check", status: 405},
		{name: "list", method: "GET", path: "/v1/pipelines", status: 200},
		{name: "healthz", method: "GET", path: "/healthz", status: 200},
		{name: "readyz", method: "GET", path: "/readyz", status: 200},
		{name: "metrics", method: "GET", path: "/metrics", status: 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := ts.do(t, c.method, c.path, c.body, c.hdr...)
			require.Equal(t, c.status, a.status, string(a.body))
			assert.NotEmpty(t, a.header.Get(headerRequestID), "every answer carries a request id")
			if c.requestID != "" {
				assert.Equal(t, c.requestID, a.header.Get(headerRequestID))
			}
			switch {
			case c.verdict != "":
				d := a.decision(t)
				assert.Equal(t, c.verdict, d.Verdict)
				assert.Equal(t, a.header.Get(headerRequestID), d.RequestID, "the decision carries the request id")
			case c.code != "":
				e := a.apiErr(t)
				assert.Equal(t, c.code, e.Error.Code)
				assert.Equal(t, c.field, e.Error.Field)
				assert.NotEmpty(t, e.Error.Message)
			}
		})
	}

	t.Run("request id recorded in the event log", func(t *testing.T) {
		_, byReq := decisionRecords(t, filepath.Join(dir, "events.jsonl"))
		r, ok := byReq["req-accepted-1"]
		require.True(t, ok)
		assert.Equal(t, string(abi.Accepted), r.Verdict)
	})

	t.Run("overloaded is 503 with Retry-After", func(t *testing.T) {
		// One run slot and one queue place: two slow runs fill them, the
		// third is refused at once.
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				a := ts.do(t, "POST", "/v1/pipelines/slow/check", readThenWrite)
				assert.Equal(t, 200, a.status, string(a.body))
			})
		}
		require.Eventually(t, func() bool {
			rt := ts.s.acquire()
			defer rt.release()
			running, queued := rt.h.Runs()
			return running == 1 && queued == 1
		}, 30*time.Second, 5*time.Millisecond)
		a := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
		require.Equal(t, 503, a.status, string(a.body))
		assert.Equal(t, "1", a.header.Get("Retry-After"))
		e := a.apiErr(t)
		assert.Equal(t, errHostOverloaded, e.Error.Code)
		require.NotNil(t, e.Decision, "the refused run's decision is returned and recorded")
		assert.Equal(t, abi.Inconclusive, e.Decision.Verdict)
		wg.Wait()
	})

	t.Run("not ready is 503", func(t *testing.T) {
		s := &Server{opts: Options{RetryAfter: time.Second}, logger: slog.New(slog.DiscardHandler)}
		s.metrics = newMetrics(s)
		s.tokens.Store(&identity.Tokens{})
		for _, path := range []string{"/readyz", "/v1/pipelines"} {
			rec := httptestRecorder(s.Handler(), "GET", path, nil)
			assert.Equal(t, 503, rec.status, path)
		}
		rec := httptestRecorder(s.Handler(), "POST", "/v1/pipelines/admission/check", readThenWrite)
		assert.Equal(t, 503, rec.status)
		assert.Equal(t, "1", rec.header.Get("Retry-After"))
		assert.Equal(t, 200, httptestRecorder(s.Handler(), "GET", "/healthz", nil).status)
	})
}

func readFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	require.NoError(t, err)
	return b
}

func TestServeMetrics(t *testing.T) {
	ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{slow: "50ms"}), nil)
	ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
	ts.do(t, "POST", "/v1/pipelines/admission/check", readFile(t, "testdata/proposals/bad-args-and-unknown-tool.json"))
	ts.do(t, "POST", "/v1/pipelines/slow/check", readThenWrite)
	a := ts.do(t, "GET", "/metrics", nil)
	require.Equal(t, 200, a.status)
	m := string(a.body)
	for _, want := range []string{
		`gatehost_decisions_total{pipeline="admission",verdict="accepted"} 1`,
		`gatehost_decisions_total{pipeline="admission",verdict="rejected"} 1`,
		`gatehost_decisions_total{pipeline="slow",verdict="inconclusive"} 1`,
		`gatehost_stage_duration_seconds_count{pipeline="admission",stage="static-verify"} 2`,
		`gatehost_plugin_failures_total{plugin="loop",reason="plugin_timeout"} 1`,
		`gatehost_pool_instances{memory_pages="1024",plugin="static-verify",state="size"} 2`,
		`gatehost_pool_instances{memory_pages="1024",plugin="static-verify",state="live"} 2`,
		`gatehost_eventlog_appended_records_total 6`,
		`gatehost_eventlog_fsync_seconds_count`,
		`gatehost_config_reloads_total{result="failure"} 0`,
		`gatehost_config_generation 1`,
		`gatehost_catalog_generation 0`,
		`gatehost_ready 1`,
		`gatehost_http_requests_total{code="200",route="/v1/pipelines/{name}/check"} 3`,
	} {
		assert.Contains(t, m, want)
	}
}

// TestServeQuarantineMetric drives a plugin into quarantine over HTTP.
func TestServeQuarantineMetric(t *testing.T) {
	ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{slow: "20ms",
		limits: "quarantine: {failures: 2, window: 1m, backoff: 1m}"}), nil)
	for range 3 {
		a := ts.do(t, "POST", "/v1/pipelines/slow/check", readThenWrite)
		require.Equal(t, 200, a.status)
	}
	m := string(ts.do(t, "GET", "/metrics", nil).body)
	assert.Contains(t, m, `gatehost_quarantines_total{plugin="loop"} 1`)
	assert.Contains(t, m, `gatehost_plugin_quarantined{plugin="loop"} 1`)
	assert.Contains(t, m, `gatehost_plugin_failures_total{plugin="loop",reason="plugin_quarantined"} 1`)
}

// TestServeNeverLogsArguments: at info level (the default) the log holds
// neither a subject's arguments nor its body, on success or on error.
func TestServeNeverLogsArguments(t *testing.T) {
	ts := startServe(t, writeServeConfig(t, t.TempDir(), serveParams{}), nil)
	const secret = "hunter2-Sup3rSecretValue"
	good := fmt.Sprintf(`{"actions":[{"id":"a","type":"tool_call","tool":"get_me","parameters":{"note":%q}}]}`, secret)
	badArgs := fmt.Sprintf(`{"actions":[{"id":"a","type":"tool_call","tool":"create_issue","parameters":{"owner":%q}}]}`, secret)
	notJSON := fmt.Sprintf(`{"actions":[{"parameters":{"x":%q}`, secret)
	for _, body := range []string{good, badArgs, notJSON} {
		ts.do(t, "POST", "/v1/pipelines/admission/check", []byte(body))
	}
	require.NoError(t, ts.stop(t))
	logs := ts.logs.String()
	assert.Contains(t, logs, "msg=http", "requests are logged")
	assert.NotContains(t, logs, secret)
	assert.NotContains(t, logs, "hunter2")
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	ts := startServe(t, writeServeConfig(t, dir, serveParams{}), func(o *Options) { o.TLSCert, o.TLSKey = certFile, keyFile })
	ts.url = strings.Replace(ts.url, "http://", "https://", 1)
	ts.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsClientConfig(pool)}, Timeout: time.Minute}
	a := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite)
	require.Equal(t, 200, a.status, string(a.body))
	assert.Equal(t, abi.Accepted, a.decision(t).Verdict)

	// Plain HTTP to the TLS port is refused.
	resp, err := http.Post(strings.Replace(ts.url, "https://", "http://", 1)+"/healthz", "", nil)
	if err == nil {
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}

	_, err = New(Options{ConfigPath: ts.cfg, TLSCert: certFile}, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "--tls-cert and --tls-key go together")
	_, err = New(Options{ConfigPath: ts.cfg, TLSCert: keyFile, TLSKey: keyFile}, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "tls:")
}

func TestServeLoopbackOnlyWithoutAuth(t *testing.T) {
	cfg := writeServeConfig(t, t.TempDir(), serveParams{})
	newS := func(t *testing.T, o Options) *Server {
		o.ConfigPath = cfg
		s, err := New(o, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	cases := []struct {
		name    string
		opts    Options
		env     string
		wantErr string
	}{
		{name: "loopback v4", opts: Options{Listen: "127.0.0.1:0"}},
		{name: "localhost", opts: Options{Listen: "localhost:0"}},
		{name: "any address without auth", opts: Options{Listen: ":0"}, wantErr: "not a loopback address"},
		{name: "0.0.0.0 without auth", opts: Options{Listen: "0.0.0.0:0"}, wantErr: "--insecure-listen-any"},
		{name: "any address, insecure", opts: Options{Listen: ":0", InsecureListenAny: true}},
		{name: "any address with a token", opts: Options{Listen: ":0"}, env: "0123456789abcdef0123"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(TokenEnv, c.env)
			s := newS(t, c.opts)
			ln, err := s.Listen()
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				assert.ErrorIs(t, err, ErrUsage)
				return
			}
			require.NoError(t, err)
			ln.Close()
		})
	}
}

// httptestRecorder serves one request on h without a network.
func httptestRecorder(h http.Handler, method, path string, body []byte) answer {
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequest(method, "http://gatehost"+path, bytes.NewReader(body))
	h.ServeHTTP(rec, req)
	return answer{status: cmpInt(rec.status, 200), header: rec.header, body: rec.body.Bytes()}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = 200
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func cmpInt(a, b int) int {
	if a == 0 {
		return b
	}
	return a
}

// dialRefused reports whether nothing accepts connections at url.
func dialRefused(url string) bool {
	addr := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

var _ = errors.New
