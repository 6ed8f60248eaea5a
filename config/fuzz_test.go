package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehost/gatehost/host/catalog"
)

// FuzzLoadConfig feeds arbitrary bytes as the config file. Loading must
// never panic, and every failure must name the file. Catalog sources are
// not opened (fuzzed paths could name a device).
func FuzzLoadConfig(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "..", "gatehost.yaml")); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		"pool_size: 2\nmax_response_bytes: 1MiB\n",
		"plugins:\n  a:\n    path: a.wasm\npipelines:\n  p:\n    subject: proposal\n    stages:\n      - plugin: a\n        timeout: 1s\n        memory_limit: 64MiB\n",
		"pipelines: {p: {stages: [{plugin: a, config: {x: [1, {y: null}]}}]}}",
		"max_response_bytes: 99999999999999999999GiB",
		"plugins: [1, 2]", "a: &x [*x]", "{", "\t", "",
	} {
		f.Add([]byte(s))
	}
	catalogLoader = func([]sourceConfig, func(string) string) (*catalog.Store, error) { return catalog.NewStore() }
	dir := f.TempDir()
	path := filepath.Join(dir, "gatehost.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(path); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Load did not return within 5s on %q", data)
		}
		if err != nil && !containsPath(err.Error(), path) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

func containsPath(msg, path string) bool {
	for i := 0; i+len(path) <= len(msg); i++ {
		if msg[i:i+len(path)] == path {
			return true
		}
	}
	return false
}
