package server

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity/identitytest"
)

// decisionData is what the tests read of a decision record.
type decisionData struct {
	Principal *abi.Principal `json:"principal"`
}

// decisionOf returns the decision record of request reqID; false when the
// log has none.
func decisionOf(t *testing.T, logPath, reqID string) (decisionData, bool) {
	t.Helper()
	for _, r := range records(t, logPath) {
		if r.Kind == "decision" && r.RequestID == reqID {
			var d decisionData
			require.NoError(t, json.Unmarshal(r.Data, &d))
			return d, true
		}
	}
	return decisionData{}, false
}

// TestServeOIDCIdentity: a valid JWT checks with its principal recorded;
// every bad token is a 401 with an invalid_token challenge, and no
// decision is made or recorded.
func TestServeOIDCIdentity(t *testing.T) {
	iss := identitytest.NewIssuer(t)
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, serveParams{limits: fmt.Sprintf(
		"auth:\n  oidc:\n    issuer: %s\n    audiences: [gatehost]\n    claims: [role]\n", iss.URL)})
	ts := startServe(t, cfg, nil)
	logPath := filepath.Join(dir, "events.jsonl")
	rsaKey, ecKey := iss.Keys()[0], iss.Keys()[1]
	now := time.Now()
	good := func() identitytest.Claims {
		c := iss.Standard("alice", "gatehost", now)
		c["role"] = "reviewer"
		return c
	}
	with := func(k string, v any) identitytest.Claims { c := good(); c[k] = v; return c }
	check := "/v1/pipelines/admission/check"

	for i, k := range []identitytest.Key{rsaKey, ecKey} {
		reqID := fmt.Sprintf("good-%d", i)
		a := ts.do(t, "POST", check, readThenWrite, "Authorization", "Bearer "+identitytest.Sign(t, k, good()), headerRequestID, reqID)
		require.Equal(t, http.StatusOK, a.status, string(a.body))
		d, ok := decisionOf(t, logPath, reqID)
		require.True(t, ok)
		assert.Equal(t, &abi.Principal{Issuer: iss.URL, Subject: "alice", Method: abi.MethodOIDC, Claims: map[string]any{"role": "reviewer"}}, d.Principal)
	}

	tampered := func(t *testing.T) string {
		parts := strings.Split(identitytest.Sign(t, rsaKey, good()), ".")
		other := strings.Split(identitytest.Sign(t, rsaKey, with("sub", "mallory")), ".")
		return parts[0] + "." + other[1] + "." + parts[2]
	}
	for _, tc := range []struct {
		name  string
		token func(t *testing.T) string
	}{
		{"expired", func(t *testing.T) string {
			return identitytest.Sign(t, rsaKey, with("exp", now.Add(-time.Hour).Unix()))
		}},
		{"wrong audience", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("aud", "billing")) }},
		{"wrong issuer", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("iss", "https://evil.example")) }},
		{"alg none", func(t *testing.T) string { return identitytest.Unsigned(t, good()) }},
		{"HS256 signed with the RSA public key", func(t *testing.T) string {
			return identitytest.SignWith(t, jose.SigningKey{Algorithm: jose.HS256,
				Key: jose.JSONWebKey{Key: identitytest.PublicKeyPEM(t, rsaKey), KeyID: rsaKey.ID}}, good())
		}},
		{"unknown kid", func(t *testing.T) string { return identitytest.Sign(t, identitytest.NewECKey(t, "stranger"), good()) }},
		{"tampered payload", tampered},
		{"nbf in the future beyond skew", func(t *testing.T) string { return identitytest.Sign(t, rsaKey, with("nbf", now.Add(time.Hour).Unix())) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token(t)
			reqID := "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			a := ts.do(t, "POST", check, readThenWrite, "Authorization", "Bearer "+tok, headerRequestID, reqID)
			require.Equal(t, http.StatusUnauthorized, a.status, string(a.body))
			assert.Equal(t, errUnauthorized, a.apiErr(t).Error.Code)
			assert.Contains(t, a.header.Get("WWW-Authenticate"), `error="invalid_token"`)
			assert.NotContains(t, string(a.body), tok)
			_, ok := decisionOf(t, logPath, reqID)
			assert.False(t, ok, "no decision is made or recorded")
			// Why is in the log, the token is not.
			assert.Contains(t, ts.logs.String(), reqID)
			assert.NotContains(t, ts.logs.String(), tok)
		})
	}
	a := ts.do(t, "POST", check, readThenWrite, headerRequestID, "none")
	require.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, `Bearer realm="gatehost"`, a.header.Get("WWW-Authenticate"), "no credential: no error code (RFC 6750 §3.1)")
	a = ts.do(t, "POST", check+"?session=s1", readThenWrite, "Authorization", "Bearer "+identitytest.Sign(t, rsaKey, good()))
	assert.Equal(t, http.StatusForbidden, a.status, "an OIDC principal names no session without any_session")
	assert.Equal(t, errSessionForbidden, a.apiErr(t).Error.Code)
	for _, part := range strings.Split(identitytest.Sign(t, rsaKey, good()), ".")[1:] {
		assert.NotContains(t, ts.logs.String(), part)
	}
	assert.Contains(t, ts.logs.String(), "identity: credential refused")
	assert.Contains(t, ts.logs.String(), "the token has expired")
	assert.Contains(t, ts.logs.String(), "kid=stranger")
}

// TestServeMTLSIdentity: client certificates through a real TLS handshake.
func TestServeMTLSIdentity(t *testing.T) {
	now := time.Now()
	ca := identitytest.NewCA(t, "clients", now)
	other := identitytest.NewCA(t, "elsewhere", now)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	srvCert := ca.ServerCert(t, now)
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvCert.PrivateKey)
	require.NoError(t, err)
	certFile := write("server.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvCert.Certificate[0]}))
	keyFile := write("server.key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	write("clients.pem", ca.PEM)
	cfg := writeServeConfig(t, dir, serveParams{limits: "auth:\n  mtls:\n    client_ca: clients.pem\n"})
	ts := startServe(t, cfg, func(o *Options) { o.TLSCert, o.TLSKey = certFile, keyFile })
	url := strings.Replace(ts.url, "http://", "https://", 1) + "/v1/pipelines/admission/check"
	logPath := filepath.Join(dir, "events.jsonl")

	good := identitytest.ClientCert{Subject: pkix.Name{CommonName: "agent-7"}, URIs: []string{"spiffe://example.org/agent/7"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	expired := good
	expired.NotBefore, expired.NotAfter = now.Add(-2*time.Hour), now.Add(-time.Hour)
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		status int // 0: the handshake fails
	}{
		{"good", ptrTo(ca.Issue(t, good)), http.StatusOK},
		{"expired", ptrTo(ca.Issue(t, expired)), 0},
		{"wrong CA", ptrTo(other.Issue(t, good)), 0},
		{"none", nil, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tcfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12, ServerName: "localhost"}
			if tc.cert != nil {
				c := *tc.cert
				tcfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: tcfg}}
			defer client.CloseIdleConnections()
			reqID := "mtls-" + strings.ReplaceAll(tc.name, " ", "-")
			req, err := http.NewRequest("POST", url, strings.NewReader(string(readThenWrite)))
			require.NoError(t, err)
			req.Header.Set(headerRequestID, reqID)
			resp, err := client.Do(req)
			if tc.status == 0 {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tc.status, resp.StatusCode)
			}
			d, ok := decisionOf(t, logPath, reqID)
			require.Equal(t, tc.status == http.StatusOK, ok)
			if ok {
				assert.Equal(t, &abi.Principal{Issuer: "CN=clients", Subject: "CN=agent-7", Method: abi.MethodMTLS,
					Claims: map[string]any{"uris": []any{"spiffe://example.org/agent/7"}}}, d.Principal)
			}
		})
	}
}

// TestServeTokenPrincipal: a static token's principal is its name=.
func TestServeTokenPrincipal(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokFile, []byte(tokenA+" name=ci-bot\n"), 0o600))
	cfg := writeServeConfig(t, dir, serveParams{limits: "auth:\n  tokens:\n    name: ops\n"})
	ts := startServe(t, cfg, func(o *Options) { o.TokenFile = tokFile })
	a := ts.do(t, "POST", "/v1/pipelines/admission/check", readThenWrite, "Authorization", "Bearer "+tokenA, headerRequestID, "tok")
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	d, ok := decisionOf(t, filepath.Join(dir, "events.jsonl"), "tok")
	require.True(t, ok)
	assert.Equal(t, &abi.Principal{Issuer: "ops", Subject: "ci-bot", Method: abi.MethodToken}, d.Principal)
}

// TestServeIdentityConfigRefused: mTLS without TLS, and an unreachable
// issuer, are refused at start with the key named.
func TestServeIdentityConfigRefused(t *testing.T) {
	dir := t.TempDir()
	ca := identitytest.NewCA(t, "clients", time.Now())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clients.pem"), ca.PEM, 0o600))
	for _, tc := range []struct{ name, yaml, want string }{
		{"mtls without tls", "auth:\n  mtls:\n    client_ca: clients.pem\n", "auth.mtls needs --tls-cert"},
		{"issuer unreachable", "auth:\n  oidc:\n    issuer: http://127.0.0.1:1\n    audiences: [x]\n    fetch_timeout: 2s\n", "auth.oidc"},
		{"hmac", "auth:\n  oidc:\n    issuer: https://idp.example\n    audiences: [x]\n    algorithms: [HS256]\n", "auth.oidc.algorithms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{ConfigPath: writeServeConfig(t, dir, serveParams{limits: tc.yaml})}, nil)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestServeProtectedResource: with auth.resource, gatehost serve publishes
// its metadata (RFC 9728) without a credential, names it in its 401
// challenges, refuses a token for another audience with 401 and one
// without the scope with 403 insufficient_scope, no decision made for
// either; the resource's token with the scope checks.
func TestServeProtectedResource(t *testing.T) {
	iss := identitytest.NewIssuer(t)
	dir := t.TempDir()
	const uri = "https://gate.example.com/v1"
	cfg := writeServeConfig(t, dir, serveParams{limits: fmt.Sprintf(
		"auth:\n  oidc: {issuer: %s}\n  resource: {uri: %q, scopes_required: [gate:check]}\n", iss.URL, uri)})
	ts := startServe(t, cfg, nil)
	logPath := filepath.Join(dir, "events.jsonl")
	key := iss.Keys()[0]
	now := time.Now()
	token := func(aud string, scope any) string {
		c := iss.Standard("alice", aud, now)
		if scope != nil {
			c["scope"] = scope
		}
		return identitytest.Sign(t, key, c)
	}

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/v1"} {
		a := ts.do(t, "GET", path, nil)
		require.Equal(t, http.StatusOK, a.status, path)
		assert.JSONEq(t, `{"resource":"`+uri+`","authorization_servers":["`+iss.URL+`"],"scopes_supported":["gate:check"],
			"bearer_methods_supported":["header"]}`, string(a.body))
	}
	meta := `resource_metadata="https://gate.example.com/.well-known/oauth-protected-resource/v1"`
	check := "/v1/pipelines/admission/check"
	for _, tc := range []struct {
		name      string
		hdr       []string
		status    int
		code      string
		challenge string
	}{
		{"no credential", nil, http.StatusUnauthorized, errUnauthorized, `Bearer realm="gatehost", ` + meta + `, scope="gate:check"`},
		{"another audience", []string{"Authorization", "Bearer " + token("gatehost", "gate:check")}, http.StatusUnauthorized, errUnauthorized,
			`Bearer realm="gatehost", ` + meta + `, error="invalid_token", error_description="the token is not for this audience", scope="gate:check"`},
		{"no scope", []string{"Authorization", "Bearer " + token(uri, "openid")}, http.StatusForbidden, errForbidden,
			`Bearer realm="gatehost", ` + meta + `, error="insufficient_scope", error_description="the token does not grant the scope gate:check", scope="gate:check"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqID := "refused-" + strings.ReplaceAll(tc.name, " ", "-")
			a := ts.do(t, "POST", check, readThenWrite, append(tc.hdr, headerRequestID, reqID)...)
			require.Equal(t, tc.status, a.status, string(a.body))
			assert.Equal(t, tc.code, a.apiErr(t).Error.Code)
			assert.Equal(t, tc.challenge, a.header.Get("WWW-Authenticate"))
			_, ok := decisionOf(t, logPath, reqID)
			assert.False(t, ok, "no decision is made or recorded")
		})
	}
	a := ts.do(t, "POST", check, readThenWrite, "Authorization", "Bearer "+token(uri, "openid gate:check"), headerRequestID, "good")
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	_, ok := decisionOf(t, logPath, "good")
	assert.True(t, ok)
}
