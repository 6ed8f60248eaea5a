package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// storeFixture is a PostgreSQL store with two chains, and a config for it.
type storeFixture struct {
	db     *postgres.DB
	config string // path of a config file with store.kind postgres
	last   map[string]eventlog.Head
}

func newStoreFixture(t *testing.T, chainMode string) *storeFixture {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "node-a"})
	require.NoError(t, err)
	t.Cleanup(db.Close)
	f := &storeFixture{db: db, last: map[string]eventlog.Head{}}
	for chain, n := range map[string]int{"node-a": 3, "node-b": 5} {
		l, err := db.EventLog(ctx, chain)
		require.NoError(t, err)
		for i := range n {
			_, err := l.Append(eventlog.Record{Kind: eventlog.KindDecision, RunID: fmt.Sprintf("run-%d", i), Pipeline: "admission", Verdict: "accepted"})
			require.NoError(t, err)
		}
		seq, hash := l.Last()
		f.last[chain] = eventlog.Head{Seq: seq, Hash: hash}
		require.NoError(t, l.Close())
	}
	dir := t.TempDir()
	f.config = filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(f.config, fmt.Appendf(nil, `store:
  kind: postgres
  dsn_file: dsn
  node_id: node-a
  chain: %s
`, chainMode), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dsn"), []byte(dsn), 0o600))
	return f
}

func (f *storeFixture) exec(t *testing.T, sql string) {
	t.Helper()
	_, err := f.db.Pool().Exec(context.Background(), sql)
	require.NoError(t, err)
}

func TestLogVerifyStore(t *testing.T) {
	f := newStoreFixture(t, "node")
	code, out, errOut := runCLI("log", "verify", "--config", f.config)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "ok: chain node-a: 3 records, chain holds, last seq 3 hash "+f.last["node-a"].Hash+", head seq 3")
	assert.Contains(t, out, "ok: chain node-b: 5 records")

	code, out, _ = runCLI("log", "verify", "--config", f.config, "--chain", "node-b", "--anchor", f.last["node-b"].Hash, "--output", "json")
	require.Equal(t, 0, code, out)
	var res struct {
		Store  string      `json:"store"`
		OK     bool        `json:"ok"`
		Chains []chainJSON `json:"chains"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "postgres", res.Store)
	assert.True(t, res.OK)
	require.Len(t, res.Chains, 1)
	assert.Equal(t, chainJSON{Chain: "node-b", OK: true, Records: 5, LastSeq: 5, LastHash: f.last["node-b"].Hash,
		HeadSeq: 5, HeadHash: f.last["node-b"].Hash, AnchorSeq: 5}, res.Chains[0])

	// A deleted row: exit 1, the chain named, the gap listed.
	f.exec(t, "DELETE FROM gatehost_events WHERE chain = 'node-b' AND seq IN (2, 3)")
	code, out, _ = runCLI("log", "verify", "--config", f.config)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "ok: chain node-a")
	assert.Contains(t, out, "FAILED: chain node-b:")
	assert.Contains(t, out, "seq_gap")
	assert.Contains(t, out, "missing seqs: 2-3")

	code, out, _ = runCLI("log", "verify", "--config", f.config, "--output", "json")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.False(t, res.OK)
	require.Len(t, res.Chains, 2)
	assert.True(t, res.Chains[0].OK)
	assert.Equal(t, eventlog.ReasonSeqGap, res.Chains[1].Reason)
	assert.Equal(t, []postgres.Gap{{From: 2, To: 3}}, res.Chains[1].Gaps)
}

func TestLogVerifyStoreRefusals(t *testing.T) {
	f := newStoreFixture(t, "node")
	unreachable := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(unreachable, []byte(`store:
  kind: postgres
  dsn: postgres://u:s3cret@127.0.0.1:1/x?connect_timeout=1
  node_id: a
`), 0o600))
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"anchor without chain", []string{"--config", f.config, "--anchor", f.last["node-a"].Hash}, exitUsage, "--chain"},
		{"anchor of another chain", []string{"--config", f.config, "--chain", "node-a", "--anchor", f.last["node-b"].Hash}, 1, "anchor_not_found"},
		{"malformed anchor", []string{"--config", f.config, "--chain", "node-a", "--anchor", "abc"}, exitUsage, "anchor"},
		{"unknown chain", []string{"--config", f.config, "--chain", "nope"}, 1, "chain_not_found"},
		{"log with config", []string{"--config", f.config, "--log", "x.jsonl"}, exitUsage, "--log"},
		{"unreachable", []string{"--config", unreachable}, exitUsage, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"log", "verify"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out+errOut, tt.contains)
			assert.NotContains(t, out+errOut, "s3cret")
		})
	}
}

func TestLogExport(t *testing.T) {
	for _, mode := range []string{"node", "global"} {
		t.Run(mode, func(t *testing.T) {
			f := newStoreFixture(t, mode)
			chain := "node-a"
			if mode == "global" {
				// The global chain exists once a replica writes it.
				l, err := f.db.EventLog(context.Background(), postgres.GlobalChain)
				require.NoError(t, err)
				out, err := l.Append(eventlog.Record{Kind: "k", Verdict: "v"}, eventlog.Record{Kind: "k", Verdict: "v"})
				require.NoError(t, err)
				chain, f.last[postgres.GlobalChain] = postgres.GlobalChain, eventlog.Head{Seq: 2, Hash: out[1].Hash}
			}
			path := filepath.Join(t.TempDir(), "export.jsonl")
			code, out, errOut := runCLI("log", "export", "--config", f.config, "--out", path)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			head := f.last[chain]
			assert.Contains(t, out, fmt.Sprintf("exported chain %s: %d records to %s, chain holds", chain, head.Seq, path))

			rep, err := eventlog.Verify(path, eventlog.VerifyOptions{Anchor: head.Hash})
			require.NoError(t, err)
			assert.Equal(t, head.Seq, rep.Records)
			code, out, _ = runCLI("log", "verify", "--log", path, "--anchor", head.Hash)
			assert.Equal(t, 0, code, out)
			assert.Contains(t, out, fmt.Sprintf("ok: %s: %d records", path, head.Seq))

			// The file is never overwritten.
			code, _, errOut = runCLI("log", "export", "--config", f.config, "--out", path)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, "exists")
			_, err = eventlog.Verify(path)
			require.NoError(t, err, "the refused export left the file alone")
		})
	}
}

func TestLogExportChainAndJSON(t *testing.T) {
	f := newStoreFixture(t, "node")
	dir := t.TempDir()
	path := filepath.Join(dir, "b.jsonl")
	code, out, errOut := runCLI("log", "export", "--config", f.config, "--chain", "node-b", "--out", path, "--output", "json")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, true, res["ok"])
	assert.Equal(t, "node-b", res["chain"])
	assert.EqualValues(t, 5, res["records"])
	assert.Equal(t, f.last["node-b"].Hash, res["head_hash"])

	// A tampered chain exports, and the export says it is broken.
	f.exec(t, `UPDATE gatehost_events SET line = replace(line, '"verdict":"accepted"', '"verdict":"rejected"') WHERE chain = 'node-b' AND seq = 2`)
	bad := filepath.Join(dir, "bad.jsonl")
	code, out, _ = runCLI("log", "export", "--config", f.config, "--chain", "node-b", "--out", bad)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "bad_hash")
	code, _, _ = runCLI("log", "verify", "--log", bad)
	assert.Equal(t, 1, code)

	tests := []struct {
		name     string
		args     []string
		contains string
	}{
		{"no out", []string{"--config", f.config}, "--out is required"},
		{"unknown chain", []string{"--config", f.config, "--chain", "nope", "--out", filepath.Join(dir, "nope.jsonl")}, "chain_not_found"},
		{"file store", []string{"--config", writeConfig(t, ""), "--out", filepath.Join(dir, "f.jsonl")}, "a file event log is a log file already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"log", "export"}, tt.args...)...)
			assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, tt.contains)
		})
	}
	_, err := os.Stat(filepath.Join(dir, "nope.jsonl"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a failed export leaves no file")
}
