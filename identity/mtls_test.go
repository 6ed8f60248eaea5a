package identity_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
)

type x509Cert = x509.Certificate

// TestMTLSIdentity runs real TLS handshakes: the server asks for client
// certificates against one CA, and the principal comes from the verified
// certificate.
func TestMTLSIdentity(t *testing.T) {
	now := time.Now()
	ca := identitytest.NewCA(t, "clients", now)
	other := identitytest.NewCA(t, "elsewhere", now)
	good := identitytest.ClientCert{Subject: pkix.Name{CommonName: "agent-7", Organization: []string{"Example"}},
		URIs: []string{"spiffe://example.org/agent/7"}, DNSNames: []string{"agent7.example.org"}, Emails: []string{"ops@example.org"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	expired := good
	expired.NotBefore, expired.NotAfter = now.Add(-2*time.Hour), now.Add(-time.Hour)
	serverUsage := good
	serverUsage.Usage = x509.ExtKeyUsageServerAuth

	for _, require_ := range []bool{false, true} {
		m, err := identity.NewMTLS(identity.MTLSConfig{ClientCAs: ca.Pool(), Require: require_})
		require.NoError(t, err)
		var got *abi.Principal
		srv := httptest.NewUnstartedServer(identity.Require(m, "gatehost", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, _ = identity.FromContext(r.Context())
		})))
		srv.TLS = m.TLSConfig(&tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t, now)}, MinVersion: tls.VersionTLS12})
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
		srv.StartTLS()
		t.Cleanup(srv.Close)
		for _, tc := range []struct {
			name   string
			cert   *tls.Certificate
			status int // 0: the handshake fails
		}{
			{"good", ptr(ca.Issue(t, good)), http.StatusOK},
			{"expired", ptr(ca.Issue(t, expired)), 0},
			{"wrong CA", ptr(other.Issue(t, good)), 0},
			{"server usage only", ptr(ca.Issue(t, serverUsage)), 0},
			{"none", nil, map[bool]int{false: http.StatusUnauthorized, true: 0}[require_]},
		} {
			t.Run(map[bool]string{false: "if given/", true: "required/"}[require_]+tc.name, func(t *testing.T) {
				got = nil
				cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12, ServerName: "localhost"}
				if tc.cert != nil {
					c := *tc.cert
					cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
				}
				client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
				defer client.CloseIdleConnections()
				resp, err := client.Get(srv.URL)
				if tc.status == 0 {
					require.Error(t, err)
					assert.Nil(t, got)
					return
				}
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, tc.status, resp.StatusCode)
				if tc.status != http.StatusOK {
					assert.Equal(t, `Bearer realm="gatehost"`, resp.Header.Get("WWW-Authenticate"))
					return
				}
				assert.Equal(t, &abi.Principal{Issuer: "CN=clients", Subject: "CN=agent-7,O=Example", Method: abi.MethodMTLS,
					Claims: map[string]any{"uris": []any{"spiffe://example.org/agent/7"}, "dns_names": []any{"agent7.example.org"}, "emails": []any{"ops@example.org"}}}, got)
			})
		}
	}
}

// TestMTLSIdentityReverifies: a certificate that reached the handler
// without the handshake verifying it (another TLS configuration) is still
// refused when it does not chain to the pool or has expired.
func TestMTLSIdentityReverifies(t *testing.T) {
	now := time.Now()
	ca := identitytest.NewCA(t, "clients", now)
	other := identitytest.NewCA(t, "elsewhere", now)
	m, err := identity.NewMTLS(identity.MTLSConfig{ClientCAs: ca.Pool(), Now: func() time.Time { return now }})
	require.NoError(t, err)
	cc := identitytest.ClientCert{Subject: pkix.Name{CommonName: "a"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	expired := cc
	expired.NotAfter = now.Add(-time.Minute)
	noDN := identitytest.ClientCert{URIs: []string{"spiffe://example.org/x"}, NotBefore: cc.NotBefore, NotAfter: cc.NotAfter}
	for _, tc := range []struct {
		name    string
		cert    tls.Certificate
		subject string
	}{
		{"good", ca.Issue(t, cc), "CN=a"},
		{"subject from the URI SAN", ca.Issue(t, noDN), "spiffe://example.org/x"},
		{"wrong CA", other.Issue(t, cc), ""},
		{"expired", ca.Issue(t, expired), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.cert.Leaf}}
			p, err := m.Authenticate(r)
			if tc.subject == "" {
				require.ErrorIs(t, err, identity.ErrUnauthenticated)
				assert.NotErrorIs(t, err, identity.ErrNoCredential)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.subject, p.Subject)
		})
	}
	_, err = identity.ParseCAs([]byte("nothing"))
	assert.ErrorIs(t, err, identity.ErrConfig)
	_, err = identity.ParseCAs(ca.Issue(t, cc).Leaf.Raw)
	assert.ErrorIs(t, err, identity.ErrConfig)
	_, err = identity.NewMTLS(identity.MTLSConfig{})
	assert.ErrorIs(t, err, identity.ErrConfig)
}

func ptr[T any](v T) *T { return &v }
