package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// record makes the i-th test record of writer w.
func record(w string, i int) eventlog.Record {
	return eventlog.Record{
		Kind: eventlog.KindDecision, RunID: fmt.Sprintf("%s-run-%d", w, i), Pipeline: "admission",
		Stage: "static-verify", Plugin: "static-verify", ABIVersion: 1, Verdict: "accepted",
		RequestID: fmt.Sprintf("%s-%d", w, i), Data: json.RawMessage(fmt.Sprintf(`{ "i": %d, "note": "<&> é \u2028" }`, i)),
	}
}

// openLog opens chain on db.
func openLog(t *testing.T, db *postgres.DB, chain string) *postgres.Log {
	t.Helper()
	l, err := db.EventLog(context.Background(), chain)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// replica opens another store on dsn, as another replica would.
func replica(t *testing.T, dsn, node string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: node})
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

// storedLines returns chain's lines in seq order.
func storedLines(t *testing.T, db *postgres.DB, chain string) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), "SELECT line FROM gatehost_events WHERE chain = $1 ORDER BY seq", chain)
	require.NoError(t, err)
	var lines []string
	for rows.Next() {
		var l string
		require.NoError(t, rows.Scan(&l))
		lines = append(lines, l)
	}
	require.NoError(t, rows.Err())
	return lines
}

// verifyOne verifies chain alone and returns its report.
func verifyOne(t *testing.T, db *postgres.DB, chain string, anchor string) postgres.ChainReport {
	t.Helper()
	opts := postgres.VerifyChainsOptions{Chains: []string{chain}}
	if anchor != "" {
		opts.Anchors = map[string]string{chain: anchor}
	}
	reps, err := db.VerifyChains(context.Background(), opts)
	require.NoError(t, err)
	require.Len(t, reps, 1)
	return reps[0]
}

func TestEventLogEncodingMatchesFileLog(t *testing.T) {
	db, _ := openDB(t, "node-a")
	pl := openLog(t, db, "node-a")
	path := filepath.Join(t.TempDir(), "events.jsonl")
	fl, err := eventlog.Open(path, eventlog.Options{NoSync: true})
	require.NoError(t, err)
	defer fl.Close()

	at := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("x", 3600))
	for batch := range 4 {
		var recs []eventlog.Record
		for i := range batch + 1 {
			r := record("w", batch*10+i)
			r.Time = at.Add(time.Duration(batch*10+i) * time.Second)
			recs = append(recs, r)
		}
		fromFile, err := fl.Append(recs...)
		require.NoError(t, err)
		fromPG, err := pl.Append(recs...)
		require.NoError(t, err)
		assert.Equal(t, fromFile, fromPG, "batch %d: the same records, seqs and hashes", batch)
	}
	fseq, fhash := fl.Last()
	pseq, phash := pl.Last()
	assert.Equal(t, uint64(10), pseq)
	assert.Equal(t, fseq, pseq)
	assert.Equal(t, fhash, phash)

	file, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(file), strings.Join(storedLines(t, db, "node-a"), "\n")+"\n", "lines byte-for-byte the file log's")

	var exported bytes.Buffer
	head, err := db.ExportChain(context.Background(), "node-a", &exported)
	require.NoError(t, err)
	assert.Equal(t, eventlog.Head{Seq: fseq, Hash: fhash}, head)
	assert.Equal(t, string(file), exported.String())

	rep := verifyOne(t, db, "node-a", fhash)
	require.NoError(t, rep.Err)
	assert.Equal(t, uint64(10), rep.Records)
	assert.Equal(t, uint64(10), rep.AnchorSeq)
	assert.Equal(t, head, rep.Head)
}

func TestEventLogConcurrentReplicas(t *testing.T) {
	for _, mode := range []string{"node", "global"} {
		t.Run(mode, func(t *testing.T) {
			db0, dsn := openDB(t, "node-0")
			dbs := []*postgres.DB{db0, replica(t, dsn, "node-1"), replica(t, dsn, "node-2")}
			const goroutines, calls = 8, 6
			type ack struct {
				writer string
				recs   []eventlog.Record
			}
			var mu sync.Mutex
			var acks []ack
			var wg sync.WaitGroup
			for i, db := range dbs {
				chain := db.NodeID()
				if mode == "global" {
					chain = postgres.GlobalChain
				}
				l := openLog(t, db, chain)
				for g := range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						w := fmt.Sprintf("r%d-g%d", i, g)
						for c := range calls {
							recs := make([]eventlog.Record, 1+c%3)
							for k := range recs {
								recs[k] = record(w, c*10+k)
							}
							out, err := l.Append(recs...)
							if !assert.NoError(t, err) {
								return
							}
							mu.Lock()
							acks = append(acks, ack{chain, out})
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()

			// Every acknowledged record is stored, at its seq, with its line's hash.
			stored := map[string][]string{}
			perChain := map[string]int{}
			for _, a := range acks {
				if _, ok := stored[a.writer]; !ok {
					stored[a.writer] = storedLines(t, db0, a.writer)
				}
				lines := stored[a.writer]
				for k, r := range a.recs {
					require.LessOrEqual(t, r.Seq, uint64(len(lines)))
					var got eventlog.Record
					require.NoError(t, json.Unmarshal([]byte(lines[r.Seq-1]), &got))
					assert.Equal(t, r.Hash, got.Hash)
					assert.Equal(t, r.RequestID, got.RequestID)
					if k > 0 {
						assert.Equal(t, a.recs[k-1].Seq+1, r.Seq, "one call's records are contiguous")
					}
				}
				perChain[a.writer] += len(a.recs)
			}
			for chain, n := range perChain {
				assert.Len(t, stored[chain], n, "chain %s holds exactly the acknowledged records", chain)
			}
			wantChains := 3
			if mode == "global" {
				wantChains = 1
			}
			reps, err := db0.VerifyChains(context.Background(), postgres.VerifyChainsOptions{})
			require.NoError(t, err)
			require.Len(t, reps, wantChains)
			for _, rep := range reps {
				require.NoError(t, rep.Err, "chain %s", rep.Chain)
				assert.Equal(t, uint64(perChain[rep.Chain]), rep.Records)
				assert.Equal(t, rep.LastSeq, rep.Head.Seq, "the head names the last record")
			}
		})
	}
}

// TestEventLogTampering: each edit of a stored chain is detected with its
// reason.
func TestEventLogTampering(t *testing.T) {
	tests := []struct {
		name   string
		sql    string
		reason string
		seq    uint64
		gaps   []postgres.Gap
	}{
		{name: "edited line", sql: `UPDATE gatehost_events SET line = replace(line, '"verdict":"accepted"', '"verdict":"rejected"') WHERE seq = 3`,
			reason: eventlog.ReasonBadHash, seq: 3},
		{name: "edited column", sql: `UPDATE gatehost_events SET verdict = 'rejected' WHERE seq = 3`, reason: postgres.ReasonColumnMismatch, seq: 3},
		{name: "edited time column", sql: `UPDATE gatehost_events SET time = time + interval '1 second' WHERE seq = 2`, reason: postgres.ReasonColumnMismatch, seq: 2},
		{name: "edited seq column", sql: `UPDATE gatehost_events SET seq = 100 WHERE seq = 6`, reason: postgres.ReasonColumnMismatch, seq: 6},
		{name: "deleted row", sql: `DELETE FROM gatehost_events WHERE seq IN (3, 4)`, reason: eventlog.ReasonSeqGap, seq: 5,
			gaps: []postgres.Gap{{From: 3, To: 4}}},
		{name: "deleted first row", sql: `DELETE FROM gatehost_events WHERE seq = 1`, reason: eventlog.ReasonSeqGap, seq: 2,
			gaps: []postgres.Gap{{From: 1, To: 1}}},
		{name: "truncated", sql: `DELETE FROM gatehost_events WHERE seq > 4`, reason: eventlog.ReasonTruncated, seq: 6},
		{name: "head hash changed", sql: `UPDATE gatehost_chain_heads SET hash = repeat('a', 64)`, reason: eventlog.ReasonHeadMismatch, seq: 6},
		{name: "head seq beyond", sql: `UPDATE gatehost_chain_heads SET seq = 7`, reason: eventlog.ReasonTruncated, seq: 7},
		{name: "head not a hash", sql: `UPDATE gatehost_chain_heads SET hash = 'x'`, reason: eventlog.ReasonBadHead},
		{name: "head deleted", sql: `DELETE FROM gatehost_chain_heads`, reason: eventlog.ReasonHeadMissing},
		{name: "two lines in one row", sql: `UPDATE gatehost_events SET line = line || chr(10) || (SELECT line FROM gatehost_events WHERE seq = 3) WHERE seq = 2`,
			reason: postgres.ReasonColumnMismatch},
		{name: "not canonical", sql: `UPDATE gatehost_events SET line = replace(line, '{"seq":4,', '{ "seq":4,') WHERE seq = 4`,
			reason: eventlog.ReasonNonCanonical, seq: 4},
		{name: "empty line", sql: `UPDATE gatehost_events SET line = '' WHERE seq = 6`, reason: eventlog.ReasonUnparsable, seq: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openDB(t, "a")
			l := openLog(t, db, "a")
			for i := range 3 {
				_, err := l.Append(record("w", 2*i), record("w", 2*i+1))
				require.NoError(t, err)
			}
			require.NoError(t, verifyOne(t, db, "a", "").Err)
			_, err := db.Pool().Exec(context.Background(), tt.sql)
			require.NoError(t, err)

			rep := verifyOne(t, db, "a", "")
			var ce *eventlog.ChainError
			require.ErrorAs(t, rep.Err, &ce)
			assert.Equal(t, tt.reason, ce.Reason, "%v", ce)
			if tt.seq != 0 {
				assert.Equal(t, tt.seq, ce.Seq)
			}
			assert.Equal(t, tt.gaps, rep.Gaps)
			assert.Contains(t, ce.Error(), "chain a")
		})
	}
}

// TestEventLogRefusesBrokenHead: a chain whose head is not on it is not
// appended to, neither at open nor later.
func TestEventLogRefusesBrokenHead(t *testing.T) {
	tests := []struct {
		name, sql, reason string
	}{
		{"head mismatch", `UPDATE gatehost_chain_heads SET hash = repeat('a', 64)`, eventlog.ReasonHeadMismatch},
		{"head beyond", `UPDATE gatehost_chain_heads SET seq = 9`, eventlog.ReasonTruncated},
		{"head deleted", `DELETE FROM gatehost_chain_heads`, eventlog.ReasonHeadMissing},
		{"bad head", `UPDATE gatehost_chain_heads SET hash = 'nope'`, eventlog.ReasonBadHead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openDB(t, "a")
			l := openLog(t, db, "a")
			_, err := l.Append(record("w", 1), record("w", 2))
			require.NoError(t, err)
			_, err = db.Pool().Exec(context.Background(), tt.sql)
			require.NoError(t, err)

			_, err = l.Append(record("w", 3))
			require.ErrorIs(t, err, postgres.ErrUnavailable)
			var ce *eventlog.ChainError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.reason, ce.Reason)
			seq, _ := l.Last()
			assert.Equal(t, uint64(2), seq)

			_, err = db.EventLog(context.Background(), "a")
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.reason, ce.Reason)
			assert.Len(t, storedLines(t, db, "a"), 2, "nothing appended")
		})
	}
}

func TestEventLogInvalidRecordsTouchNothing(t *testing.T) {
	db, _ := openDB(t, "a")
	l := openLog(t, db, "a")
	ok := record("w", 1)
	tests := []struct {
		name string
		recs []eventlog.Record
		want error
	}{
		{"empty kind", []eventlog.Record{ok, {Verdict: "x"}}, eventlog.ErrInvalidRecord},
		{"bad data", []eventlog.Record{{Kind: "k", Data: json.RawMessage("{")}}, eventlog.ErrInvalidRecord},
		{"NUL in run_id", []eventlog.Record{ok, {Kind: "k", RunID: "a\x00b"}}, eventlog.ErrInvalidRecord},
		{"NUL in kind", []eventlog.Record{{Kind: "k\x00"}}, eventlog.ErrInvalidRecord},
		{"too large", []eventlog.Record{{Kind: "k", Reason: strings.Repeat("x", eventlog.MaxRecordBytes)}}, eventlog.ErrRecordTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Append(tt.recs...)
			require.ErrorIs(t, err, tt.want)
			assert.NotErrorIs(t, err, postgres.ErrUnavailable)
		})
	}
	assert.Empty(t, storedLines(t, db, "a"))
	rep := verifyOne(t, db, "a", "")
	require.NoError(t, rep.Err)
	assert.Equal(t, eventlog.Head{Hash: eventlog.GenesisPrev}, rep.Head)

	out, err := l.Append()
	require.NoError(t, err)
	assert.Empty(t, out)
	require.NoError(t, l.Close())
	_, err = l.Append(ok)
	require.ErrorIs(t, err, eventlog.ErrClosed)
	require.NoError(t, l.Close())

	_, err = db.EventLog(context.Background(), "bad chain")
	require.ErrorIs(t, err, postgres.ErrConfig)
}

func TestEventLogVerifyChainsOptions(t *testing.T) {
	db, _ := openDB(t, "a")
	a, b := openLog(t, db, "a"), openLog(t, db, "b")
	_, err := a.Append(record("a", 1))
	require.NoError(t, err)
	out, err := b.Append(record("b", 1), record("b", 2))
	require.NoError(t, err)
	ctx := context.Background()

	reps, err := db.VerifyChains(ctx, postgres.VerifyChainsOptions{})
	require.NoError(t, err)
	require.Len(t, reps, 2)
	assert.Equal(t, "a", reps[0].Chain)
	assert.Equal(t, "b", reps[1].Chain)

	rep := verifyOne(t, db, "b", out[0].Hash)
	require.NoError(t, rep.Err)
	assert.Equal(t, uint64(1), rep.AnchorSeq)
	rep = verifyOne(t, db, "a", out[0].Hash)
	var ce *eventlog.ChainError
	require.ErrorAs(t, rep.Err, &ce)
	assert.Equal(t, eventlog.ReasonAnchorNotFound, ce.Reason, "an anchor of another chain is not on this one")

	rep = verifyOne(t, db, "missing", "")
	require.ErrorAs(t, rep.Err, &ce)
	assert.Equal(t, postgres.ReasonChainNotFound, ce.Reason)

	_, err = db.VerifyChains(ctx, postgres.VerifyChainsOptions{Chains: []string{"a"}, Anchors: map[string]string{"b": out[0].Hash}})
	require.Error(t, err, "an anchor for a chain not verified")
	_, err = db.VerifyChains(ctx, postgres.VerifyChainsOptions{Chains: []string{"a"}, Anchors: map[string]string{"a": "short"}})
	require.Error(t, err)
	assert.NotErrorAs(t, err, &ce, "a malformed anchor is a usage error")

	_, err = db.ExportChain(ctx, "missing", &bytes.Buffer{})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, postgres.ReasonChainNotFound, ce.Reason)
}

// TestEventLogLongChainStreams: a chain longer than one read batch
// verifies and exports whole.
func TestEventLogLongChainStreams(t *testing.T) {
	db, _ := openDB(t, "a")
	l := openLog(t, db, "a")
	const n = 2600
	recs := make([]eventlog.Record, 0, 100)
	for i := range n {
		recs = append(recs, record("w", i))
		if len(recs) == cap(recs) {
			_, err := l.Append(recs...)
			require.NoError(t, err)
			recs = recs[:0]
		}
	}
	rep := verifyOne(t, db, "a", "")
	require.NoError(t, rep.Err)
	assert.Equal(t, uint64(n), rep.Records)

	path := filepath.Join(t.TempDir(), "export.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	head, err := db.ExportChain(context.Background(), "a", f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, eventlog.WriteHead(path, head))
	frep, err := eventlog.Verify(path, eventlog.VerifyOptions{Anchor: head.Hash})
	require.NoError(t, err)
	assert.Equal(t, uint64(n), frep.Records)
	assert.Equal(t, uint64(n), frep.AnchorSeq)
}

// TestEventLogOutage: with the server down, appends fail as unavailable;
// once it is back they resume on the same chain, which verifies.
func TestEventLogOutage(t *testing.T) {
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: "a", OpTimeout: 2 * time.Second})
	require.NoError(t, err)
	defer db.Close()
	l := openLog(t, db, "a")
	_, err = l.Append(record("w", 1), record("w", 2))
	require.NoError(t, err)

	require.NoError(t, cluster.Stop())
	_, err = l.Append(record("w", 3))
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	seq, _ := l.Last()
	assert.Equal(t, uint64(2), seq, "a failed append does not move Last")

	require.NoError(t, cluster.Start())
	// pgxpool reconnects on demand; the first attempts may still meet
	// connections the restart closed.
	var out []eventlog.Record
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err = l.Append(record("w", 4))
		if err == nil || time.Now().After(deadline) {
			break
		}
		require.ErrorIs(t, err, postgres.ErrUnavailable)
	}
	require.NoError(t, err)
	assert.Equal(t, uint64(3), out[0].Seq, "the chain resumes where it was")
	rep := verifyOne(t, db, "a", "")
	require.NoError(t, rep.Err)
	assert.Equal(t, uint64(3), rep.Records)
}
