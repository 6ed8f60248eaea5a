package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	cases := []struct {
		name    string
		file    string
		env     string
		n       int
		wantErr string
	}{
		{name: "none", n: 0},
		{name: "file", file: write("ok", "# c\n"+tokenA+"\n  "+tokenB+"  \n"), n: 2},
		{name: "env, commas", env: tokenA + "," + tokenB, n: 2},
		{name: "both", file: write("one", tokenA), env: tokenB, n: 2},
		{name: "short token", env: "short", wantErr: "at least 16"},
		{name: "empty file", file: write("empty", "# nothing\n"), wantErr: "no token"},
		{name: "missing file", file: filepath.Join(dir, "absent"), wantErr: "--token-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, err := loadTokens(c.file, c.env)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, ts.creds, c.n)
			if c.n > 0 {
				assert.True(t, ts.match(tokenB) || ts.match(tokenA))
				assert.False(t, ts.match(""))
			}
		})
	}
}

// TestTokenCompareTimingSafe: a check takes the same time whether a guess
// shares nothing with a token, all but its last byte, or is a different
// length, and whichever token it matches. A byte-by-byte compare that stops
// at the first difference (==, bytes.Equal) fails this: with 4 KiB tokens
// it is tens of times slower on a near miss than on a first-byte miss.
func TestTokenCompareTimingSafe(t *testing.T) {
	long := strings.Repeat("k", 4096)
	set, err := loadTokens("", long+","+strings.Repeat("j", 4096))
	require.NoError(t, err)
	guesses := map[string]string{
		"first byte wrong": "X" + long[1:],
		"last byte wrong":  long[:4095] + "X",
		"short":            "X",
		"match":            long,
	}
	// The minimum of many rounds is the cost of the code, not of the
	// machine's other load.
	timeOf := func(g string) time.Duration {
		best := time.Duration(1 << 62)
		for range 200 {
			start := time.Now()
			for range 20 {
				set.match(g)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	// Hashing a 1-byte guess is cheaper than a 4 KiB one, and that length
	// is the caller's own; what must not vary is the time over guesses of
	// one length.
	times := map[string]time.Duration{}
	for name, g := range guesses {
		times[name] = timeOf(g)
	}
	t.Logf("per 20 checks: %v", times)
	same := []time.Duration{times["first byte wrong"], times["last byte wrong"], times["match"]}
	ratio := float64(slices.Max(same)) / float64(slices.Min(same))
	assert.Less(t, ratio, 1.5, "check time depends on how much of the guess is right: %v", times)
	assert.True(t, set.match(long))
	assert.False(t, set.match(guesses["last byte wrong"]))
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

// TestTokenFileFormat: the fields of a token-file line, how an unbound
// token is read, and a typed error naming the line and field for each
// fault, never quoting a token.
func TestTokenFileFormat(t *testing.T) {
	dir := t.TempDir()
	n := 0
	write := func(s string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("tokens-%d", n))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	cases := []struct {
		name      string
		file, env string
		// allowed and refused sessions of the first token
		allows, refuses []string
		tokName         string
		err             error
		line            int
		field           string
	}{
		{name: "bound to sessions", file: tokenA + " sessions=dev,ci name=bot\n" + tokenB + " sessions=ops",
			allows: []string{"", "dev", "ci"}, refuses: []string{"ops", "Dev", "*"}, tokName: "bot"},
		{name: "tabs and repeated ids", file: tokenA + "\tsessions=dev,dev\n" + tokenB + " sessions=ops",
			allows: []string{"dev"}, refuses: []string{"ops"}, tokName: "--token-file line 1"},
		{name: "any session, said explicitly", file: tokenA + " sessions=*\n" + tokenB + " sessions=ops",
			allows: []string{"dev", "ops", "x"}},
		{name: "the only token, unbound: any session", file: tokenA, allows: []string{"dev", "ops"}},
		{name: "the only token, from the environment", env: tokenA, allows: []string{"dev"}, tokName: "$GATEHOST_AUTH_TOKENS item 1"},
		{name: "several unbound: no session", file: tokenA + "\n" + tokenB, allows: []string{""}, refuses: []string{"dev"}},
		{name: "one bound, one unbound from the environment", file: tokenA + " sessions=dev", env: tokenB,
			allows: []string{"dev"}, refuses: []string{"ops"}},
		{name: "unknown field", file: tokenA + " role=admin", err: errTokenField, line: 1},
		{name: "a space inside a token", file: "# c\n" + tokenA + " secretpart", err: errTokenField, line: 2},
		{name: "sessions twice", file: tokenA + " sessions=a sessions=b", err: errTokenField, line: 1, field: "sessions"},
		{name: "empty session id", file: tokenA + " sessions=a,,b", err: errTokenField, line: 1, field: "sessions"},
		{name: "no session ids", file: tokenA + " sessions=", err: errTokenField, line: 1, field: "sessions"},
		{name: "star among ids", file: tokenA + " sessions=a,*", err: errTokenField, line: 1, field: "sessions"},
		{name: "bad name", file: tokenA + " name=a/b", err: errTokenField, line: 1, field: "name"},
		{name: "the same token twice", file: tokenA + " sessions=a\n" + tokenA + " sessions=b", err: errTokenReused, line: 2, field: "token"},
		{name: "in the file and the environment", file: tokenA, env: tokenA, err: errTokenReused, line: 1, field: "token"},
		{name: "short", file: "short sessions=a", err: errTokenShort, line: 1, field: "token"},
		{name: "no token", file: "# none\n\n", err: errTokenNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := ""
			if c.file != "" {
				file = write(c.file)
			}
			set, err := loadTokens(file, c.env)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				var te *tokenError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, c.line, te.Line)
				assert.Equal(t, c.field, te.Field)
				assert.NotContains(t, err.Error(), tokenA[6:], "a token is never quoted")
				assert.NotContains(t, err.Error(), "secretpart")
				return
			}
			require.NoError(t, err)
			first := set.lookup(cmpOr(firstWord(c.file), c.env))
			require.NotNil(t, first)
			for _, s := range c.allows {
				assert.True(t, first.allows(s), "session %q", s)
			}
			for _, s := range c.refuses {
				assert.False(t, first.allows(s), "session %q", s)
			}
			if c.tokName != "" {
				assert.Equal(t, c.tokName, first.name)
			}
		})
	}
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func TestApproverTokens(t *testing.T) {
	dir := t.TempDir()
	agents, err := loadTokens("", tokenA)
	require.NoError(t, err)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	set, err := loadApproverTokens(write("ok", tokenB+" name=alice\n"), "", agents)
	require.NoError(t, err)
	assert.Equal(t, "alice", set.lookup(tokenB).name)
	assert.Nil(t, set.lookup(tokenA), "an agent token is not an approver token")

	_, err = loadApproverTokens(write("sess", tokenB+" sessions=dev\n"), "", agents)
	assert.ErrorIs(t, err, errTokenField, "approvers are not bound to sessions")
	_, err = loadApproverTokens(write("both", tokenA+"\n"), "", agents)
	require.ErrorIs(t, err, errTokenReused, "one credential may not be both")
	assert.NotContains(t, err.Error(), tokenA[6:])
	_, err = loadApproverTokens("", tokenA, agents)
	assert.ErrorIs(t, err, errTokenReused)
	empty, err := loadApproverTokens("", "", agents)
	require.NoError(t, err)
	assert.True(t, empty.empty())

	// At start: newServer refuses a credential in both channels.
	cfg := writeServeConfig(t, dir, serveParams{})
	t.Setenv(TokenEnv, tokenA)
	_, err = New(Options{ConfigPath: cfg, ApproverTokenFile: write("both2", tokenA)}, slog.New(slog.DiscardHandler))
	assert.ErrorIs(t, err, errTokenReused)
}

// FuzzTokenFile: any token-file content loads or fails with a tokenError,
// never panics, and an error never quotes a token.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{
		tokenA, tokenA + " sessions=dev,ci name=bot\n" + tokenB + " sessions=*",
		"# c\n\n" + tokenA + "\tsessions=a,,b", tokenA + " x", "short", tokenA + " name=" + tokenB,
		tokenA + " sessions=a sessions=b", "\xff\xfe" + tokenA, tokenA + " sessions=" + strings.Repeat("a", 200),
	} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "tokens")
	f.Fuzz(func(t *testing.T, s string) {
		require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
		set, err := loadTokens(path, "")
		if err != nil {
			var te *tokenError
			require.ErrorAs(t, err, &te)
			for _, line := range strings.Split(s, "\n") {
				tok := firstWord(line)
				if len(tok) >= minTokenBytes && strings.Count(s, tok) == 1 {
					assert.NotContains(t, err.Error(), tok)
				}
			}
			return
		}
		assert.False(t, set.empty())
	})
}
