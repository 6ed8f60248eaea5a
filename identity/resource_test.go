package identity_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
)

func TestResourceMetadataURL(t *testing.T) {
	for _, tc := range []struct{ uri, path, url string }{
		{"https://gate.example.com/mcp", "/.well-known/oauth-protected-resource/mcp", "https://gate.example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://gate.example.com:8443/team/mcp/", "/.well-known/oauth-protected-resource/team/mcp", "https://gate.example.com:8443/.well-known/oauth-protected-resource/team/mcp"},
		{"https://gate.example.com/", "/.well-known/oauth-protected-resource", "https://gate.example.com/.well-known/oauth-protected-resource"},
		{"https://gate.example.com", "/.well-known/oauth-protected-resource", "https://gate.example.com/.well-known/oauth-protected-resource"},
		{"http://127.0.0.1:7000/mcp", "/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:7000/.well-known/oauth-protected-resource/mcp"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			r := &identity.Resource{URI: tc.uri}
			assert.Equal(t, tc.path, r.MetadataPath())
			assert.Equal(t, tc.url, r.MetadataURL())
		})
	}
}

func TestResourceMetadataHandler(t *testing.T) {
	r := &identity.Resource{URI: "https://gate.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"}, ScopesSupported: []string{"mcp"}}
	rec := httptest.NewRecorder()
	r.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"resource":"https://gate.example.com/mcp","authorization_servers":["https://idp.example.com"],
		"scopes_supported":["mcp"],"bearer_methods_supported":["header"]}`, rec.Body.String())
}

func TestCheckResourceURI(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"https://gate.example.com/mcp", true},
		{"http://localhost:8080/mcp", true},
		{"http://127.0.0.1/mcp", true},
		{"", false},
		{"/mcp", false},
		{"http://gate.example.com/mcp", false},
		{"https://gate.example.com/mcp#x", false},
		{"https://gate.example.com/mcp#", false},
		{"https://gate.example.com/mcp?tenant=a", false},
		{"https://user@gate.example.com/mcp", false},
		{"ftp://gate.example.com/mcp", false},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			err := identity.CheckResourceURI(tc.uri)
			assert.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
}

func TestResourceChallenge(t *testing.T) {
	res := &identity.Resource{URI: "https://gate.example.com/mcp", Scopes: []string{"mcp:tools", "mcp:read"}}
	meta := `resource_metadata="https://gate.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name   string
		res    *identity.Resource
		err    error
		want   string
		status int
	}{
		{"no credential, no resource", nil, &identity.Error{Reason: "a credential is required", Err: identity.ErrNoCredential},
			`Bearer realm="gatehost"`, http.StatusUnauthorized},
		{"no credential", res, &identity.Error{Reason: "a credential is required", Err: identity.ErrNoCredential},
			`Bearer realm="gatehost", ` + meta + `, scope="mcp:tools mcp:read"`, http.StatusUnauthorized},
		{"invalid token", res, &identity.Error{Code: identity.CodeInvalidToken, Reason: "the token has expired"},
			`Bearer realm="gatehost", ` + meta + `, error="invalid_token", error_description="the token has expired", scope="mcp:tools mcp:read"`, http.StatusUnauthorized},
		{"insufficient scope", res, &identity.Error{Code: identity.CodeInsufficientScope, Scope: "mcp:tools", Reason: "the token does not grant the scope mcp:tools"},
			`Bearer realm="gatehost", ` + meta + `, error="insufficient_scope", error_description="the token does not grant the scope mcp:tools", scope="mcp:tools"`, http.StatusForbidden},
		{"not an *Error", res, errors.New("boom"), `Bearer realm="gatehost", ` + meta + `, scope="mcp:tools mcp:read"`, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, identity.ResourceChallenge("gatehost", tc.res, tc.err))
			assert.Equal(t, tc.status, identity.Status(tc.err))
		})
	}
}

// TestOIDCIdentityScopes: with Scopes, a token must grant every one, in
// scope (space-separated) or scp (a list or a string); otherwise it is
// refused with insufficient_scope naming them.
func TestOIDCIdentityScopes(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, func(c *identity.OIDCConfig) { c.Scopes = []string{"mcp:tools", "mcp:read"} })
	for _, tc := range []struct {
		name   string
		claims map[string]any
		ok     bool
	}{
		{"scope string", map[string]any{"scope": "openid mcp:read mcp:tools"}, true},
		{"scp list", map[string]any{"scp": []string{"mcp:tools", "mcp:read"}}, true},
		{"scp string", map[string]any{"scp": "mcp:tools mcp:read"}, true},
		{"one missing", map[string]any{"scope": "mcp:tools"}, false},
		{"none", nil, false},
		{"scope not a string", map[string]any{"scope": []string{"mcp:tools", "mcp:read"}}, false},
		{"prefix is not the scope", map[string]any{"scope": "mcp:tools:x mcp:read"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := iss.Standard("alice", aud, clk.Now())
			for k, v := range tc.claims {
				c[k] = v
			}
			p, err := o.Authenticate(bearerReq(identitytest.Sign(t, iss.Keys()[0], c)))
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "alice", p.Subject)
				return
			}
			var e *identity.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, identity.CodeInsufficientScope, e.Code)
			assert.Equal(t, "mcp:tools mcp:read", e.Scope)
			assert.ErrorIs(t, err, identity.ErrUnauthenticated)
		})
	}
}
