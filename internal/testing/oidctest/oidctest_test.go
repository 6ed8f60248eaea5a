package oidctest_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/oidctest"
)

const redirect = "https://app.example/callback"

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// login signs user in for client and returns the code.
func login(t *testing.T, p *oidctest.Provider, client, user, verifier string) string {
	t.Helper()
	form := url.Values{"client_id": {client}, "redirect_uri": {redirect}, "response_type": {"code"},
		"state": {"st"}, "nonce": {"n-1"}, "scope": {"openid"}, "username": {user}}
	if verifier != "" {
		form.Set("code_challenge", challenge(verifier))
		form.Set("code_challenge_method", "S256")
	}
	page := url.Values{}
	for k, v := range form {
		if k != "username" {
			page[k] = v
		}
	}
	res, err := noFollow.Get(p.URL + "/authorize?" + page.Encode())
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, err = noFollow.PostForm(p.URL+"/authorize", form)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "st", back.Query().Get("state"))
	return back.Query().Get("code")
}

func exchange(t *testing.T, p *oidctest.Provider, form url.Values, basic [2]string) (int, map[string]any) {
	t.Helper()
	form.Set("grant_type", "authorization_code")
	req, err := http.NewRequest(http.MethodPost, p.URL+"/token", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic[0] != "" {
		req.SetBasicAuth(basic[0], basic[1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	return res.StatusCode, body
}

func TestProvider(t *testing.T) {
	p := oidctest.New(t, oidctest.Options{
		Users:     map[string]oidctest.User{"ann": {Subject: "u-1", Claims: map[string]any{"groups": []string{"ops"}}}},
		Clients:   []oidctest.Client{{ID: "web", Secret: "s", RedirectURIs: []string{redirect}}, {ID: "cli"}},
		Audiences: []string{"https://mcp.example"},
	})
	verifier := strings.Repeat("v", 43)
	for _, c := range []struct {
		name     string
		client   string
		verifier string // at login
		form     url.Values
		basic    [2]string
		status   int
	}{
		{name: "confidential client, basic auth, PKCE", client: "web", verifier: verifier,
			form: url.Values{"code_verifier": {verifier}}, basic: [2]string{"web", "s"}, status: http.StatusOK},
		{name: "confidential client, secret in the form, no PKCE", client: "web",
			form: url.Values{"client_id": {"web"}, "client_secret": {"s"}}, status: http.StatusOK},
		{name: "public client with PKCE", client: "cli", verifier: verifier,
			form: url.Values{"client_id": {"cli"}, "code_verifier": {verifier}}, status: http.StatusOK},
		{name: "a wrong verifier", client: "web", verifier: verifier,
			form: url.Values{"code_verifier": {strings.Repeat("w", 43)}}, basic: [2]string{"web", "s"}, status: http.StatusBadRequest},
		{name: "no verifier", client: "web", verifier: verifier, basic: [2]string{"web", "s"}, form: url.Values{}, status: http.StatusBadRequest},
		{name: "a wrong secret", client: "web", verifier: verifier,
			form: url.Values{"code_verifier": {verifier}}, basic: [2]string{"web", "x"}, status: http.StatusUnauthorized},
		{name: "another client's code", client: "web", verifier: verifier,
			form: url.Values{"client_id": {"cli"}, "code_verifier": {verifier}}, status: http.StatusBadRequest},
		{name: "another redirect URI", client: "web", verifier: verifier,
			form: url.Values{"code_verifier": {verifier}, "redirect_uri": {"https://evil.example/cb"}}, basic: [2]string{"web", "s"}, status: http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := login(t, p, c.client, "ann", c.verifier)
			c.form.Set("code", code)
			if c.form.Get("redirect_uri") == "" {
				c.form.Set("redirect_uri", redirect)
			}
			status, body := exchange(t, p, c.form, c.basic)
			require.Equal(t, c.status, status, body)
			if status != http.StatusOK {
				return
			}
			// The ID token verifies as any relying party would check it.
			prov, err := oidc.NewProvider(t.Context(), p.URL)
			require.NoError(t, err)
			idt, err := prov.Verifier(&oidc.Config{ClientID: c.client}).Verify(t.Context(), body["id_token"].(string))
			require.NoError(t, err)
			assert.Equal(t, "u-1", idt.Subject)
			assert.Equal(t, "n-1", idt.Nonce)
			var claims struct{ Groups []string }
			require.NoError(t, idt.Claims(&claims))
			assert.Equal(t, []string{"ops"}, claims.Groups)
			// The access token is for the configured audience.
			_, err = prov.Verifier(&oidc.Config{ClientID: "https://mcp.example"}).Verify(t.Context(), body["access_token"].(string))
			require.NoError(t, err)
			// A code is used once.
			replay, _ := exchange(t, p, c.form, c.basic)
			assert.Equal(t, http.StatusBadRequest, replay)
		})
	}
	t.Run("a public client must use PKCE", func(t *testing.T) {
		res, err := noFollow.Get(p.URL + "/authorize?" + url.Values{"client_id": {"cli"}, "redirect_uri": {redirect}, "response_type": {"code"}}.Encode())
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	t.Run("an unknown user", func(t *testing.T) {
		res, err := noFollow.PostForm(p.URL+"/authorize", url.Values{"client_id": {"web"}, "redirect_uri": {redirect},
			"response_type": {"code"}, "username": {"nobody"}})
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("an unregistered redirect URI", func(t *testing.T) {
		res, err := noFollow.Get(p.URL + "/authorize?" + url.Values{"client_id": {"web"}, "redirect_uri": {"https://evil.example/"}, "response_type": {"code"}}.Encode())
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	})
	assert.Equal(t, "ann", p.Logins()[0])
}

// TestProviderRegistrationAndResource: a client registered through
// /register (RFC 7591) signs a scripted user in with one GET, and the
// access token it gets is for the resource it asked for (RFC 8707), with
// the scope granted; a token request naming another resource is refused.
// The discovery document is also the authorization server metadata.
func TestProviderRegistrationAndResource(t *testing.T) {
	p := oidctest.New(t, oidctest.Options{Users: map[string]oidctest.User{"ann": {}}})
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		res, err := http.Get(p.URL + path)
		require.NoError(t, err)
		var md map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&md))
		res.Body.Close()
		assert.Equal(t, p.URL+"/register", md["registration_endpoint"], path)
	}
	register := func(t *testing.T, body string) (int, map[string]any) {
		res, err := http.Post(p.URL+"/register", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer res.Body.Close()
		var md map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&md))
		return res.StatusCode, md
	}
	status, _ := register(t, `{"client_name":"x"}`)
	assert.Equal(t, http.StatusBadRequest, status, "no redirect_uris")
	status, md := register(t, `{"client_name":"agent","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none"}`)
	require.Equal(t, http.StatusCreated, status)
	client, _ := md["client_id"].(string)
	require.NotEmpty(t, client)
	assert.Nil(t, md["client_secret"], "a public client")
	assert.Equal(t, "agent", md["client_name"])
	assert.Len(t, p.Registered(), 1)

	verifier := strings.Repeat("v", 43)
	const resource = "https://gate.example/mcp"
	authorize := func(t *testing.T, q url.Values) *http.Response {
		res, err := noFollow.Get(p.URL + "/authorize?" + q.Encode())
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	q := url.Values{"client_id": {client}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"mcp:tools"},
		"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}, "resource": {resource}, "username": {"ann"}}
	bad := url.Values{}
	for k, v := range q {
		bad[k] = v
	}
	bad.Set("resource", resource+"#frag")
	assert.Equal(t, http.StatusBadRequest, authorize(t, bad).StatusCode, "a resource with a fragment")
	code := func(t *testing.T) string {
		res := authorize(t, q)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		back, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		return back.Query().Get("code")
	}
	status, body := exchange(t, p, url.Values{"client_id": {client}, "code": {code(t)}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {resource}}, [2]string{})
	require.Equal(t, http.StatusOK, status, body)
	prov, err := oidc.NewProvider(t.Context(), p.URL)
	require.NoError(t, err)
	at, err := prov.Verifier(&oidc.Config{ClientID: resource}).Verify(t.Context(), body["access_token"].(string))
	require.NoError(t, err)
	assert.Equal(t, []string{resource}, at.Audience)
	var claims struct{ Scope string }
	require.NoError(t, at.Claims(&claims))
	assert.Equal(t, "mcp:tools", claims.Scope)

	status, body = exchange(t, p, url.Values{"client_id": {client}, "code": {code(t)}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "resource": {"https://other.example/mcp"}}, [2]string{})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_target", body["error"])
}
