package server

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/internal/safefile"
)

// ErrUsage marks errors in how the server was called: options that
// contradict each other or are out of range, a listen address that needs
// auth. The CLI exits 2 on them.
var ErrUsage = errors.New("usage")

// Caps on the files the server reads besides the config (docs/CONFIGURATION.md
// and docs/HTTP-API.md).
const (
	// MaxTokenFileBytes caps a token file (Options.TokenFile,
	// Options.ApproverTokenFile).
	MaxTokenFileBytes = 1 << 20
	// MaxTLSFileBytes caps Options.TLSCert and Options.TLSKey (PEM).
	MaxTLSFileBytes = 1 << 20
)

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

// readTokenFile reads a token file: a regular file of at most
// MaxTokenFileBytes.
func readTokenFile(path string) ([]byte, error) {
	return safefile.ReadFile(path, MaxTokenFileBytes)
}
