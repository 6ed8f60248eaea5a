package identity_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0).UTC()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const aud = "gatehost"

func newOIDC(t *testing.T, iss *identitytest.Issuer, clk *clock, mod func(*identity.OIDCConfig)) *identity.OIDC {
	t.Helper()
	cfg := identity.OIDCConfig{Issuer: iss.URL, Audiences: []string{"other", aud}, Claims: []string{"role", "groups", "email", "n"}, Now: clk.Now}
	if mod != nil {
		mod(&cfg)
	}
	o, err := identity.NewOIDC(context.Background(), cfg)
	require.NoError(t, err)
	return o
}

func bearerReq(tok string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

func TestOIDCIdentityAccepts(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, nil)
	for _, k := range iss.Keys() {
		t.Run(string(k.Alg), func(t *testing.T) {
			c := iss.Standard("alice", aud, clk.Now())
			c["role"], c["groups"], c["secret"], c["n"] = "reviewer", []string{"a", "b"}, "not copied", json.Number("12345678901234567890")
			p, err := o.Authenticate(bearerReq(identitytest.Sign(t, k, c)))
			require.NoError(t, err)
			assert.Equal(t, &abi.Principal{Issuer: iss.URL, Subject: "alice", Method: abi.MethodOIDC,
				Claims: map[string]any{"role": "reviewer", "groups": []any{"a", "b"}, "n": json.Number("12345678901234567890")}}, p)
		})
	}
	t.Run("audience as an array, skew on both ends", func(t *testing.T) {
		c := iss.Standard("bob", aud, clk.Now())
		c["aud"] = []string{"x", aud}
		c["exp"] = clk.Now().Add(-29 * time.Second).Unix()
		c["nbf"] = clk.Now().Add(29 * time.Second).Unix()
		p, err := o.Authenticate(bearerReq(identitytest.Sign(t, iss.Keys()[0], c)))
		require.NoError(t, err)
		assert.Equal(t, "bob", p.Subject)
		assert.Nil(t, p.Claims)
	})
}

// TestOIDCIdentityRefuses: every bad token is a refusal with invalid_token
// whose text holds nothing of the token.
func TestOIDCIdentityRefuses(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, nil)
	rsaKey := iss.Keys()[0]
	good := func() identitytest.Claims { return iss.Standard("alice", aud, clk.Now()) }
	with := func(k string, v any) identitytest.Claims { c := good(); c[k] = v; return c }
	without := func(k string) identitytest.Claims { c := good(); delete(c, k); return c }
	tampered := func(t *testing.T) string {
		parts := strings.Split(identitytest.Sign(t, rsaKey, good()), ".")
		body, _ := json.Marshal(with("sub", "mallory"))
		parts[1] = base64.RawURLEncoding.EncodeToString(body)
		return strings.Join(parts, ".")
	}
	hmacForgery := func(t *testing.T) string {
		return identitytest.SignWith(t, jose.SigningKey{Algorithm: jose.HS256,
			Key: jose.JSONWebKey{Key: identitytest.PublicKeyPEM(t, rsaKey), KeyID: rsaKey.ID}}, good())
	}
	for _, tc := range []struct {
		name  string
		token func(t *testing.T) string
	}{
		{"expired beyond skew", func(t *testing.T) string {
			return identitytest.Sign(t, rsaKey, with("exp", clk.Now().Add(-31*time.Second).Unix()))
		}},
		{"no exp", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, without("exp")) }},
		{"nbf in the future beyond skew", func(t *testing.T) string {
			return identitytest.Sign(t, rsaKey, with("nbf", clk.Now().Add(31*time.Second).Unix()))
		}},
		{"nbf not a number", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("nbf", "soon")) }},
		{"wrong audience", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("aud", "someone-else")) }},
		{"no audience", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, without("aud")) }},
		{"wrong issuer", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("iss", "https://evil.example")) }},
		{"no subject", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, without("sub")) }},
		{"alg none", func(t *testing.T) string { return identitytest.Unsigned(t, good()) }},
		{"HS256 signed with the RSA public key", hmacForgery},
		{"tampered payload", tampered},
		{"signed by a key the issuer does not publish, known kid", func(t *testing.T) string {
			return identitytest.Sign(t, identitytest.NewRSAKey(t, rsaKey.ID), good())
		}},
		{"RS384 not in the allow-list", func(t *testing.T) string {
			k := rsaKey
			k.Alg = jose.RS384
			return identitytest.Sign(t, k, good())
		}},
		{"claims too large", func(t *testing.T) string {
			return identitytest.Sign(t, rsaKey, with("role", strings.Repeat("r", 5000)))
		}},
		{"garbage with two dots", func(*testing.T) string { return "a.b.c" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token(t)
			p, err := o.Authenticate(bearerReq(tok))
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, identity.ErrUnauthenticated)
			assert.NotErrorIs(t, err, identity.ErrNoCredential)
			var e *identity.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, identity.CodeInvalidToken, e.Code)
			for _, part := range strings.Split(tok, ".") {
				if len(part) > 8 {
					assert.NotContains(t, err.Error(), part)
					assert.NotContains(t, identity.Challenge("gatehost", err), part)
				}
			}
			assert.Contains(t, identity.Challenge("gatehost", err), `error="invalid_token"`)
		})
	}
}

// TestOIDCIdentityKeyRotation: an unknown kid refetches the key set once,
// then not again until the minimum interval has passed; a rotated key is
// accepted after the refresh.
func TestOIDCIdentityKeyRotation(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, nil)
	require.EqualValues(t, 1, iss.Fetches(), "the key set is fetched at start")
	old := iss.Keys()[0]
	claims := func() identitytest.Claims { return iss.Standard("alice", aud, clk.Now()) }

	_, err := o.Authenticate(bearerReq(identitytest.Sign(t, old, claims())))
	require.NoError(t, err)
	require.EqualValues(t, 1, iss.Fetches(), "a known kid fetches nothing")

	stranger := identitytest.NewRSAKey(t, "stranger")
	_, err = o.Authenticate(bearerReq(identitytest.Sign(t, stranger, claims())))
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.EqualValues(t, 1, iss.Fetches(), "the fetch at start counts: no refresh within the interval")
	clk.Advance(identity.DefaultRefreshMinInterval)
	_, err = o.Authenticate(bearerReq(identitytest.Sign(t, stranger, claims())))
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.EqualValues(t, 2, iss.Fetches(), "an unknown kid refreshes once")
	_, err = o.Authenticate(bearerReq(identitytest.Sign(t, stranger, claims())))
	require.ErrorIs(t, err, identity.ErrUnauthenticated)
	require.EqualValues(t, 2, iss.Fetches(), "within the interval: no refresh")

	// The issuer rotates: a new key under a new kid, the old one gone.
	next := identitytest.NewECKey(t, "ec-2")
	iss.Publish(next)
	_, err = o.Authenticate(bearerReq(identitytest.Sign(t, next, claims())))
	require.ErrorIs(t, err, identity.ErrUnauthenticated, "rate-limited: the new key is not known yet")
	require.EqualValues(t, 2, iss.Fetches())
	clk.Advance(identity.DefaultRefreshMinInterval)
	p, err := o.Authenticate(bearerReq(identitytest.Sign(t, next, claims())))
	require.NoError(t, err)
	assert.Equal(t, "alice", p.Subject)
	require.EqualValues(t, 3, iss.Fetches())
	_, err = o.Authenticate(bearerReq(identitytest.Sign(t, old, claims())))
	require.ErrorIs(t, err, identity.ErrUnauthenticated, "the retired key is gone after the refresh")
}

func TestOIDCIdentityConfig(t *testing.T) {
	iss := identitytest.NewIssuer(t)
	for _, tc := range []struct {
		name string
		mod  func(*identity.OIDCConfig)
		key  string
	}{
		{"no issuer", func(c *identity.OIDCConfig) { c.Issuer = "" }, "issuer"},
		{"http off loopback", func(c *identity.OIDCConfig) { c.Issuer = "http://idp.example" }, "issuer"},
		{"not a URL", func(c *identity.OIDCConfig) { c.Issuer = "idp" }, "issuer"},
		{"no audience", func(c *identity.OIDCConfig) { c.Audiences = nil }, "audiences"},
		{"blank audience", func(c *identity.OIDCConfig) { c.Audiences = []string{" "} }, "audiences"},
		{"none", func(c *identity.OIDCConfig) { c.Algorithms = []string{"none"} }, "algorithms"},
		{"HS256", func(c *identity.OIDCConfig) { c.Algorithms = []string{"RS256", "HS256"} }, "algorithms"},
		{"unknown alg", func(c *identity.OIDCConfig) { c.Algorithms = []string{"RS1"} }, "algorithms"},
		{"skew too large", func(c *identity.OIDCConfig) { c.Skew = 6 * time.Minute }, "skew"},
		{"negative skew", func(c *identity.OIDCConfig) { c.Skew = -time.Second }, "skew"},
		{"refresh interval too short", func(c *identity.OIDCConfig) { c.RefreshMinInterval = time.Millisecond }, "jwks_refresh_min_interval"},
		{"empty claim name", func(c *identity.OIDCConfig) { c.Claims = []string{""} }, "claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := identity.OIDCConfig{Issuer: iss.URL, Audiences: []string{aud}}
			tc.mod(&cfg)
			_, err := identity.NewOIDC(context.Background(), cfg)
			require.ErrorIs(t, err, identity.ErrConfig)
			assert.Contains(t, err.Error(), tc.key+":")
		})
	}
}

func TestOIDCIdentityDiscoveryFailures(t *testing.T) {
	serve := func(t *testing.T, h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	var url string
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }},
		{"another issuer", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"issuer":"https://other.example","jwks_uri":"https://other.example/jwks"}`))
		}},
		{"no jwks_uri", func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": url})
		}},
		{"discovery document too large", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"issuer":"` + url + `","pad":"` + strings.Repeat("x", identity.DefaultMaxResponseBytes) + `"}`))
		}},
		{"key set unusable", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/jwks" {
				_, _ = w.Write([]byte(`{"keys":[{"kty":"weird"}]}`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": url, "jwks_uri": url + "/jwks"})
		}},
		{"key set not JSON", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/jwks" {
				_, _ = w.Write([]byte(`<html>`))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": url, "jwks_uri": url + "/jwks"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url = serve(t, tc.h)
			_, err := identity.NewOIDC(context.Background(), identity.OIDCConfig{Issuer: url, Audiences: []string{aud}})
			require.ErrorIs(t, err, identity.ErrDiscovery)
			assert.Contains(t, err.Error(), url)
		})
	}
	t.Run("nobody listening", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		u := srv.URL
		srv.Close()
		_, err := identity.NewOIDC(context.Background(), identity.OIDCConfig{Issuer: u, Audiences: []string{aud}})
		require.ErrorIs(t, err, identity.ErrDiscovery)
	})
}

func TestChainIdentity(t *testing.T) {
	clk := newClock()
	iss := identitytest.NewIssuer(t)
	o := newOIDC(t, iss, clk, nil)
	static := identity.NewTokenSource("ops", func(tok string) (string, bool) { return "ci-bot", tok == "static-token-0123456789" })
	ca := identitytest.NewCA(t, "clients", clk.Now())
	m, err := identity.NewMTLS(identity.MTLSConfig{ClientCAs: ca.Pool(), Now: clk.Now})
	require.NoError(t, err)
	cert := ca.Issue(t, identitytest.ClientCert{Subject: pkix.Name{CommonName: "ci", Organization: []string{"Example"}},
		URIs: []string{"spiffe://example.org/ci"}, NotBefore: clk.Now().Add(-time.Minute), NotAfter: clk.Now().Add(time.Hour)})
	withCert := func(r *http.Request) *http.Request {
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509Cert{cert.Leaf}}
		return r
	}
	jwt := identitytest.Sign(t, iss.Keys()[1], iss.Standard("alice", aud, clk.Now()))
	a := identity.Chain(static, o, m)
	for _, tc := range []struct {
		name    string
		req     *http.Request
		subject string // "" = refused
		method  string
		code    string
	}{
		{"static token", bearerReq("static-token-0123456789"), "ci-bot", abi.MethodToken, ""},
		{"jwt", bearerReq(jwt), "alice", abi.MethodOIDC, ""},
		{"client certificate", withCert(httptest.NewRequest(http.MethodGet, "/", nil)), "CN=ci,O=Example", abi.MethodMTLS, ""},
		{"jwt and certificate: the header decides", withCert(bearerReq(jwt)), "alice", abi.MethodOIDC, ""},
		{"unknown opaque token", bearerReq("not-a-known-token-at-all"), "", "", identity.CodeInvalidToken},
		{"unknown opaque token with a certificate", withCert(bearerReq("not-a-known-token-at-all")), "", "", identity.CodeInvalidToken},
		{"basic auth", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.SetBasicAuth("u", "p")
			return r
		}(), "", "", identity.CodeInvalidToken},
		{"nothing", httptest.NewRequest(http.MethodGet, "/", nil), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(tc.req)
			if tc.subject == "" {
				require.ErrorIs(t, err, identity.ErrUnauthenticated)
				var e *identity.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tc.code, e.Code)
				assert.Equal(t, tc.code == "", strings.Contains(identity.Challenge("r", err), "error=") == false)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.subject, p.Subject)
			assert.Equal(t, tc.method, p.Method)
		})
	}
}
