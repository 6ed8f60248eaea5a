package identity

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// MTLSConfig configures client-certificate authentication.
type MTLSConfig struct {
	// ClientCAs are the CAs a client certificate must chain to. Required.
	ClientCAs *x509.CertPool
	// Require makes the TLS handshake refuse a client without a
	// certificate (tls.RequireAndVerifyClientCert); otherwise one is
	// verified when given (tls.VerifyClientCertIfGiven) and a client
	// without one may authenticate another way.
	Require bool
	// Now is the clock certificates are checked against; nil is
	// time.Now.
	Now func() time.Time
}

// MTLS authenticates a verified TLS client certificate: principal
// {issuer: the issuer DN, subject: the subject DN (RFC 2253 form; the first
// URI, DNS or email SAN when the DN is empty), method: mtls, claims: uris,
// dns_names, emails}. Mount its TLSConfig on the server so the handshake
// verifies the certificate; Authenticate verifies it again against the same
// pool, so a handler served behind another TLS configuration cannot accept
// an unverified one.
type MTLS struct {
	cfg MTLSConfig
}

// NewMTLS returns the client-certificate source. An error wraps ErrConfig.
func NewMTLS(cfg MTLSConfig) (*MTLS, error) {
	if cfg.ClientCAs == nil {
		return nil, fmt.Errorf("%w: client_ca: required", ErrConfig)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MTLS{cfg: cfg}, nil
}

// ParseCAs reads a PEM bundle of CA certificates. An error wraps ErrConfig:
// no certificate in it, a block that is not a certificate, or one that does
// not parse or is not a CA.
func ParseCAs(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%w: client_ca: a %q PEM block; want CERTIFICATE blocks only", ErrConfig, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: client_ca: certificate %d: %w", ErrConfig, n+1, err)
		}
		if !c.IsCA {
			return nil, fmt.Errorf("%w: client_ca: certificate %d (%s) is not a CA", ErrConfig, n+1, c.Subject)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: client_ca: no PEM certificate in it", ErrConfig)
	}
	return pool, nil
}

// TLSConfig returns a clone of base (nil: a new one, TLS 1.2 at least) that
// asks for client certificates and verifies them against the pool.
func (m *MTLS) TLSConfig(base *tls.Config) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		c = base.Clone()
	}
	c.ClientCAs = m.cfg.ClientCAs
	c.ClientAuth = tls.VerifyClientCertIfGiven
	if m.cfg.Require {
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

// Authenticate implements Authenticator.
func (m *MTLS) Authenticate(r *http.Request) (*abi.Principal, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		if m.cfg.Require {
			return nil, invalid(abi.MethodMTLS, "a client certificate is required", nil)
		}
		return nil, noCredential(abi.MethodMTLS, "no client certificate")
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: m.cfg.ClientCAs, Intermediates: inter,
		CurrentTime: m.cfg.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, invalid(abi.MethodMTLS, "the client certificate is not valid", err)
	}
	p := &abi.Principal{Issuer: leaf.Issuer.String(), Subject: leaf.Subject.String(), Method: abi.MethodMTLS}
	claims := map[string]any{}
	add := func(key string, vs []string) {
		if len(vs) > 0 {
			a := make([]any, len(vs))
			for i, v := range vs {
				a[i] = v
			}
			claims[key] = a
		}
	}
	uris := make([]string, len(leaf.URIs))
	for i, u := range leaf.URIs {
		uris[i] = u.String()
	}
	add("uris", uris)
	add("dns_names", leaf.DNSNames)
	add("emails", leaf.EmailAddresses)
	if len(claims) > 0 {
		p.Claims = claims
	}
	if p.Subject == "" {
		for _, vs := range [][]string{uris, leaf.DNSNames, leaf.EmailAddresses} {
			if len(vs) > 0 {
				p.Subject = vs[0]
				break
			}
		}
	}
	return bounded(abi.MethodMTLS, p)
}
