package mcpgateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/mcpgateway"
)

// guardedUpstream is the test upstream over Streamable HTTP behind a
// check of the Authorization header: a request accept refuses gets 401.
// It keeps the headers of every request, and the Authorization of every
// tools/call it let through.
type guardedUpstream struct {
	*httptest.Server
	accept func(authz string) bool

	mu       sync.Mutex
	seen     []http.Header
	callAuth []string
}

func newGuardedUpstream(t *testing.T, accept func(authz string) bool) *guardedUpstream {
	t.Helper()
	up := newTestUpstream(nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	g := &guardedUpstream{accept: accept}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		authz := r.Header.Get("Authorization")
		g.mu.Lock()
		g.seen = append(g.seen, r.Header.Clone())
		ok := g.accept(authz)
		if ok && bytes.Contains(body, []byte(`"tools/call"`)) {
			g.callAuth = append(g.callAuth, authz)
		}
		g.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="notes"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

// calls are the Authorization headers of the tools/calls that reached the
// server.
func (g *guardedUpstream) calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.callAuth...)
}

// headerValues are every value of every header the server was sent.
func (g *guardedUpstream) headerValues() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, h := range g.seen {
		for k, vs := range h {
			for _, v := range vs {
				out = append(out, k+": "+v)
			}
		}
	}
	return out
}

// tokenEndpoint is an RFC 8693 token endpoint: it exchanges the subject
// tokens in good for fresh tokens (exchanged-1, exchanged-2, ...) living
// expiresIn seconds, refuses others (400 invalid_grant), and fails as
// fail says: "500", "malformed", "no_token", "mac", "redirect", "hang".
type tokenEndpoint struct {
	*httptest.Server
	good      map[string]bool
	expiresIn int

	mu     sync.Mutex
	fail   string
	n      int
	issued map[string]bool
	forms  []url.Values
	stop   chan struct{}
}

const (
	clientID     = "gatehost gw"
	clientSecret = "client-secret:9f8e7d6c"
)

func newTokenEndpoint(t *testing.T, good ...string) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{good: map[string]bool{}, expiresIn: 60, issued: map[string]bool{}, stop: make(chan struct{})}
	for _, g := range good {
		e.good[g] = true
	}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(func() {
		close(e.stop)
		e.Close()
	})
	return e
}

func (e *tokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	answer := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	// RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
		answer(http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	if !ok || id != clientID || secret != clientSecret {
		answer(http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	e.mu.Lock()
	e.forms = append(e.forms, r.PostForm)
	fail := e.fail
	e.mu.Unlock()
	switch fail {
	case "500":
		http.Error(w, "down", http.StatusInternalServerError)
		return
	case "malformed":
		_, _ = io.WriteString(w, `{"access_token":`)
		return
	case "no_token":
		answer(http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 60})
		return
	case "mac":
		answer(http.StatusOK, map[string]any{"access_token": "mac-token", "token_type": "mac", "expires_in": 60})
		return
	case "redirect":
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		return
	case "hang":
		select {
		case <-r.Context().Done():
		case <-e.stop:
		}
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || !e.good[r.PostForm.Get("subject_token")] {
		answer(http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "subject token not accepted"})
		return
	}
	e.mu.Lock()
	e.n++
	tok := fmt.Sprintf("exchanged-%d", e.n)
	e.issued[tok] = true
	e.mu.Unlock()
	answer(http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": e.expiresIn,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

func (e *tokenEndpoint) setFail(mode string) {
	e.mu.Lock()
	e.fail = mode
	e.mu.Unlock()
}

// accepts is the upstream's check: a token this endpoint issued.
func (e *tokenEndpoint) accepts(authz string) bool {
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	e.mu.Lock()
	defer e.mu.Unlock()
	return ok && e.issued[tok]
}

func (e *tokenEndpoint) exchanges() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.forms)
}

func (e *tokenEndpoint) lastForm() url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.forms[len(e.forms)-1]
}

// syncBuffer is a log sink for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// logRecords are the event log's records: kind and verdict, and the whole
// line.
type logRecord struct {
	Kind, Verdict, Line string
}

func readRecords(t *testing.T, path string) []logRecord {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	var out []logRecord
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct{ Kind, Verdict string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, logRecord{r.Kind, r.Verdict, sc.Text()})
	}
	return out
}

func countKind(recs []logRecord, kind, verdict string) int {
	n := 0
	for _, r := range recs {
		if r.Kind == kind && (verdict == "" || r.Verdict == verdict) {
			n++
		}
	}
	return n
}

// assertNoSecrets: none of secrets appears in the gateway's log lines or
// its event log.
func assertNoSecrets(t *testing.T, logs *syncBuffer, f *fixture, secrets ...string) {
	t.Helper()
	ev, err := os.ReadFile(f.logPath)
	require.NoError(t, err)
	for _, s := range secrets {
		assert.NotContains(t, logs.String(), s, "a secret in the log lines")
		assert.NotContains(t, string(ev), s, "a secret in the event log")
	}
}

const staticSecret = "s3cret-static-4711"

// TestCredentialStaticHeaders: a header whose value is a secret reaches
// the upstream with every request and calls go through; without it, or
// with a wrong one, the upstream answers 401 and nothing is decided
// accepted or sent. The secret is in no log line and no record.
func TestCredentialStaticHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []mcpgateway.Header
		works   bool
	}{
		{"secret reaches the upstream", []mcpgateway.Header{
			{Name: "authorization", Value: "Bearer " + staticSecret}, {Name: "X-Api-Key", Value: "key-" + staticSecret}}, true},
		{"wrong secret", []mcpgateway.Header{{Name: "Authorization", Value: "Bearer wrong-" + staticSecret}}, false},
		{"no secret", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newGuardedUpstream(t, func(authz string) bool { return authz == "Bearer "+staticSecret })
			f := newFixture(t, nil, nil)
			logs := &syncBuffer{}
			g := f.newGateway(t, mcpgateway.Options{ActivateOnList: []string{"*"},
				Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: up.URL, Headers: tc.headers}}})
			cs := connect(t, g, nil)
			toolNames(t, cs)
			res := call(t, cs, "read_note", map[string]any{"name": "a"})
			recs := readRecords(t, f.logPath)
			if tc.works {
				require.False(t, res.IsError, text(res))
				assert.Equal(t, []string{"Bearer " + staticSecret}, up.calls())
				assert.Contains(t, up.headerValues(), "X-Api-Key: key-"+staticSecret)
				assert.Equal(t, 1, countKind(recs, "decision", "accepted"))
			} else {
				require.True(t, res.IsError)
				assert.Empty(t, up.calls(), "the upstream saw no call")
				assert.Zero(t, countKind(recs, "decision", "accepted"), "no call was accepted")
				assert.Contains(t, logs.String(), "upstream=notes", "the log names the upstream")
				assert.Contains(t, logs.String(), "Unauthorized", "and its answer")
			}
			assertNoSecrets(t, logs, f, staticSecret)
		})
	}
}

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
)

// exchangeGateway is a gateway whose upstream notes takes tokens
// exchanged at e, served over HTTP to alice and bob (token
// authentication) and to anonymous callers.
type exchangeGateway struct {
	g            *mcpgateway.Gateway
	f            *fixture
	logs         *syncBuffer
	clock        *approvaltest.Clock
	authed, open *httptest.Server
}

func newExchangeGateway(t *testing.T, up *guardedUpstream, e *tokenEndpoint, timeout time.Duration) *exchangeGateway {
	t.Helper()
	f := newFixture(t, nil, nil)
	logs := &syncBuffer{}
	g := f.newGateway(t, mcpgateway.Options{ActivateOnList: []string{"*"},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: up.URL, TokenExchange: &mcpgateway.TokenExchange{
			TokenEndpoint: e.URL, ClientID: clientID, ClientSecret: clientSecret,
			Audience: "notes-api", Resource: "https://notes.example/mcp", Scopes: []string{"notes:read", "notes:write"},
			Timeout: timeout}}}})
	clock := &approvaltest.Clock{}
	clock.Set(approvaltest.Epoch)
	mcpgateway.SetExchangeClock(g, clock.Now)
	tokens := identity.NewTokenSource("idp", func(tok string) (string, bool) {
		switch tok {
		case aliceToken:
			return "alice", true
		case bobToken:
			return "bob", true
		}
		return "", false
	})
	authed := httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
	t.Cleanup(authed.Close)
	open := httptest.NewServer(g.Handler())
	t.Cleanup(open.Close)
	return &exchangeGateway{g: g, f: f, logs: logs, clock: clock, authed: authed, open: open}
}

// session opens a session as the caller with token ("" for anonymous)
// and lists its tools.
func (x *exchangeGateway) session(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	var cs *mcp.ClientSession
	if token == "" {
		cs = connectVia(t, x.open.URL, http.DefaultTransport)
	} else {
		cs = connectVia(t, x.authed.URL, withHeader{"Authorization", "Bearer " + token})
	}
	toolNames(t, cs)
	return cs
}

// TestCredentialTokenExchange: each caller's calls reach the upstream
// with a token exchanged for the caller's own (RFC 8693); the caller's
// token never reaches the upstream. A refused exchange, or a caller
// without a token, is not forwarded: the agent gets an error naming the
// upstream and the reason, and it is logged and recorded.
func TestCredentialTokenExchange(t *testing.T) {
	e := newTokenEndpoint(t, aliceToken)
	up := newGuardedUpstream(t, e.accepts)
	x := newExchangeGateway(t, up, e, 0)

	alice := x.session(t, aliceToken)
	res := call(t, alice, "read_note", map[string]any{"name": "a"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, []string{"Bearer exchanged-1"}, up.calls())
	form := e.lastForm()
	assert.Equal(t, url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {aliceToken},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":             {"notes-api"},
		"resource":             {"https://notes.example/mcp"},
		"scope":                {"notes:read notes:write"},
	}, form)
	assert.Equal(t, 1, e.exchanges(), "one exchange serves the session's requests")

	for _, tc := range []struct {
		name   string
		caller func(t *testing.T) *mcp.ClientSession
		reason string
	}{
		{"refused exchange", func(t *testing.T) *mcp.ClientSession { return x.session(t, bobToken) },
			"refused: the token endpoint answered HTTP 400 invalid_grant"},
		{"anonymous caller", func(t *testing.T) *mcp.ClientSession { return x.session(t, "") },
			"presented no bearer token"},
		{"stdio caller", func(t *testing.T) *mcp.ClientSession {
			cs := connect(t, x.g, nil)
			toolNames(t, cs)
			return cs
		}, "presented no bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(up.calls())
			credRecords := countKind(readRecords(t, x.f.logPath), "mcp_upstream_credentials", "")
			cs := tc.caller(t)
			res := call(t, cs, "read_note", map[string]any{"name": "a"})
			require.True(t, res.IsError)
			assert.Contains(t, text(res), "upstream notes")
			assert.Contains(t, text(res), tc.reason)
			assert.Contains(t, text(res), "nothing was sent")
			assert.Len(t, up.calls(), before, "the upstream never saw the call")
			assert.Equal(t, credRecords+1, countKind(readRecords(t, x.f.logPath), "mcp_upstream_credentials", ""), "recorded")
			assert.Contains(t, x.logs.String(), tc.reason, "logged")
		})
	}

	for _, v := range up.headerValues() {
		assert.NotContains(t, v, aliceToken, "the caller's token reached the upstream")
		assert.NotContains(t, v, bobToken, "the caller's token reached the upstream")
	}
	assertNoSecrets(t, x.logs, x.f, clientSecret, "exchanged-1", aliceToken, bobToken)
}

// TestCredentialExchangeExpiry: an exchanged token is used until its
// expiry minus the skew (half of a 60-second lifetime: 30 seconds), then
// exchanged again; a failing token endpoint at renewal stops the calls,
// which are not sent, with the reason.
func TestCredentialExchangeExpiry(t *testing.T) {
	for _, tc := range []struct {
		name, fail, reason string
		timeout            time.Duration
	}{
		{"renewed", "", "", 0},
		{"endpoint error", "500", "failed: the token endpoint answered HTTP 500", 0},
		{"malformed answer", "malformed", "not a JSON object", 0},
		{"no access_token", "no_token", "has no access_token", 0},
		{"not bearer", "mac", `token_type "mac" is not Bearer or N_A`, 0},
		{"redirect not followed", "redirect", "failed: the token endpoint answered HTTP 307", 0},
		{"timeout", "hang", "did not answer within 2s", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTokenEndpoint(t, aliceToken)
			up := newGuardedUpstream(t, e.accepts)
			x := newExchangeGateway(t, up, e, tc.timeout)
			alice := x.session(t, aliceToken)
			res := call(t, alice, "read_note", map[string]any{"name": "a"})
			require.False(t, res.IsError, text(res))

			x.clock.Set(approvaltest.Epoch.Add(29 * time.Second))
			res = call(t, alice, "read_note", map[string]any{"name": "a"})
			require.False(t, res.IsError, text(res))
			assert.Equal(t, []string{"Bearer exchanged-1", "Bearer exchanged-1"}, up.calls(), "cached before renewal")
			assert.Equal(t, 1, e.exchanges())

			e.setFail(tc.fail)
			x.clock.Set(approvaltest.Epoch.Add(30 * time.Second))
			res = call(t, alice, "read_note", map[string]any{"name": "a"})
			if tc.fail == "" {
				require.False(t, res.IsError, text(res))
				assert.Equal(t, []string{"Bearer exchanged-1", "Bearer exchanged-1", "Bearer exchanged-2"}, up.calls(), "renewed at expiry minus skew")
				assert.Equal(t, 2, e.exchanges())
				return
			}
			require.True(t, res.IsError)
			assert.Contains(t, text(res), "upstream notes")
			assert.Contains(t, text(res), tc.reason)
			assert.Len(t, up.calls(), 2, "the upstream never saw the call")
			assert.Equal(t, 2, e.exchanges(), "one attempt at renewal, no redirect followed")
			assert.Equal(t, 1, countKind(readRecords(t, x.f.logPath), "mcp_upstream_credentials", ""))
			assertNoSecrets(t, x.logs, x.f, clientSecret, "exchanged-1", aliceToken)
		})
	}
}

// TestCredentialOptionsRefused: headers and token exchange are for URL
// upstreams only, header names are tokens the transport does not own,
// and a refusal names the field, never a secret.
func TestCredentialOptionsRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	x := func(mod func(*mcpgateway.TokenExchange)) *mcpgateway.TokenExchange {
		te := &mcpgateway.TokenExchange{TokenEndpoint: "https://idp.example/token", ClientID: "gw", ClientSecret: staticSecret}
		if mod != nil {
			mod(te)
		}
		return te
	}
	hdr := func(name, value string) []mcpgateway.Header {
		return []mcpgateway.Header{{Name: name, Value: mcpgateway.Secret(value)}}
	}
	notesURL := "https://notes.example/mcp"
	for _, tc := range []struct {
		name  string
		up    mcpgateway.Upstream
		field string
	}{
		{"headers on a command", mcpgateway.Upstream{Command: []string{"srv"}, Headers: hdr("X-Api-Key", staticSecret)}, "upstreams[0].headers"},
		{"exchange on a command", mcpgateway.Upstream{Command: []string{"srv"}, TokenExchange: x(nil)}, "upstreams[0].token_exchange"},
		{"host", mcpgateway.Upstream{URL: notesURL, Headers: hdr("host", staticSecret)}, "upstreams[0].headers[0]"},
		{"content length", mcpgateway.Upstream{URL: notesURL, Headers: hdr("Content-Length", "1")}, "upstreams[0].headers[0]"},
		{"session id", mcpgateway.Upstream{URL: notesURL, Headers: hdr("mcp-session-id", staticSecret)}, "upstreams[0].headers[0]"},
		{"protocol version", mcpgateway.Upstream{URL: notesURL, Headers: hdr("MCP-Protocol-Version", "2025-06-18")}, "upstreams[0].headers[0]"},
		{"not a token", mcpgateway.Upstream{URL: notesURL, Headers: hdr("X Api Key", staticSecret)}, "upstreams[0].headers[0]"},
		{"newline in value", mcpgateway.Upstream{URL: notesURL, Headers: hdr("X-Api-Key", staticSecret+"\r\nX-Evil: 1")}, "upstreams[0].headers[0]"},
		{"empty value", mcpgateway.Upstream{URL: notesURL, Headers: hdr("X-Api-Key", "")}, "upstreams[0].headers[0]"},
		{"twice", mcpgateway.Upstream{URL: notesURL, Headers: append(hdr("x-api-key", "a"), hdr("X-API-KEY", "b")...)}, "upstreams[0].headers[1]"},
		{"authorization and exchange", mcpgateway.Upstream{URL: notesURL, Headers: hdr("Authorization", staticSecret), TokenExchange: x(nil)}, "upstreams[0].headers[0]"},
		{"plain http endpoint", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.TokenEndpoint = "http://idp.example/token" })}, "upstreams[0].token_exchange.token_endpoint"},
		{"user info in endpoint", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.TokenEndpoint = "https://u:p@idp.example/token" })}, "upstreams[0].token_exchange.token_endpoint"},
		{"no client id", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.ClientID = "" })}, "upstreams[0].token_exchange.client_id"},
		{"no client secret", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.ClientSecret = "" })}, "upstreams[0].token_exchange.client_secret"},
		{"bad scope", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.Scopes = []string{"a b"} })}, "upstreams[0].token_exchange.scopes[0]"},
		{"negative timeout", mcpgateway.Upstream{URL: notesURL, TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.Timeout = -1 })}, "upstreams[0].token_exchange.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.up.Name = "notes"
			_, err := mcpgateway.New(context.Background(), f.cfg, mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{tc.up}})
			var oe *mcpgateway.OptionsError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.NotContains(t, err.Error(), staticSecret)
		})
	}
	// Loopback endpoints may be plain http (a local token service).
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: notesURL,
		Headers:       hdr("X-Api-Key", staticSecret),
		TokenExchange: x(func(te *mcpgateway.TokenExchange) { te.TokenEndpoint = "http://127.0.0.1:9/token" })}}})
	// Options as printed, logged or encoded hold no secret.
	var sb syncBuffer
	slog.New(slog.NewJSONHandler(&sb, nil)).Info("options", "upstreams", g.Options().Upstreams)
	b, err := json.Marshal(g.Options().Upstreams)
	require.NoError(t, err)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", g.Options().Upstreams, g.Options().Upstreams, g.Options().Upstreams, g.Options().Upstreams[0].Headers[0].Value), sb.String(), string(b)} {
		assert.NotContains(t, s, staticSecret)
		assert.Contains(t, s, "[redacted]")
	}
}

// TestCredentialReload: SetCredentials (a config reload's secrets, read
// again) takes effect at the next request of live sessions; refused
// credentials change nothing.
func TestCredentialReload(t *testing.T) {
	up := newGuardedUpstream(t, func(authz string) bool { return strings.HasPrefix(authz, "Bearer ") })
	f := newFixture(t, nil, nil)
	hdr := func(v string) []mcpgateway.Header {
		return []mcpgateway.Header{{Name: "Authorization", Value: mcpgateway.Secret(v)}}
	}
	g := f.newGateway(t, mcpgateway.Options{ActivateOnList: []string{"*"},
		Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: up.URL, Headers: hdr("Bearer old")}}})
	cs := connect(t, g, nil)
	toolNames(t, cs)
	require.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)

	require.NoError(t, g.SetCredentials([]mcpgateway.Upstream{{Name: "notes", Headers: hdr("Bearer new")}}))
	require.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)

	var oe *mcpgateway.OptionsError
	require.ErrorAs(t, g.SetCredentials([]mcpgateway.Upstream{{Name: "notes", Headers: hdr("Bearer bad\n")}}), &oe)
	assert.Equal(t, "upstreams[0].headers[0]", oe.Field)
	require.ErrorAs(t, g.SetCredentials([]mcpgateway.Upstream{{Name: "other", Headers: hdr("Bearer x")}}), &oe)
	require.ErrorAs(t, g.SetCredentials([]mcpgateway.Upstream{{Name: "notes", TokenExchange: &mcpgateway.TokenExchange{
		TokenEndpoint: "https://idp.example/token", ClientID: "gw", ClientSecret: "s"}}}), &oe)
	assert.Equal(t, "upstreams[0].token_exchange", oe.Field)
	require.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)
	assert.Equal(t, []string{"Bearer old", "Bearer new", "Bearer new"}, up.calls())
}
