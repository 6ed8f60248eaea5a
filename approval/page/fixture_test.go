package page_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/approval/page"
	"github.com/gatehost/gatehost/internal/testing/oidctest"
)

const prefix = "/approvals"

// Token sign-in principals: alice and bob are approvers, eve is not.
var tokens = map[string]*abi.Principal{
	"tok-alice": {Method: abi.MethodToken, Issuer: "approvers", Subject: "alice"},
	"tok-bob":   {Method: abi.MethodToken, Issuer: "approvers", Subject: "bob"},
	"tok-eve":   {Method: abi.MethodToken, Issuer: "approvers", Subject: "eve"},
	"tok-big":   {Method: abi.MethodToken, Issuer: "approvers", Subject: "alice", Claims: map[string]any{"notes": strings.Repeat("x", 4000)}},
}

// fixture is a desk and its page on a loopback server, with a test OIDC
// provider when asked.
type fixture struct {
	clock *approvaltest.Clock
	now   func() time.Time
	log   *approvaltest.Log
	appr  *approval.Approvals
	desk  *approval.Desk
	idp   *oidctest.Provider
	srv   *httptest.Server
	page  http.Handler
}

type setup struct {
	oidc      bool
	realClock bool // the browser's cookies and the provider's tokens live in real time
}

func newFixture(t *testing.T, s setup) *fixture {
	t.Helper()
	f := &fixture{clock: &approvaltest.Clock{}, log: &approvaltest.Log{}}
	f.clock.Set(approvaltest.Epoch)
	f.now = f.clock.Now
	if s.realClock {
		f.now = time.Now
	}
	var mu sync.Mutex
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := f.page
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)

	rule := approval.Rule{Approvers: []approval.Approver{
		{Method: abi.MethodToken, Subject: "alice"}, {Method: abi.MethodToken, Subject: "bob"}}}
	o := page.Options{Prefix: prefix, Now: f.now, Logger: testLogger(t),
		Token: func(given string) *abi.Principal { return tokens[given] }}
	if s.oidc {
		f.idp = oidctest.New(t, oidctest.Options{
			Users: map[string]oidctest.User{
				"alice":   {Claims: map[string]any{"groups": []string{"approvers"}, "email": "alice@example.com"}},
				"bob":     {Claims: map[string]any{"groups": []string{"approvers", "dev"}, "email": "bob@example.com"}},
				"mallory": {Claims: map[string]any{"groups": []string{"staff"}}},
			},
			Clients: []oidctest.Client{{ID: "approval-page", Secret: "s3cret", RedirectURIs: []string{f.srv.URL + prefix + "/callback"}}},
		})
		rule.Approvers = append(rule.Approvers, approval.Approver{Method: abi.MethodOIDC, Issuer: f.idp.URL,
			Claims: map[string]string{"groups": "approvers"}})
		o.OIDC = &page.OIDC{Issuer: f.idp.URL, ClientID: "approval-page", ClientSecret: "s3cret",
			RedirectURL: f.srv.URL + prefix + "/callback", Claims: []string{"groups", "email"}, HTTPClient: f.idp.Client()}
	}
	var err error
	f.appr, err = approval.New(approval.Options{Now: f.now, Record: f.log.Append})
	require.NoError(t, err)
	f.desk, err = approval.NewDesk(approval.DeskOptions{Approvals: f.appr, Rule: rule, Poll: 50 * time.Millisecond,
		PageURL: f.srv.URL + prefix})
	require.NoError(t, err)
	o.Desk = f.desk
	h, err := page.New(t.Context(), o)
	require.NoError(t, err)
	mu.Lock()
	f.page = h
	mu.Unlock()
	return f
}

// editCall is the arguments of a realistic filesystem edit_file call.
const editCall = `{"path":"/srv/app/config/deploy.yaml","edits":[{"oldText":"replicas: 2\nimage: registry.example.com/app:1.4.2\nresources:\n  limits:\n    memory: 512Mi","newText":"replicas: 6\nimage: registry.example.com/app:1.5.0\nresources:\n  limits:\n    memory: 2Gi"}],"dryRun":false}`

// open opens a request for a call by caller with args.
func (f *fixture) open(t *testing.T, caller *abi.Principal, tool, args string) approval.Request {
	t.Helper()
	r, created, err := f.desk.Open(t.Context(), approval.Request{
		Binding: approval.Binding{Pipeline: "gateway", Session: "s-1", Tool: "mcp.filesystem:" + tool,
			SchemaDigest: approvaltest.SHA("schema-" + tool), SubjectSHA256: approvaltest.SHA(args)},
		Upstream: "filesystem", Effect: "write", Caller: caller, Front: "mcp",
		Findings: []abi.Finding{{Code: "confirmation_required", Severity: abi.Blocking,
			Message: "the tool writes files: a person must approve each call"}},
		Arguments: json.RawMessage(args),
	})
	require.NoError(t, err)
	require.True(t, created)
	return r
}

func (f *fixture) get(t *testing.T, id string) approval.Request {
	t.Helper()
	r, err := f.desk.Get(t.Context(), id)
	require.NoError(t, err)
	return r
}

// client is a scripted browser: a cookie jar, redirects not followed.
type client struct {
	t    *testing.T
	f    *fixture
	http *http.Client
}

func (f *fixture) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, f: f, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// clientFrom is a client whose requests reach the page from addr (a
// remote address, "host:port"), served in process.
func (f *fixture) clientFrom(t *testing.T, addr string) *client {
	c := f.client(t)
	c.http.Transport = from{f: f, addr: addr}
	return c
}

type from struct {
	f    *fixture
	addr string
}

func (d from) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.RemoteAddr = d.addr
	rec := httptest.NewRecorder()
	d.f.page.ServeHTTP(rec, req)
	return rec.Result(), nil
}

type resp struct {
	status   int
	body     string
	location string
	header   http.Header
}

func (c *client) do(req *http.Request) resp {
	c.t.Helper()
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return resp{status: res.StatusCode, body: string(b), location: res.Header.Get("Location"), header: res.Header}
}

func (c *client) get(path string) resp {
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodGet, c.f.srv.URL+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

// post sends form as a same-origin browser would, unless hdr says
// otherwise (a value "" removes the header).
func (c *client) post(path string, form url.Values, hdr map[string]string) resp {
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodPost, c.f.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", c.f.srv.URL)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return c.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "no CSRF field in the page")
	return m[1]
}

// signIn signs c in with token and returns the session's CSRF token.
func (c *client) signIn(token string) string {
	c.t.Helper()
	r := c.get(prefix + "/signin")
	require.Equal(c.t, http.StatusOK, r.status)
	r = c.post(prefix+"/signin/token", url.Values{"csrf": {csrfOf(c.t, r.body)}, "token": {token}, "next": {prefix + "/"}}, nil)
	require.Equal(c.t, http.StatusSeeOther, r.status, r.body)
	r = c.get(prefix + "/signin")
	if r.status == http.StatusSeeOther {
		r = c.get(prefix + "/")
	}
	if r.status != http.StatusOK {
		return ""
	}
	return csrfOf(c.t, r.body)
}

// wait polls cond: for conditions set by a browser, bounded by ctx.
func waitFor(ctx context.Context, cond func() bool) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// logged reports whether a record of kind with reason was appended.
func (f *fixture) logged(kind, reason string) bool {
	for _, rec := range f.log.Of("") {
		if rec.Kind == kind && rec.Reason == reason {
			return true
		}
	}
	return false
}
