package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/safefile"
)

// MaxFileBytes caps the config file (docs/CONFIGURATION.md): the largest
// real config is a few KiB. The files the config names have caps of their
// own: host.MaxModuleFileBytes, catalog.MaxFileBytes,
// domain.MaxCatalogBytes, datasource.MaxFileBytes, session.MaxFileBytes.
const MaxFileBytes = 4 << 20

// ReadFile reads a config file: a regular file of at most MaxFileBytes. A
// named pipe or a device is refused without being read (a reader that
// opened it would wait forever). Errors read "config PATH: reason" and wrap
// the safefile sentinels (host.ErrNotRegular, host.ErrFileTooLarge, …).
func ReadFile(path string) ([]byte, error) {
	b, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, withoutPath(err))
	}
	return b, nil
}

// checkConfiguredPaths refuses, naming the key, a configured path that
// exists and is of the wrong kind: a named pipe, a device or a directory
// where a file is expected, a file where a directory is. It opens nothing;
// each file is checked again when it is opened. A missing path is left to
// whoever reads it (the event log and session store create theirs, a
// missing plugin fails its load), and so is a plugin of a pipeline that is
// not run.
func checkConfiguredPaths(cfg *host.Config, sessionPath string, builtins map[string]string) error {
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
		if err := check(pluginKey(name, builtins), cfg.Plugins[name].Path, safefile.CheckRegular); err != nil {
			return err
		}
	}
	return nil
}

// pluginKey is the key that gives plugin name's module: plugins.NAME.path,
// or plugins.NAME.builtin for a built-in gate.
func pluginKey(name string, builtins map[string]string) string {
	if _, ok := builtins[name]; ok {
		return "plugins." + name + ".builtin"
	}
	return "plugins." + name + ".path"
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
