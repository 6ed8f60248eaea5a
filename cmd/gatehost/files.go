package main

import (
	"crypto/tls"
	"fmt"
	"io/fs"
	"os"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Caps on the files the CLI itself reads (README "Configuration"); the
// config file's is config.MaxFileBytes.
const (
	// maxTokenFileBytes caps --token-file.
	maxTokenFileBytes = 1 << 20
	// maxTLSFileBytes caps --tls-cert and --tls-key (PEM).
	maxTLSFileBytes = 1 << 20
	// maxOperatorFileBytes caps merge-verify's --footprint and --waiver.
	maxOperatorFileBytes = 4 << 20
)

// loadKeyPair reads --tls-cert and --tls-key as regular files of at most
// maxTLSFileBytes each.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := safefile.ReadFile(certFile, maxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert: %w", err)
	}
	key, err := safefile.ReadFile(keyFile, maxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key: %w", err)
	}
	return tls.X509KeyPair(cert, key)
}

// writeRegularFile writes data to a new or truncated regular file, as
// os.WriteFile does, refusing a named pipe or device at the path (which
// would block the write or swallow it).
func writeRegularFile(path string, data []byte, perm fs.FileMode) error {
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readTokenFile reads --token-file: a regular file of at most
// maxTokenFileBytes.
func readTokenFile(path string) ([]byte, error) {
	return safefile.ReadFile(path, maxTokenFileBytes)
}
