package page_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/approval/page"
)

var alice, bob = tokens["tok-alice"], tokens["tok-bob"]

func TestSignInGate(t *testing.T) {
	f := newFixture(t, setup{})
	rq := f.open(t, bob, "edit_file", editCall)
	for _, c := range []struct {
		name, token, path string
		status            int
		location          string // of a redirect
		has, hasNot       []string
	}{
		{name: "no session: the list sends to the sign-in page", path: prefix + "/", status: http.StatusSeeOther,
			location: prefix + "/signin?next=%2Fapprovals%2F"},
		{name: "no session: a request's page sends to sign-in and back", path: prefix + "/requests/" + rq.ID, status: http.StatusSeeOther,
			location: prefix + "/signin?next=" + url.QueryEscape(prefix+"/requests/"+rq.ID)},
		{name: "the prefix alone", path: prefix, status: http.StatusSeeOther, location: prefix + "/"},
		{name: "no session: the sign-in page", path: prefix + "/signin", status: http.StatusOK,
			has: []string{"Approver token", `name="csrf"`}, hasNot: []string{"edit_file"}},
		{name: "no session: no event stream", path: prefix + "/events", status: http.StatusUnauthorized},
		{name: "a non-approver sees 403, never the list", token: "tok-eve", path: prefix + "/", status: http.StatusForbidden,
			has: []string{"not one of the approvers", "token:approvers/eve"}, hasNot: []string{"edit_file", "deploy.yaml"}},
		{name: "a non-approver sees no request", token: "tok-eve", path: prefix + "/requests/" + rq.ID, status: http.StatusForbidden,
			hasNot: []string{"deploy.yaml"}},
		{name: "a non-approver gets no event stream", token: "tok-eve", path: prefix + "/events", status: http.StatusForbidden},
		{name: "an approver sees the list", token: "tok-alice", path: prefix + "/", status: http.StatusOK,
			has: []string{"edit_file", "Approve", "Deny", "token:approvers/bob", "confirmation_required",
				"a person must approve each call", "filesystem", "write", rq.ID}},
		{name: "an approver sees the request's own page", token: "tok-alice", path: prefix + "/requests/" + rq.ID, status: http.StatusOK,
			has: []string{"edit_file", `value="request"`, "Approve"}},
		{name: "no such request", token: "tok-alice", path: prefix + "/requests/rq-" + strings.Repeat("0", 32), status: http.StatusNotFound},
		{name: "a malformed id", token: "tok-alice", path: prefix + "/requests/nope", status: http.StatusNotFound},
		{name: "signed in: the sign-in page sends on", token: "tok-alice", path: prefix + "/signin?next=//evil.example/x",
			status: http.StatusSeeOther, location: prefix + "/"},
		{name: "an unknown path", path: prefix + "/nope", status: http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := f.client(t)
			if c.token != "" {
				cl.signIn(c.token)
			}
			r := cl.get(c.path)
			assert.Equal(t, c.status, r.status, r.body)
			if c.location != "" {
				assert.Equal(t, c.location, r.location)
			}
			for _, s := range c.has {
				assert.Contains(t, r.body, s)
			}
			for _, s := range c.hasNot {
				assert.NotContains(t, r.body, s)
			}
			assertHeaders(t, r.header)
		})
	}
}

func assertHeaders(t *testing.T, h http.Header) {
	t.Helper()
	assert.Equal(t, page.CSP, h.Get("Content-Security-Policy"))
	assert.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		h.Get("Content-Security-Policy"))
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
	assert.Equal(t, "no-store", h.Get("Cache-Control"))
}

func TestTokenSignIn(t *testing.T) {
	f := newFixture(t, setup{})
	for _, c := range []struct {
		name   string
		token  string
		hdr    map[string]string
		csrf   string // "" is the page's
		status int
	}{
		{name: "an approver token", token: "tok-alice", status: http.StatusSeeOther},
		{name: "a wrong token", token: "tok-nobody", status: http.StatusUnauthorized},
		{name: "an empty token", token: "", status: http.StatusUnauthorized},
		{name: "a principal too large for a cookie", token: "tok-big", status: http.StatusUnprocessableEntity},
		{name: "no CSRF token", token: "tok-alice", csrf: "-", status: http.StatusForbidden},
		{name: "a wrong CSRF token", token: "tok-alice", csrf: strings.Repeat("ab", 32), status: http.StatusForbidden},
		{name: "a cross-site form (login CSRF)", token: "tok-alice", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := f.client(t)
			r := cl.get(prefix + "/signin")
			csrf := csrfOf(t, r.body)
			switch c.csrf {
			case "":
			case "-":
				csrf = ""
			default:
				csrf = c.csrf
			}
			r = cl.post(prefix+"/signin/token", url.Values{"csrf": {csrf}, "token": {c.token}}, c.hdr)
			assert.Equal(t, c.status, r.status, r.body)
			assertHeaders(t, r.header)
			after := cl.get(prefix + "/")
			if c.status == http.StatusSeeOther {
				assert.Equal(t, http.StatusOK, after.status)
			} else {
				assert.Equal(t, http.StatusSeeOther, after.status, "not signed in")
			}
		})
	}
	t.Run("a token sign-in without a session cookie is refused", func(t *testing.T) {
		r := f.client(t).post(prefix+"/signin/token", url.Values{"token": {"tok-alice"}}, nil)
		assert.Equal(t, http.StatusForbidden, r.status)
	})
	t.Run("sign-out ends the session", func(t *testing.T) {
		cl := f.client(t)
		csrf := cl.signIn("tok-alice")
		r := cl.post(prefix+"/signout", url.Values{"csrf": {csrf}}, nil)
		require.Equal(t, http.StatusSeeOther, r.status)
		assert.Equal(t, http.StatusSeeOther, cl.get(prefix+"/").status)
	})
	t.Run("the session ends at its TTL", func(t *testing.T) {
		cl := f.client(t)
		cl.signIn("tok-alice")
		f.clock.Set(approvaltest.Epoch.Add(page.DefaultSessionTTL))
		defer f.clock.Set(approvaltest.Epoch)
		assert.Equal(t, http.StatusSeeOther, cl.get(prefix+"/").status)
	})
}

func TestDecide(t *testing.T) {
	type want struct {
		status int
		has    string
		state  string // the request's state after
	}
	for _, c := range []struct {
		name   string
		signIn string
		form   func(csrf string) url.Values
		hdr    map[string]string
		before func(f *fixture, rq approval.Request)
		want   want
	}{
		{name: "approve", signIn: "tok-alice",
			form: func(csrf string) url.Values {
				return url.Values{"csrf": {csrf}, "decision": {"approve"}, "note": {"looks right"}}
			},
			want: want{status: http.StatusSeeOther, state: approval.StateApproved}},
		{name: "deny with a reason", signIn: "tok-alice",
			form: func(csrf string) url.Values {
				return url.Values{"csrf": {csrf}, "decision": {"deny"}, "note": {"six replicas is too many"}}
			},
			want: want{status: http.StatusSeeOther, state: approval.StateDenied}},
		{name: "no CSRF token", signIn: "tok-alice",
			form: func(string) url.Values { return url.Values{"decision": {"approve"}} },
			want: want{status: http.StatusForbidden, has: "Reload the page", state: approval.StatePending}},
		{name: "a wrong CSRF token", signIn: "tok-alice",
			form: func(csrf string) url.Values {
				return url.Values{"csrf": {csrf[:len(csrf)-1] + "x"}, "decision": {"approve"}}
			},
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "another session's CSRF token", signIn: "tok-alice",
			form: func(string) url.Values {
				return url.Values{"csrf": {strings.Repeat("0", 64)}, "decision": {"approve"}}
			},
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "a cross-site POST with the right token", signIn: "tok-alice", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusForbidden, has: "not sent from the approval page", state: approval.StatePending}},
		{name: "a same-site POST from another origin", signIn: "tok-alice", hdr: map[string]string{"Sec-Fetch-Site": "same-site"},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "another Origin, no Sec-Fetch-Site", signIn: "tok-alice",
			hdr:  map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "Origin null without Sec-Fetch-Site", signIn: "tok-alice",
			hdr:  map[string]string{"Sec-Fetch-Site": "", "Origin": "null"},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "Origin null from the page itself (no-referrer)", signIn: "tok-alice",
			hdr:  map[string]string{"Origin": "null"},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"deny"}} },
			want: want{status: http.StatusSeeOther, state: approval.StateDenied}},
		{name: "self-approval", signIn: "tok-bob",
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusForbidden, has: "You made this call; another approver must decide it.", state: approval.StatePending}},
		{name: "self-denial", signIn: "tok-bob",
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"deny"}} },
			want: want{status: http.StatusForbidden, has: "another approver must decide it", state: approval.StatePending}},
		{name: "a non-approver", signIn: "tok-eve",
			form: func(string) url.Values { return url.Values{"decision": {"approve"}} },
			want: want{status: http.StatusForbidden, state: approval.StatePending}},
		{name: "no decision", signIn: "tok-alice",
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"maybe"}} },
			want: want{status: http.StatusBadRequest, state: approval.StatePending}},
		{name: "a reason too long", signIn: "tok-alice",
			form: func(csrf string) url.Values {
				return url.Values{"csrf": {csrf}, "decision": {"approve"}, "note": {strings.Repeat("x", approval.MaxNoteBytes+1)}}
			},
			want: want{status: http.StatusBadRequest, has: "at most 2000", state: approval.StatePending}},
		{name: "a body over the bound", signIn: "tok-alice",
			form: func(csrf string) url.Values {
				return url.Values{"csrf": {csrf}, "decision": {"approve"}, "pad": {strings.Repeat("x", 70<<10)}}
			},
			want: want{status: http.StatusBadRequest, state: approval.StatePending}},
		{name: "decided already", signIn: "tok-alice",
			before: func(f *fixture, rq approval.Request) {
				_, err := f.desk.Decide(context.Background(), rq.ID, alice, false, "")
				require.NoError(t, err)
			},
			form: func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want: want{status: http.StatusConflict, has: "decided already", state: approval.StateDenied}},
		{name: "expired", signIn: "tok-alice",
			before: func(f *fixture, rq approval.Request) { f.clock.Set(rq.ExpiresAt) },
			form:   func(csrf string) url.Values { return url.Values{"csrf": {csrf}, "decision": {"approve"}} },
			want:   want{status: http.StatusNotFound, has: "expired"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			rq := f.open(t, bob, "edit_file", editCall)
			cl := f.client(t)
			csrf := cl.signIn(c.signIn)
			if csrf == "" { // a non-approver: the sign-in page's token
				csrf = csrfOf(t, cl.get(prefix+"/signin").body)
			}
			if c.before != nil {
				c.before(f, rq)
			}
			r := cl.post(prefix+"/requests/"+rq.ID, c.form(csrf), c.hdr)
			assert.Equal(t, c.want.status, r.status, r.body)
			assert.Contains(t, r.body, c.want.has)
			assertHeaders(t, r.header)
			if c.want.state == "" { // gone: nothing was approved
				_, err := f.desk.Get(t.Context(), rq.ID)
				assert.ErrorIs(t, err, approval.ErrNoRequest)
				assert.False(t, f.logged(approval.KindMinted, ""), "nothing minted")
				return
			}
			got := f.get(t, rq.ID)
			assert.Equal(t, c.want.state, got.State)
			switch got.State {
			case approval.StateApproved:
				assert.Equal(t, prefix+"/#"+rq.ID, r.location)
				assert.True(t, approval.SamePrincipal(alice, got.DecidedBy))
				assert.Equal(t, "looks right", got.Note)
				// The approval minted confirms exactly this call, once.
				require.True(t, approval.ValidID(got.ApprovalID))
				conf, err := f.appr.Confirm(t.Context(), approvaltest.Present("run-1", got.ApprovalID, rq.Binding, true))
				require.NoError(t, err)
				require.NotNil(t, conf)
				assert.Equal(t, rq.Tool, conf.Tool)
				assert.True(t, f.logged(approval.KindMinted, ""), "the approval is recorded as minted")
				// The list shows it decided, without buttons.
				page := cl.get(prefix + "/requests/" + rq.ID)
				assert.Contains(t, page.body, "Approved by <strong>token:approvers/alice</strong>")
				assert.NotContains(t, page.body, `value="approve"`)
			case approval.StateDenied:
				assert.Empty(t, got.ApprovalID)
				if c.before == nil {
					assert.Contains(t, cl.get(prefix+"/").body, "Denied by")
				}
			case approval.StatePending:
				assert.Nil(t, got.DecidedBy)
			}
		})
	}
}

func TestDecideFromTheRequestPage(t *testing.T) {
	f := newFixture(t, setup{})
	rq := f.open(t, bob, "edit_file", editCall)
	cl := f.client(t)
	cl.signIn("tok-alice")
	p := cl.get(prefix + "/requests/" + rq.ID)
	r := cl.post(prefix+"/requests/"+rq.ID, url.Values{"csrf": {csrfOf(t, p.body)}, "decision": {"deny"}, "from": {"request"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.status)
	assert.Equal(t, prefix+"/requests/"+rq.ID, r.location)
	assert.Equal(t, approval.StateDenied, f.get(t, rq.ID).State)
	assert.True(t, f.logged(approval.KindRefused, approval.CodeDenied), "the denial is recorded")
}

func TestSelfShownOnThePage(t *testing.T) {
	f := newFixture(t, setup{})
	rq := f.open(t, bob, "edit_file", editCall)
	cl := f.client(t)
	cl.signIn("tok-bob")
	r := cl.get(prefix + "/requests/" + rq.ID)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "You made this call; another approver must decide it.")
	assert.NotContains(t, r.body, `value="approve"`)
}

func TestEscaping(t *testing.T) {
	f := newFixture(t, setup{})
	hostile := "</script><img src=x onerror=alert(1)>"
	bidi := "\u202e" + "txt.exe" + "\u2066" + "\u200b"
	args := `{"path":"/tmp/` + bidi + `","content":"` + hostile + `","edits":[{"old_str":"a` + hostile + `","new_str":"b\u0000` + "\u2067" + `"}]}`
	rq := f.open(t, bob, "write_file"+"\u202e", args)
	_, _, err := f.desk.Open(t.Context(), approval.Request{Binding: approval.Binding{Pipeline: "p", Tool: "t<b>",
		SchemaDigest: approvaltest.SHA("s"), SubjectSHA256: approvaltest.SHA("x")}, Arguments: []byte(`"` + hostile + `"`)})
	require.NoError(t, err)
	cl := f.client(t)
	cl.signIn("tok-alice")
	for _, path := range []string{prefix + "/", prefix + "/requests/" + rq.ID} {
		r := cl.get(path)
		require.Equal(t, http.StatusOK, r.status)
		assert.NotContains(t, r.body, hostile)
		assert.NotContains(t, r.body, "<img")
		assert.NotContains(t, r.body, "<b>")
		for _, ch := range []string{"\u202e", "\u2066", "\u2067", "\u200b", "\x00"} {
			assert.False(t, strings.Contains(r.body, ch), "the hidden character %q reaches the page raw", ch)
		}
		assert.Contains(t, r.body, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;")
		assert.Contains(t, r.body, `<mark class="esc" title="hidden character U+202E">\u202e</mark>txt.exe`)
		assert.Contains(t, r.body, `\u0000`, "the JSON escape shows as sent")
		if path != prefix+"/" {
			assert.Contains(t, r.body, `<span class="sr">removed: </span>a&lt;/script&gt;`)
		}
	}
}

func TestArgumentsWholeAndDiffed(t *testing.T) {
	f := newFixture(t, setup{})
	long := strings.Repeat("0123456789", 20000) // 200 kB: shown whole, scrolled
	args := `{"path":"/srv/app/config/deploy.yaml","edits":[{"oldText":"keep\nold line\ntail","newText":"keep\nnew line\ntail"},{"oldText":"x","newText":"y"}],"big":"` + long + `","n":1.50e3}`
	rq := f.open(t, bob, "edit_file", args)
	cl := f.client(t)
	cl.signIn("tok-alice")
	r := cl.get(prefix + "/requests/" + rq.ID)
	require.Equal(t, http.StatusOK, r.status)
	has(t, r.body, long)
	has(t, r.body, `&#34;n&#34;: 1.50e3`)
	assert.Contains(t, r.body, "Change at <code>/edits/0</code>")
	assert.Contains(t, r.body, "Change at <code>/edits/1</code>")
	for _, l := range []string{
		`<span class="l l-same"><span class="sign" aria-hidden="true"> </span>keep</span>`,
		`<span class="l l-del"><span class="sign" aria-hidden="true">−</span><span class="sr">removed: </span>old line</span>`,
		`<span class="l l-add"><span class="sign" aria-hidden="true">+</span><span class="sr">added: </span>new line</span>`,
	} {
		has(t, r.body, l)
	}
}

func TestStatic(t *testing.T) {
	f := newFixture(t, setup{})
	cl := f.client(t)
	for _, c := range []struct{ path, ctype, has string }{
		{prefix + "/static/page.js", "text/javascript", "EventSource"},
		{prefix + "/static/page.css", "text/css", "--accent"},
	} {
		r := cl.get(c.path)
		assert.Equal(t, http.StatusOK, r.status)
		assert.Contains(t, r.header.Get("Content-Type"), c.ctype)
		assert.Contains(t, r.body, c.has)
		assert.Equal(t, page.CSP, r.header.Get("Content-Security-Policy"))
		assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
		assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
	}
	for _, path := range []string{prefix + "/static/", prefix + "/static/nope.js", prefix + "/static/templates"} {
		assert.Equal(t, http.StatusNotFound, cl.get(path).status, path)
	}
	r := cl.get(prefix + "/static/../page.go") // cleaned, and redirected
	assert.NotEqual(t, http.StatusOK, r.status)
	assert.NotContains(t, r.body, "package page")
}

// events opens the event stream as alice, signed in.
func events(t *testing.T, f *fixture) *bufio.Scanner {
	t.Helper()
	cl := f.client(t)
	cl.signIn("tok-alice")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+prefix+"/events", nil)
	require.NoError(t, err)
	res, err := cl.http.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	return bufio.NewScanner(res.Body)
}

func TestEvents(t *testing.T) {
	f := newFixture(t, setup{})
	cl := f.client(t)
	cl.signIn("tok-alice")
	sc := events(t, f)
	next := func() string {
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return v
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return ""
	}
	empty := next()
	list := cl.get(prefix + "/")
	assert.Contains(t, list.body, `data-version="`+empty+`"`, "the page's version is the stream's")

	rq := f.open(t, bob, "edit_file", editCall) // this process: at once
	opened := next()
	assert.NotEqual(t, empty, opened)
	_, err := f.desk.Decide(t.Context(), rq.ID, alice, true, "")
	require.NoError(t, err)
	decided := next()
	assert.NotEqual(t, opened, decided)
	f.clock.Set(approvaltest.Epoch.Add(time.Hour)) // expiry shows at the next poll
	assert.NotEqual(t, decided, next())
}

// TestEventsEndWithTheRule: the stream applies the rule as it is at each
// event, not as it was when the stream opened.
func TestEventsEndWithTheRule(t *testing.T) {
	for _, c := range []struct {
		name string
		rule approval.Rule
	}{
		{"the approver removed", approval.Rule{Approvers: []approval.Approver{{Method: abi.MethodToken, Subject: "bob"}}}},
		{"the token removed", approval.Rule{Approvers: []approval.Approver{{Method: abi.MethodToken, Subject: "alice"}},
			SignedIn: func(*abi.Principal) bool { return false }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			sc := events(t, f)
			data := func() bool {
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "data: ") {
						return true
					}
				}
				return false
			}
			require.True(t, data(), "the first version")
			require.NoError(t, f.desk.SetRule(c.rule))
			f.open(t, bob, "edit_file", editCall)
			assert.False(t, data(), "no change reaches a principal who may no longer approve; the stream ends")
			assert.NoError(t, sc.Err(), "ended by the server, not the hang guard")
		})
	}
}

// has asserts that body holds s, without printing a long body.
func has(t *testing.T, body, s string) {
	t.Helper()
	if !strings.Contains(body, s) {
		t.Errorf("the page (%d bytes) does not hold %.200q", len(body), s)
	}
}

func TestNewRefuses(t *testing.T) {
	f := newFixture(t, setup{})
	token := func(string) *abi.Principal { return nil }
	for _, c := range []struct {
		name string
		o    page.Options
		want string
	}{
		{"no desk", page.Options{Token: token}, "no desk"},
		{"no sign-in", page.Options{Desk: f.desk}, "no sign-in"},
		{"a prefix without a slash", page.Options{Desk: f.desk, Token: token, Prefix: "approvals"}, "prefix"},
		{"a prefix with a space", page.Options{Desk: f.desk, Token: token, Prefix: "/a b"}, "prefix"},
		{"a prefix with a pattern", page.Options{Desk: f.desk, Token: token, Prefix: "/{x}"}, "prefix"},
		{"a prefix with //", page.Options{Desk: f.desk, Token: token, Prefix: "//x"}, "prefix"},
		{"a short cookie key", page.Options{Desk: f.desk, Token: token, CookieKey: []byte("short")}, "cookie key"},
		{"an OIDC redirect elsewhere", page.Options{Desk: f.desk, Prefix: prefix,
			OIDC: &page.OIDC{Issuer: "https://idp.example", ClientID: "c", RedirectURL: "https://a.example/other"}}, "redirect URL"},
		{"an OIDC without a client", page.Options{Desk: f.desk, OIDC: &page.OIDC{Issuer: "https://idp.example"}}, "client id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := page.New(t.Context(), c.o)
			assert.Nil(t, h)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	for _, p := range []string{"", "/", "/approvals/", "/a/b-c_d.e~f"} {
		_, err := page.New(t.Context(), page.Options{Desk: f.desk, Token: token, Prefix: p})
		assert.NoError(t, err, "%q", p)
	}
}

func TestLongList(t *testing.T) {
	f := newFixture(t, setup{})
	for i := range 60 {
		f.open(t, bob, fmt.Sprintf("tool_%02d", i), `{}`)
	}
	cl := f.client(t)
	cl.signIn("tok-alice")
	r := cl.get(prefix + "/")
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, 50, strings.Count(r.body, `<article class="req`))
	assert.Contains(t, r.body, "10 more, each on its own page")
	assert.Equal(t, 10, strings.Count(r.body, `<li><a href="/approvals/requests/rq-`))
	assert.Contains(t, r.body, `<span class="count">60</span>`)
}

// TestListBoundedAsRendered: hidden characters render many times larger
// than they are sent; the list's bound counts them as rendered, and a
// request's own page still shows every one.
func TestListBoundedAsRendered(t *testing.T) {
	for _, c := range []struct {
		name  string
		value string // the argument's string, 252 kB
		// whole is how many requests the list shows whole.
		whole int
	}{
		{"a run of one hidden character is one mark", strings.Repeat("\u200b", 84000), 4},
		{"alternating hidden characters, a mark each", strings.Repeat("\u200b\u200c", 42000), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			var ids []string
			for i := range 8 {
				ids = append(ids, f.open(t, bob, fmt.Sprintf("write_%d", i), `{"s":"`+c.value+`"}`).ID)
			}
			cl := f.client(t)
			cl.signIn("tok-alice")
			r := cl.get(prefix + "/")
			require.Equal(t, http.StatusOK, r.status)
			assert.Less(t, len(r.body), 5<<19, "the list stays within its bound as rendered")
			assert.Equal(t, c.whole, strings.Count(r.body, `<article class="req`))
			assert.Contains(t, r.body, fmt.Sprintf("%d more, each on its own page", 8-c.whole))
			assert.Less(t, strings.Count(r.body, "<mark"), 50000)
			one := cl.get(prefix + "/requests/" + ids[0])
			require.Equal(t, http.StatusOK, one.status)
			for _, ch := range []string{"\u200b", "\u200c"} {
				assert.Equal(t, strings.Count(c.value, ch), strings.Count(one.body, strconv.QuoteToASCII(ch)[1:7]),
					"every %q on the request's own page, escaped", ch)
			}
		})
	}
}

func TestTokenSignInThrottled(t *testing.T) {
	// Each client: 10 at once, then one per 4 s; all: 600, then 20 a second.
	type try struct {
		from, token string
		want        int
	}
	guesses := func(from string, n int) []try {
		var out []try
		for range n {
			out = append(out, try{from, "guess", http.StatusUnauthorized})
		}
		return out
	}
	// manyGuesses is n clients' bursts.
	manyGuesses := func(n int) []try {
		var out []try
		for i := range n {
			out = append(out, guesses(fmt.Sprintf("192.0.2.%d:1", i+1), 10)...)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		tries []try
		// after is tried at +after, its status wanted.
		after time.Duration
		then  try
	}{
		{name: "one client's guesses do not lock out another",
			tries: append(guesses("203.0.113.7:4000", 10),
				try{"203.0.113.7:4001", "guess", http.StatusTooManyRequests},
				try{"203.0.113.7:4002", "tok-alice", http.StatusTooManyRequests}),
			then: try{"198.51.100.2:5000", "tok-alice", http.StatusSeeOther}},
		{name: "a throttled client waits its interval",
			tries: append(guesses("203.0.113.7:4000", 10), try{"203.0.113.7:4000", "tok-alice", http.StatusTooManyRequests}),
			after: 4 * time.Second, then: try{"203.0.113.7:4000", "tok-alice", http.StatusSeeOther}},
		{name: "an IPv6 /64 is one client",
			tries: append(guesses("[2001:db8::1]:4000", 10), try{"[2001:db8::2]:4000", "guess", http.StatusTooManyRequests},
				try{"[2001:db8:0:1::1]:4000", "guess", http.StatusUnauthorized}),
			then: try{"[::ffff:203.0.113.7]:4000", "tok-alice", http.StatusSeeOther}},
		{name: "many clients together meet the ceiling",
			tries: append(manyGuesses(60), try{"198.51.100.2:5000", "tok-alice", http.StatusTooManyRequests}),
			after: 50 * time.Millisecond, then: try{"198.51.100.2:5000", "tok-alice", http.StatusSeeOther}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			clients := map[string]*client{}
			do := func(tr try) {
				t.Helper()
				cl := clients[tr.from]
				if cl == nil {
					cl = f.clientFrom(t, tr.from)
					clients[tr.from] = cl
				}
				csrf := csrfOf(t, cl.get(prefix+"/signin").body)
				r := cl.post(prefix+"/signin/token", url.Values{"csrf": {csrf}, "token": {tr.token}}, nil)
				require.Equal(t, tr.want, r.status, "%s from %s", tr.token, tr.from)
			}
			for _, tr := range c.tries {
				do(tr)
			}
			f.clock.Set(approvaltest.Epoch.Add(c.after))
			do(c.then)
		})
	}
}

// TestTokenSignInFewClientsCannotSpendTheCeiling: guessing as fast as the
// page answers, each client gets its own rate, and a few together do not
// reach the shared one: an approver still signs in.
func TestTokenSignInFewClientsCannotSpendTheCeiling(t *testing.T) {
	for _, c := range []struct {
		name               string
		clients, seconds   int
		triesEachPerSecond int
	}{
		{"one client, ten minutes", 1, 600, 5},
		{"eight clients, two minutes", 8, 120, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, setup{})
			var guessers []*client
			var csrfs []string
			for i := range c.clients {
				g := f.clientFrom(t, fmt.Sprintf("203.0.113.%d:4000", i+1))
				guessers, csrfs = append(guessers, g), append(csrfs, csrfOf(t, g.get(prefix+"/signin").body))
			}
			allowed := make([]int, c.clients)
			for s := range c.seconds {
				f.clock.Set(approvaltest.Epoch.Add(time.Duration(s) * time.Second))
				for i, g := range guessers {
					for range c.triesEachPerSecond {
						if g.post(prefix+"/signin/token", url.Values{"csrf": {csrfs[i]}, "token": {"guess"}}, nil).status == http.StatusUnauthorized {
							allowed[i]++
						}
					}
				}
			}
			for i := range allowed {
				assert.Equal(t, 10+(c.seconds-1)/4, allowed[i], "client %d: its burst, then one per 4 s", i)
			}
			approver := f.clientFrom(t, "198.51.100.2:5000")
			assert.NotEmpty(t, approver.signIn("tok-alice"), "the approver still signs in")
		})
	}
}

func TestUsedShown(t *testing.T) {
	f := newFixture(t, setup{})
	rq := f.open(t, bob, "edit_file", editCall)
	_, err := f.desk.Decide(t.Context(), rq.ID, alice, true, "ok")
	require.NoError(t, err)
	_, err = f.desk.Use(t.Context(), rq.ID)
	require.NoError(t, err)
	cl := f.client(t)
	cl.signIn("tok-alice")
	r := cl.get(prefix + "/requests/" + rq.ID)
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `<p class="badge badge-used">Approved and run</p>`)
	assert.Contains(t, r.body, "Approved by <strong>token:approvers/alice</strong>")
	assert.Contains(t, r.body, "The approved call has run.")
	assert.NotContains(t, r.body, `value="approve"`)
}

func TestSessionCookieTampered(t *testing.T) {
	f := newFixture(t, setup{})
	cl := f.client(t)
	cl.signIn("tok-eve")
	u, err := url.Parse(f.srv.URL + prefix + "/")
	require.NoError(t, err)
	var value string
	for _, c := range cl.http.Jar.Cookies(u) {
		if c.Name == "gatehost_approvals" {
			value = c.Value
		}
	}
	require.NotEmpty(t, value)
	payload, sig, ok := strings.Cut(value, ".")
	require.True(t, ok)
	// eve's cookie rewritten to name alice, with eve's signature.
	forged := strings.Replace(mustDecode(t, payload), `"eve"`, `"alice"`, 1)
	require.Contains(t, mustDecode(t, payload), `"eve"`)
	for name, c := range map[string]struct {
		value  string
		status int
	}{
		"as signed (eve, no approver)": {value, http.StatusForbidden},
		"another principal":            {encode(forged) + "." + sig, http.StatusSeeOther},
		"no signature":                 {payload, http.StatusSeeOther},
		"another signature":            {payload + "." + encode("x"), http.StatusSeeOther},
	} {
		t.Run(name, func(t *testing.T) {
			other := f.client(t)
			other.http.Jar.SetCookies(u, []*http.Cookie{{Name: "gatehost_approvals", Value: c.value, Path: prefix + "/"}})
			assert.Equal(t, c.status, other.get(prefix+"/").status)
		})
	}
}

func mustDecode(t *testing.T, s string) string {
	b, err := base64.RawURLEncoding.DecodeString(s)
	require.NoError(t, err)
	return string(b)
}

func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
