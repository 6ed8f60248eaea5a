package pgstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/pgstore"
	"github.com/gatehost/gatehost/internal/pgtest"
)

var quiet = slog.New(slog.DiscardHandler)

// benchConcurrency is the appending goroutines per replica.
const benchConcurrency = 8

// BenchmarkEventLogAppend measures one-record appends from 8 goroutines per
// replica: the file log (the baseline, with and without fsync) and the
// PostgreSQL log with 1 and 3 replicas (3 DB handles) in node mode (a
// chain each) and global mode (one chain). The PostgreSQL server is a
// cluster of the benchmark's own with fsync and full_page_writes on, so
// that a commit is as durable as the file log's fsync. It reports the
// latency percentiles of Append (p50-ms, p99-ms) and the throughput
// (records/s).
func BenchmarkEventLogAppend(b *testing.B) {
	b.Run("file", func(b *testing.B) { benchFile(b, false) })
	b.Run("file-nosync", func(b *testing.B) { benchFile(b, true) })

	pgtest.Skip(b)
	cluster := pgtest.Start(b)
	admin, err := pgstore.Open(context.Background(), pgstore.Options{DSN: cluster.DSN("postgres"), NodeID: "bench", Logger: quiet})
	require.NoError(b, err)
	for _, q := range []string{"ALTER SYSTEM SET fsync = on", "ALTER SYSTEM SET full_page_writes = on", "SELECT pg_reload_conf()"} {
		_, err := admin.Pool().Exec(context.Background(), q)
		require.NoError(b, err)
	}
	// The reload is asynchronous: wait (bounded) until a new session sees it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var fsync string
		require.NoError(b, admin.Pool().QueryRow(context.Background(), "SHOW fsync").Scan(&fsync))
		if fsync == "on" {
			break
		}
		require.True(b, time.Now().Before(deadline), "fsync still off")
		time.Sleep(50 * time.Millisecond)
	}
	admin.Close()

	for _, c := range []struct {
		mode     string
		replicas int
	}{{"node", 1}, {"node", 3}, {"global", 3}} {
		b.Run(fmt.Sprintf("pg-%s-replicas=%d", c.mode, c.replicas), func(b *testing.B) {
			dsn := cluster.NewDatabase(b)
			var logs []eventlog.Appender
			for i := range c.replicas {
				db, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, NodeID: fmt.Sprintf("node-%d", i), MaxConns: 4, Logger: quiet})
				require.NoError(b, err)
				defer db.Close()
				chain := db.NodeID()
				if c.mode == "global" {
					chain = pgstore.GlobalChain
				}
				l, err := db.EventLog(context.Background(), chain)
				require.NoError(b, err)
				defer l.Close()
				logs = append(logs, l)
			}
			runAppenders(b, logs)
		})
	}
}

func benchFile(b *testing.B, noSync bool) {
	l, err := eventlog.Open(filepath.Join(b.TempDir(), "events.jsonl"), eventlog.Options{NoSync: noSync})
	require.NoError(b, err)
	defer l.Close()
	runAppenders(b, []eventlog.Appender{l})
}

// runAppenders makes b.N one-record appends, spread over benchConcurrency
// goroutines per log, and reports latency percentiles and throughput.
func runAppenders(b *testing.B, logs []eventlog.Appender) {
	var next atomic.Int64
	lat := make([][]time.Duration, len(logs)*benchConcurrency)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range lat {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := logs[i%len(logs)]
			w := fmt.Sprintf("w%d", i)
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				t0 := time.Now()
				if _, err := l.Append(record(w, int(n))); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "records/s")
}
