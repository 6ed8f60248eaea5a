// Package frontend is what gatehost's HTTP front ends — gatehost serve's
// decision API (package server) and gatehost mcp --listen (package
// mcpgateway) — share, one implementation per rule: the loopback-only
// listener without auth, TLS from --tls-cert and --tls-key (with client
// certificates for auth.mtls), the auth: section's identity sources over
// the token file's tokens, a graceful shutdown within a bound, the
// Prometheus metrics of decisions and reloads, and the config reload
// (SIGHUP, a polled file change) that keeps the running config when the
// new one fails.
package frontend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/safefile"
)

// ErrUsage marks errors in how a front end was called: options that
// contradict each other or are out of range, a listen address that needs
// auth. The CLI exits 2 on them.
var ErrUsage = errors.New("usage")

// MaxTLSFileBytes caps --tls-cert and --tls-key (PEM).
const MaxTLSFileBytes = 1 << 20

// Listen opens a TCP listener on addr. Unless authed (a bearer token or an
// identity source is configured) or insecure (--insecure-listen-any), it
// must be loopback: checked on the address actually bound, so a host name
// cannot smuggle in another (an error wrapping ErrUsage).
func Listen(addr string, authed, insecure bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	if !authed && !insecure {
		if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
			ln.Close()
			return nil, fmt.Errorf("%w: --listen %s is not a loopback address and no bearer token is configured (--token-file or $%s); pass --insecure-listen-any to serve it unauthenticated anyway",
				ErrUsage, addr, identity.TokenEnv)
		}
	}
	return ln, nil
}

// CheckTLS refuses a certificate without its key or a key without its
// certificate (ErrUsage), then reads both (regular files of at most
// MaxTLSFileBytes each) so that a bad pair is reported before anything is
// served. Both empty is plain HTTP.
func CheckTLS(certFile, keyFile string) error {
	if (certFile == "") != (keyFile == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrUsage)
	}
	if certFile == "" {
		return nil
	}
	if _, err := loadKeyPair(certFile, keyFile); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// loadKeyPair reads --tls-cert and --tls-key as regular files of at most
// MaxTLSFileBytes each.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := safefile.ReadFile(certFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert: %w", err)
	}
	key, err := safefile.ReadFile(keyFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key: %w", err)
	}
	return tls.X509KeyPair(cert, key)
}

// Serve serves srv on ln until ctx is done or srv fails, then shuts it down
// within the bound of s. With certFile it serves HTTPS (see Start).
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, certFile, keyFile string, clientCerts func(*tls.Config) *tls.Config, s Shutdown) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-Start(srv, ln, certFile, keyFile, clientCerts):
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.Do(srv))
}

// Start serves srv on ln in a goroutine and returns the channel its end is
// sent on. With certFile it serves HTTPS from the pair (TLS 1.2 at least),
// its config adapted by clientCerts when set (Identities.TLSConfig asks for
// client certificates with auth.mtls).
func Start(srv *http.Server, ln net.Listener, certFile, keyFile string, clientCerts func(*tls.Config) *tls.Config) <-chan error {
	serveErr := make(chan error, 1)
	go func() {
		if certFile == "" {
			serveErr <- srv.Serve(ln)
			return
		}
		pair, err := loadKeyPair(certFile, keyFile)
		if err != nil {
			serveErr <- fmt.Errorf("tls: %w", err)
			return
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		if clientCerts != nil {
			srv.TLSConfig = clientCerts(srv.TLSConfig)
		}
		serveErr <- srv.ServeTLS(ln, "", "")
	}()
	return serveErr
}

// Scheme is "https" with a certificate, else "http".
func Scheme(certFile string) string {
	if certFile != "" {
		return "https"
	}
	return "http"
}

// Shutdown is how a front end stops: it stops accepting and waits for
// in-flight requests within Timeout; after it, Cancel (if set) cancels what
// is still running and the connections are closed. Logger and Name say so.
type Shutdown struct {
	Timeout time.Duration
	Cancel  func()
	Logger  *slog.Logger
	Name    string
}

// Do shuts srv down within the bound. A passed deadline is logged, not
// returned: what was still running has been cancelled.
func (s Shutdown) Do(srv *http.Server) error {
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger.Info(s.Name+": shutting down", "deadline", s.Timeout)
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn(s.Name+": shutdown deadline passed; cancelling the runs still going", "err", err)
		if s.Cancel != nil {
			s.Cancel()
		}
		_ = srv.Close()
	}
	return nil
}

// BaseURL is the absolute URL of path on ln, as a browser on this machine
// reaches it: scheme (https with certFile), the bound address and path.
// An unspecified address (0.0.0.0, ::) names no host a browser can
// reach: an error, so that the caller asks for an explicit URL.
func BaseURL(ln net.Listener, certFile, path string) (string, error) {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok || a.IP.IsUnspecified() {
		return "", fmt.Errorf("%s listens on every address: the URL a browser reaches it at must be given", ln.Addr())
	}
	return Scheme(certFile) + "://" + a.String() + path, nil
}
