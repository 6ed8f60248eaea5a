package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehost/gatehost/identity"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	tokenA = "tok-A-0123456789abcdef0123456789"
	tokenB = "tok-B-fedcba9876543210fedcba9876"
)

func TestServeAuth(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokFile, []byte("# operators\n"+tokenA+"\n\n"), 0o600))
	t.Setenv(TokenEnv, tokenB)
	ts := startServe(t, writeServeConfig(t, dir, serveParams{}), func(o *Options) { o.TokenFile = tokFile })
	check := "/v1/pipelines/admission/check"
	// A wrong token that shares all but its last byte with a real one.
	nearly := tokenA[:len(tokenA)-1] + "X"
	cases := []struct {
		name   string
		method string
		path   string
		auth   string
		status int
	}{
		{"missing token", "POST", check, "", 401},
		{"wrong token", "POST", check, "Bearer " + nearly, 401},
		{"prefix of a token", "POST", check, "Bearer " + tokenA[:20], 401},
		{"token plus a suffix", "POST", check, "Bearer " + tokenA + "x", 401},
		{"not a bearer scheme", "POST", check, "Basic " + tokenA, 401},
		{"scheme in any case (RFC 7235 §2.1)", "POST", check, "bearer " + tokenA, 200},
		{"scheme without a token", "POST", check, "Bearer", 401},
		{"token from the file", "POST", check, "Bearer " + tokenA, 200},
		{"token from the environment", "POST", check, "Bearer " + tokenB, 200},
		{"list needs a token", "GET", "/v1/pipelines", "", 401},
		{"metrics need a token", "GET", "/metrics", "", 401},
		{"metrics with a token", "GET", "/metrics", "Bearer " + tokenB, 200},
		{"healthz is open", "GET", "/healthz", "", 200},
		{"readyz is open", "GET", "/readyz", "", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.auth != "" {
				hdr = []string{"Authorization", c.auth}
			}
			a := ts.do(t, c.method, c.path, readThenWrite, hdr...)
			require.Equal(t, c.status, a.status, string(a.body))
			if c.status == 401 {
				assert.Equal(t, errUnauthorized, a.apiErr(t).Error.Code)
				assert.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer")
			}
		})
	}
	assert.NotContains(t, ts.logs.String(), tokenA[6:], "tokens are never logged")
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, and
// returns their paths and a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatehost test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func tlsClientConfig(pool *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestApproverTokensAtStart: New refuses a credential in both channels.
func TestApproverTokensAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	cfg := writeServeConfig(t, dir, serveParams{})
	t.Setenv(TokenEnv, tokenA)
	_, err := New(Options{ConfigPath: cfg, ApproverTokenFile: write("both2", tokenA)}, slog.New(slog.DiscardHandler))
	assert.ErrorIs(t, err, identity.ErrTokenReused)
}
