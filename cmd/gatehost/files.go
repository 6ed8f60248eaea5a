package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Caps on the files the CLI itself reads (README "Configuration"). The
// host's own files have theirs: host.MaxModuleFileBytes, catalog.
// MaxFileBytes, domain.MaxCatalogBytes, datasource.MaxFileBytes,
// session.MaxFileBytes.
const (
	// maxConfigBytes caps the config file: the largest real config is a
	// few KiB.
	maxConfigBytes = 4 << 20
	// maxTokenFileBytes caps --token-file.
	maxTokenFileBytes = 1 << 20
	// maxTLSFileBytes caps --tls-cert and --tls-key (PEM).
	maxTLSFileBytes = 1 << 20
	// maxOperatorFileBytes caps merge-verify's --footprint and --waiver.
	maxOperatorFileBytes = 4 << 20
)

// readConfigFile reads the config file: a regular file of at most
// maxConfigBytes. A named pipe or a device is refused without being read.
func readConfigFile(path string) ([]byte, error) {
	return safefile.ReadFile(path, maxConfigBytes)
}

// checkConfiguredPaths refuses, naming the key, a configured path that
// exists and is of the wrong kind: a named pipe, a device or a directory
// where a file is expected, a file where a directory is. It opens nothing;
// each file is checked again when it is opened. A missing path is left to
// whoever reads it (the event log and session store create theirs, a
// missing plugin fails its load), and so is a plugin of a pipeline that is
// not run.
func checkConfiguredPaths(cfg *host.Config, sessionPath string) error {
	check := func(key, path string, fn func(string) error) error {
		if path == "" {
			return nil
		}
		if err := fn(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	}
	if err := check("event_log.path", cfg.EventLogPath, safefile.CheckRegular); err != nil {
		return err
	}
	if err := check("sessions.path", sessionPath, safefile.CheckRegular); err != nil {
		return err
	}
	if cfg.CacheDir != host.CacheOff {
		if err := check("cache_dir", cfg.CacheDir, safefile.CheckDir); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Plugins)) {
		if err := check("plugins."+name+".path", cfg.Plugins[name].Path, safefile.CheckRegular); err != nil {
			return err
		}
	}
	return nil
}

// fileError reports whether err is about a file itself (missing,
// unreadable, of the wrong kind or too large) rather than its content.
func fileError(err error) bool {
	var fe *safefile.Error
	var pe *fs.PathError
	return errors.As(err, &fe) || errors.As(err, &pe)
}

// withoutPath drops the path from a safefile error, for a message that
// names the file already.
func withoutPath(err error) error {
	var fe *safefile.Error
	if errors.As(err, &fe) {
		return fe.WithoutPath()
	}
	return err
}

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
