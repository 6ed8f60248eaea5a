// Package identitytest provides real parts for testing authentication: an
// OpenID Connect issuer served over HTTP (discovery document and JWKS)
// that signs tokens with RSA and ECDSA keys and can rotate them, and a
// certificate authority that issues TLS client certificates.
package identitytest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is one signing key of the issuer.
type Key struct {
	ID  string
	Alg jose.SignatureAlgorithm
	Key crypto.Signer
}

// Issuer is a test OIDC issuer on a loopback httptest server.
type Issuer struct {
	srv *httptest.Server
	// URL is the issuer URL (and its iss claim).
	URL string

	mu        sync.Mutex
	published []Key
	fetches   atomic.Int64
}

// NewIssuer starts an issuer publishing an RSA key "rsa-1" (RS256) and an
// ECDSA P-256 key "ec-1" (ES256); it stops at the end of the test.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{}
	iss.published = []Key{NewRSAKey(t, "rsa-1"), NewECKey(t, "ec-1")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.URL, "jwks_uri": iss.URL + "/jwks",
			"authorization_endpoint": iss.URL + "/authorize", "token_endpoint": iss.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		iss.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(iss.JWKS())
	})
	iss.srv = httptest.NewServer(mux)
	iss.URL = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	return iss
}

// NewRSAKey returns a fresh 2048-bit RSA key for RS256.
func NewRSAKey(t testing.TB, id string) Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Alg: jose.RS256, Key: k}
}

// NewECKey returns a fresh P-256 key for ES256.
func NewECKey(t testing.TB, id string) Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Alg: jose.ES256, Key: k}
}

// JWKS is the key set the issuer publishes now.
func (iss *Issuer) JWKS() jose.JSONWebKeySet {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range iss.published {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Key.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"})
	}
	return set
}

// Publish replaces the published keys (a rotation).
func (iss *Issuer) Publish(keys ...Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.published = keys
}

// Keys are the published keys.
func (iss *Issuer) Keys() []Key {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return append([]Key(nil), iss.published...)
}

// Fetches counts the requests for the key set so far.
func (iss *Issuer) Fetches() int64 { return iss.fetches.Load() }

// Claims are a token's claims.
type Claims map[string]any

// Standard returns claims for subject sub: iss, aud, sub, iat, nbf and exp
// an hour after now.
func (iss *Issuer) Standard(sub, aud string, now time.Time) Claims {
	return Claims{"iss": iss.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with key, whose id goes into the header's kid.
func Sign(t testing.TB, key Key, c Claims) string {
	t.Helper()
	return SignWith(t, jose.SigningKey{Algorithm: key.Alg, Key: jose.JSONWebKey{Key: key.Key, KeyID: key.ID}}, c)
}

// SignWith signs claims with any go-jose signing key (an HMAC secret, for
// a forgery).
func SignWith(t testing.TB, sk jose.SigningKey, c Claims) string {
	t.Helper()
	s, err := jose.NewSigner(sk, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Unsigned returns the claims as an alg "none" token.
func Unsigned(t testing.TB, c Claims) string {
	t.Helper()
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

// PublicKeyPEM is the PKIX PEM of k's public key: what an HMAC forgery
// uses as its secret.
func PublicKeyPEM(t testing.TB, k Key) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// CA is a test certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded: a client_ca bundle.
	PEM []byte
}

var serial atomic.Int64

// NewCA returns a fresh CA named cn, valid from an hour before now for a
// day.
func NewCA(t testing.TB, cn string, now time.Time) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: c, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// ClientCert describes a client certificate to issue.
type ClientCert struct {
	Subject   pkix.Name
	URIs      []string
	DNSNames  []string
	Emails    []string
	IPs       []net.IP
	NotBefore time.Time
	NotAfter  time.Time
	// Usage is the extended key usage; zero is client auth.
	Usage x509.ExtKeyUsage
}

// Issue issues a client certificate and returns it with its key, as a
// tls.Certificate a client presents.
func (ca *CA) Issue(t testing.TB, cc ClientCert) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := cc.Usage
	if usage == 0 {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: cc.Subject, DNSNames: cc.DNSNames,
		EmailAddresses: cc.Emails, IPAddresses: cc.IPs, NotBefore: cc.NotBefore, NotAfter: cc.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	for _, u := range cc.URIs {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// ServerCert issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) ServerCert(t testing.TB, now time.Time) tls.Certificate {
	t.Helper()
	c := ca.Issue(t, ClientCert{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), Usage: x509.ExtKeyUsageServerAuth})
	return c
}
