package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreRefusals: every bad store: section stops the load with an error
// naming the key (or the variable) and why, and never quoting the DSN.
func TestStoreRefusals(t *testing.T) {
	const dsn = "postgres://u:s3cret@127.0.0.1:1/db"
	for _, tc := range []struct {
		name, section string
		env           map[string]string
		want          string
	}{
		{"unknown key", "{kind: postgres, dsn: '" + dsn + "', bogus: 1}", nil, `unknown key "store.bogus"`},
		{"bad kind", "{kind: postgress, dsn: '" + dsn + "'}", nil, `store.kind: "postgress": want file or postgres`},
		{"no dsn", "{kind: postgres}", nil, "store.dsn: required with store.kind postgres"},
		{"dsn and dsn_file", "{kind: postgres, dsn: '" + dsn + "', dsn_file: dsn}", nil, "store.dsn_file: set store.dsn (or $GATEHOST_STORE_DSN) or store.dsn_file, not both"},
		{"env dsn and dsn_file", "{kind: postgres, dsn_file: dsn}", map[string]string{"GATEHOST_STORE_DSN": dsn}, "$GATEHOST_STORE_DSN"},
		{"dsn not a string", "{kind: postgres, dsn: [s3cret]}", nil, "store.dsn: expected type 'string'"},
		{"bad node_id", "{kind: postgres, dsn: '" + dsn + "', node_id: 'a b'}", nil, `store.node_id (or $GATEHOST_STORE_NODE_ID): "a b": want 1 to 64 bytes`},
		{"bad node_id from env", "{kind: postgres, dsn: '" + dsn + "'}", map[string]string{"GATEHOST_STORE_NODE_ID": "a/b"}, `$GATEHOST_STORE_NODE_ID`},
		{"negative op_timeout", "{kind: postgres, dsn: '" + dsn + "', op_timeout: -1s}", nil, "store.op_timeout: -1s: want 1ms to 1m"},
		{"huge op_timeout", "{kind: postgres, dsn: '" + dsn + "', op_timeout: 1h}", nil, "store.op_timeout: 1h0m0s: want 1ms to 1m"},
		{"op_timeout under 1ms", "{kind: postgres, dsn: '" + dsn + "', op_timeout: 1us}", nil, "store.op_timeout: 1µs: want 1ms to 1m"},
		{"op_timeout a bare number", "{kind: postgres, dsn: '" + dsn + "', op_timeout: 2}", nil, "store.op_timeout: 2ns: want 1ms to 1m"},
		{"max_conns", "{kind: postgres, dsn: '" + dsn + "', max_conns: 1001}", nil, "store.max_conns: 1001: want 1 to 1000"},
		{"chain", "{kind: postgres, dsn: '" + dsn + "', chain: Global}", nil, `store.chain: "Global": want node or global`},
		{"catalog", "{kind: postgres, dsn: '" + dsn + "', catalog: pub}", nil, `store.catalog: "pub": want local or published`},
		{"postgres key with file", "{kind: file, node_id: a}", nil, "store.node_id: applies only to store.kind postgres"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := write(t, "gatehost.yaml", "store: "+tc.section+"\n")
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "dsn"), []byte(dsn), 0o600))
			_, err := Load(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
	_, err := Load(write(t, "gatehost.yaml", "event_log: {path: e.jsonl}\nstore: {kind: postgres, dsn: '"+dsn+"'}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "event_log.path: not used with store.kind postgres")
}

// TestStoreBounds: the ends of op_timeout's range are accepted, and 0 is
// the PostgreSQL store's default.
func TestStoreBounds(t *testing.T) {
	for _, d := range []string{"1ms", "1m", "0s"} {
		l, err := Load(write(t, "gatehost.yaml", "store: {kind: postgres, dsn: 'postgres://x', node_id: n, op_timeout: "+d+"}\n"))
		require.NoError(t, err, d)
		want, _ := time.ParseDuration(d)
		assert.Equal(t, want, l.Store.OpTimeout, d)
	}
}
