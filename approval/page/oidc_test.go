package page_test

import (
	"html"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
)

// oidcSignIn walks the flow as a browser would, the user typing name at
// the provider, up to the callback URL, which it returns unvisited.
func (c *client) oidcSignIn(next, name string) *url.URL {
	c.t.Helper()
	r := c.get(prefix + "/signin/oidc?next=" + url.QueryEscape(next))
	require.Equal(c.t, http.StatusSeeOther, r.status, r.body)
	auth, err := url.Parse(r.location)
	require.NoError(c.t, err)
	q := auth.Query()
	require.Equal(c.t, c.f.idp.URL+"/authorize", auth.Scheme+"://"+auth.Host+auth.Path)
	assert.Equal(c.t, "S256", q.Get("code_challenge_method"))
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		assert.NotEmpty(c.t, q.Get(k), k)
	}
	assert.Contains(c.t, q.Get("scope"), "openid")

	res, err := c.f.idp.Client().Get(auth.String())
	require.NoError(c.t, err)
	res.Body.Close()
	require.Equal(c.t, http.StatusOK, res.StatusCode)
	form := url.Values{"username": {name}}
	for k := range q {
		form.Set(k, q.Get(k))
	}
	idp := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = idp.PostForm(c.f.idp.URL+"/authorize", form)
	require.NoError(c.t, err)
	res.Body.Close()
	require.Equal(c.t, http.StatusSeeOther, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(c.t, err)
	return back
}

func TestOIDCSignIn(t *testing.T) {
	f := newFixture(t, setup{oidc: true, realClock: true})
	rq := f.open(t, nil, "edit_file", editCall)
	next := prefix + "/requests/" + rq.ID

	t.Run("an approver signs in and lands on the request", func(t *testing.T) {
		cl := f.client(t)
		back := cl.oidcSignIn(next, "alice")
		r := cl.get(back.RequestURI())
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		assert.Equal(t, next, r.location)
		r = cl.get(next)
		require.Equal(t, http.StatusOK, r.status)
		assert.Contains(t, r.body, "oidc:"+f.idp.URL+"/alice")
		// Decide through the OIDC session: the approver's claims came along.
		r = cl.post(next, url.Values{"csrf": {csrfOf(t, r.body)}, "decision": {"approve"}}, nil)
		require.Equal(t, http.StatusSeeOther, r.status, r.body)
		got := f.get(t, rq.ID)
		assert.Equal(t, approval.StateApproved, got.State)
		assert.Equal(t, []any{"approvers"}, got.DecidedBy.Claims["groups"])
		assert.Equal(t, "alice@example.com", got.DecidedBy.Claims["email"])
	})
	t.Run("a signed-in user who is not an approver sees 403", func(t *testing.T) {
		cl := f.client(t)
		back := cl.oidcSignIn(prefix+"/", "mallory")
		require.Equal(t, http.StatusSeeOther, cl.get(back.RequestURI()).status)
		r := cl.get(prefix + "/")
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.NotContains(t, r.body, "deploy.yaml")
	})
	for _, c := range []struct {
		name   string
		mangle func(cl *client, back *url.URL) *client
	}{
		{"another state", func(cl *client, back *url.URL) *client {
			q := back.Query()
			q.Set("state", "0123456789abcdef0123456789abcdef")
			back.RawQuery = q.Encode()
			return cl
		}},
		{"no flow cookie (another browser)", func(_ *client, _ *url.URL) *client { return f.client(t) }},
		{"another code", func(cl *client, back *url.URL) *client {
			q := back.Query()
			q.Set("code", "00000000000000000000000000000000")
			back.RawQuery = q.Encode()
			return cl
		}},
		{"the provider's error", func(cl *client, back *url.URL) *client {
			q := back.Query()
			q.Del("code")
			q.Set("error", "access_denied")
			back.RawQuery = q.Encode()
			return cl
		}},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			cl := f.client(t)
			back := cl.oidcSignIn(prefix+"/", "alice")
			cl = c.mangle(cl, back)
			r := cl.get(back.RequestURI())
			assert.Equal(t, http.StatusUnauthorized, r.status)
			assert.Contains(t, html.UnescapeString(r.body), "Sign-in failed")
			assert.Equal(t, http.StatusSeeOther, cl.get(prefix+"/").status, "not signed in")
		})
	}
	t.Run("refused: a replayed callback", func(t *testing.T) {
		cl := f.client(t)
		back := cl.oidcSignIn(prefix+"/", "alice")
		require.Equal(t, http.StatusSeeOther, cl.get(back.RequestURI()).status)
		other := f.client(t)
		other.get(prefix + "/signin/oidc") // a flow of its own, with another state
		assert.Equal(t, http.StatusUnauthorized, other.get(back.RequestURI()).status)
	})
}
