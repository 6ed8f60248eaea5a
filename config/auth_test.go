package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
)

func TestAuthSection(t *testing.T) {
	dir := t.TempDir()
	ca := identitytest.NewCA(t, "clients", time.Now())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("junk"), 0o600))
	load := func(t *testing.T, auth string) (*Loaded, error) {
		p := filepath.Join(dir, "gatehost.yaml")
		require.NoError(t, os.WriteFile(p, []byte("event_log:\n  path: events.jsonl\n"+auth), 0o600))
		return Load(p)
	}
	t.Run("full", func(t *testing.T) {
		l, err := load(t, `auth:
  order: [oidc, mtls, tokens]
  oidc: {issuer: "https://idp.example", audiences: [gatehost], algorithms: [ES256], skew: 10s, claims: [role, groups], jwks_refresh_min_interval: 30s, any_session: true}
  mtls: {client_ca: ca.pem, require: true}
  tokens: {name: ops}
`)
		require.NoError(t, err)
		a := l.Auth
		assert.Equal(t, []string{AuthOIDC, AuthMTLS, AuthTokens}, a.Order)
		assert.Equal(t, identity.OIDCConfig{Issuer: "https://idp.example", Audiences: []string{"gatehost"}, Algorithms: []string{"ES256"},
			Skew: 10 * time.Second, Claims: []string{"role", "groups"}, RefreshMinInterval: 30 * time.Second,
			FetchTimeout: identity.DefaultFetchTimeout, MaxResponseBytes: identity.DefaultMaxResponseBytes}, a.OIDC.Config)
		assert.True(t, a.OIDC.AnySession)
		assert.Equal(t, filepath.Join(dir, "ca.pem"), a.MTLS.ClientCA)
		assert.True(t, a.MTLS.Require)
		assert.Equal(t, "ops", a.TokensName)
	})
	t.Run("resource", func(t *testing.T) {
		l, err := load(t, `auth:
  oidc: {issuer: "https://idp.example"}
  resource:
    uri: https://gate.example.com/mcp
    scopes_required: [mcp:tools]
`)
		require.NoError(t, err)
		a := l.Auth
		assert.Equal(t, &identity.Resource{URI: "https://gate.example.com/mcp", AuthorizationServers: []string{"https://idp.example"},
			ScopesSupported: []string{"mcp:tools"}, Scopes: []string{"mcp:tools"}}, a.Resource)
		assert.Equal(t, []string{"https://gate.example.com/mcp"}, a.OIDC.Config.Audiences)
		assert.Equal(t, []string{"mcp:tools"}, a.OIDC.Config.Scopes)
	})
	t.Run("resource beside audiences", func(t *testing.T) {
		l, err := load(t, `auth:
  oidc: {issuer: "https://idp.example", audiences: [gatehost]}
  resource:
    uri: https://gate.example.com/mcp
    authorization_servers: ["https://idp.example", "https://idp2.example/tenant"]
    scopes_supported: [mcp:tools, mcp:admin]
`)
		require.NoError(t, err)
		a := l.Auth
		assert.Equal(t, &identity.Resource{URI: "https://gate.example.com/mcp", AuthorizationServers: []string{"https://idp.example", "https://idp2.example/tenant"},
			ScopesSupported: []string{"mcp:tools", "mcp:admin"}}, a.Resource)
		assert.Equal(t, []string{"gatehost", "https://gate.example.com/mcp"}, a.OIDC.Config.Audiences)
		assert.Empty(t, a.OIDC.Config.Scopes)
	})
	t.Run("none", func(t *testing.T) {
		l, err := load(t, "")
		require.NoError(t, err)
		assert.False(t, l.Auth.Configured())
		assert.Equal(t, []string{AuthTokens}, l.Auth.Order)
		assert.Equal(t, identity.DefaultTokensName, l.Auth.TokensName)
	})
	for _, tc := range []struct{ name, auth, want string }{
		{"unknown key", "auth:\n  oidc:\n    issuer: https://i\n    audience: [x]\n", `unknown key "auth.oidc.audience"; did you mean "auth.oidc.audiences"?`},
		{"no audiences", "auth:\n  oidc:\n    issuer: https://i\n", "auth.oidc.audiences"},
		{"hmac", "auth:\n  oidc: {issuer: https://i, audiences: [x], algorithms: [HS256]}\n", "auth.oidc.algorithms: HS256: HMAC"},
		{"none alg", "auth:\n  oidc: {issuer: https://i, audiences: [x], algorithms: [none]}\n", "auth.oidc.algorithms"},
		{"skew", "auth:\n  oidc: {issuer: https://i, audiences: [x], skew: 1h}\n", "auth.oidc.skew"},
		{"refresh interval", "auth:\n  oidc: {issuer: https://i, audiences: [x], jwks_refresh_min_interval: 1ms}\n", "auth.oidc.jwks_refresh_min_interval"},
		{"http issuer", "auth:\n  oidc: {issuer: http://idp.example, audiences: [x]}\n", "auth.oidc.issuer"},
		{"no client_ca", "auth:\n  mtls: {require: true}\n", "auth.mtls.client_ca: required"},
		{"missing client_ca", "auth:\n  mtls: {client_ca: absent.pem}\n", "auth.mtls.client_ca"},
		{"junk client_ca", "auth:\n  mtls: {client_ca: junk.pem}\n", "auth.mtls.client_ca"},
		{"order unknown", "auth:\n  order: [kerberos]\n", "auth.order[0]"},
		{"order not configured", "auth:\n  order: [oidc, tokens]\n", "auth.order[0]: oidc is not configured"},
		{"order twice", "auth:\n  order: [tokens, tokens]\n", "auth.order[1]: tokens given twice"},
		{"order incomplete", "auth:\n  order: [mtls]\n  mtls: {client_ca: ca.pem}\n", "auth.order: tokens is configured but not listed"},
		{"resource without oidc", "auth:\n  resource: {uri: https://gate.example.com/mcp}\n", "auth.resource: needs auth.oidc"},
		{"resource, no issuer", "auth:\n  oidc: {skew: 1s}\n  resource: {uri: https://gate.example.com/mcp}\n", "auth.oidc.issuer: required"},
		{"resource no uri", "auth:\n  oidc: {issuer: https://i}\n  resource: {scopes_required: [a]}\n", "auth.resource.uri: required"},
		{"resource http", "auth:\n  oidc: {issuer: https://i}\n  resource: {uri: http://gate.example.com/mcp}\n", "auth.resource.uri"},
		{"resource fragment", "auth:\n  oidc: {issuer: https://i}\n  resource: {uri: \"https://gate.example.com/mcp#x\"}\n", "auth.resource.uri"},
		{"resource server", "auth:\n  oidc: {issuer: https://i}\n  resource: {uri: https://g/mcp, authorization_servers: [\"idp\"]}\n", "auth.resource.authorization_servers[0]"},
		{"resource scope", "auth:\n  oidc: {issuer: https://i}\n  resource: {uri: https://g/mcp, scopes_required: [\"a b\"]}\n", "auth.resource.scopes_required[0]"},
		{"resource scope unsupported", "auth:\n  oidc: {issuer: https://i}\n  resource: {uri: https://g/mcp, scopes_supported: [a], scopes_required: [b]}\n", "auth.resource.scopes_required[0]: \"b\" is not among scopes_supported"},
		{"tokens name", "auth:\n  tokens: {name: \"a b\"}\n", "auth.tokens.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.auth)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
