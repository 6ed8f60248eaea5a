package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
)

// TestReloadRefusesStoreChange: a reload keeps the open store, so a change
// of any key the open store was built from is a failed reload naming the
// key (the old config keeps serving), never a reload that reports success
// while the old value stays in force.
func TestReloadRefusesStoreChange(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, variantParams(false))
	src, err := os.ReadFile(cfg)
	require.NoError(t, err)
	const store = "store:\n  kind: postgres\n  dsn_file: dsn\n  node_id: r1\n  op_timeout: 5s\n  max_conns: 4\n"
	withStore := func(section string) string {
		s := strings.Replace(string(src), "event_log:\n  path: events.jsonl\n", section, 1)
		require.NotEqual(t, string(src), s)
		return s
	}
	require.NoError(t, os.WriteFile(cfg, []byte(withStore(store)), 0o644))
	// The same database under another connection string (and a password
	// the test server ignores), which must never be echoed.
	dsn = strings.Replace(dsn, "postgres@", "postgres:s3cret@", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dsn"), []byte(dsn), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dsn2"), []byte(dsn+"&application_name=x"), 0o600))
	ts := startServe(t, cfg, nil)

	for _, tc := range []struct{ from, to, key string }{
		{"dsn_file: dsn", "dsn_file: dsn2", "store.dsn"},
		{"node_id: r1", "node_id: r2", "store.node_id"},
		{"op_timeout: 5s", "op_timeout: 10s", "store.op_timeout"},
		{"max_conns: 4", "max_conns: 8", "store.max_conns"},
		{"max_conns: 4\n", "max_conns: 4\n  chain: global\n", "store.chain"},
		{"max_conns: 4\n", "max_conns: 4\n  catalog: published\n", "store.catalog"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			require.NoError(t, os.WriteFile(cfg, []byte(withStore(strings.Replace(store, tc.from, tc.to, 1))), 0o644))
			err := ts.s.Reload(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.key+": changed")
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
	require.NoError(t, os.WriteFile(cfg, []byte(withStore(store)), 0o644))
	require.NoError(t, ts.s.Reload(context.Background()), "the unchanged store reloads")
}
