package server

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
)

// TestServeReloadRefusesSpecialFiles: a config or token file replaced by a
// named pipe or a device while serving fails its reload at once — by signal
// or by the file watcher — and the old config keeps serving; shutdown is
// not held up.
func TestServeReloadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, serveParams{})
	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	tokens := filepath.Join(dir, "tokens")
	const token = "reload-test-token-0123456789"
	require.NoError(t, os.WriteFile(tokens, []byte(token+"\n"), 0o600))
	ts := startServe(t, cfg, func(o *Options) { o.TokenFile = tokens })
	auth := []string{"Authorization", "Bearer " + token}

	// replace puts a named pipe, or a link to /dev/zero, where path was.
	replace := func(t *testing.T, path, kind string) {
		tmp := path + ".new"
		if kind == "named pipe" {
			require.NoError(t, syscall.Mkfifo(tmp, 0o644))
		} else {
			require.NoError(t, os.Symlink("/dev/zero", tmp))
		}
		require.NoError(t, os.Rename(tmp, path))
	}
	tests := []struct {
		file, kind, want string
	}{
		{cfg, "named pipe", "config " + cfg + ": not a regular file (named pipe)"},
		{cfg, "character device", "config " + cfg + ": not a regular file (character device)"},
		{tokens, "named pipe", "--token-file: " + tokens + ": not a regular file (named pipe)"},
		{tokens, "character device", "--token-file: " + tokens + ": not a regular file (character device)"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file)+"/"+tt.kind, func(t *testing.T) {
			replace(t, tt.file, tt.kind)
			err := safefiletest.Returns(t, func() error { return ts.s.reload(context.Background(), "test") })
			assert.EqualError(t, err, tt.want)
			safefiletest.Returns(t, func() bool { ts.s.reloader.IfChanged(context.Background()); return true })
			a := ts.do(t, "GET", "/v1/pipelines", nil, auth...)
			assert.Equal(t, 200, a.status, "the old config serves")
			assert.Contains(t, string(a.body), `"config_generation":1`)
			require.NoError(t, os.Remove(tt.file))
			writeAtomic(t, cfg, string(good))
			writeAtomic(t, tokens, token+"\n")
		})
	}
	require.NoError(t, safefiletest.Returns(t, func() error { return ts.stop(t) }))
}
