package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

var quiet = slog.New(slog.DiscardHandler)

// benchConcurrency is the appending goroutines per replica.
const benchConcurrency = 8

// BenchmarkEventLogAppend measures one-record appends from 8 goroutines per
// replica: the file log (the baseline, with and without fsync) and the
// PostgreSQL log with 1 and 3 replicas (3 DB handles) in node mode (a
// chain each) and global mode (one chain). Set $GATEHOST_BENCH_DSN to a
// durable server (fsync on) to compare like with like: the test clusters
// run with fsync off. It reports the
// latency percentiles of Append (p50-ms, p99-ms) and the throughput
// (records/s).
func BenchmarkEventLogAppend(b *testing.B) {
	b.Run("file", func(b *testing.B) { benchFile(b, false) })
	b.Run("file-nosync", func(b *testing.B) { benchFile(b, true) })

	// A fresh database per run, on the server $GATEHOST_BENCH_DSN names
	// (one that may create databases), or else on a cluster of the
	// benchmark's own, which runs with fsync off (see internal/testing/pgtest).
	var newDatabase func(b *testing.B) string
	if dsn := os.Getenv(benchDSNEnv); dsn != "" {
		newDatabase = func(b *testing.B) string { return benchDatabase(b, dsn) }
	} else {
		pgtest.Skip(b)
		cluster := pgtest.Start(b)
		newDatabase = func(b *testing.B) string { return cluster.NewDatabase(b) }
	}
	for _, c := range []struct {
		mode     string
		replicas int
	}{{"node", 1}, {"node", 3}, {"global", 3}} {
		b.Run(fmt.Sprintf("pg-%s-replicas=%d", c.mode, c.replicas), func(b *testing.B) {
			dsn := newDatabase(b)
			var logs []eventlog.Appender
			for i := range c.replicas {
				db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: fmt.Sprintf("node-%d", i), MaxConns: 4, Logger: quiet})
				require.NoError(b, err)
				defer db.Close()
				chain := db.NodeID()
				if c.mode == "global" {
					chain = postgres.GlobalChain
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

// benchDSNEnv names a server to benchmark against instead of a test cluster.
const benchDSNEnv = "GATEHOST_BENCH_DSN"

// benchDatabase creates a database for b on the server of dsn and drops it
// when b ends.
func benchDatabase(b *testing.B, dsn string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(b, err)
	defer conn.Close(ctx)
	name := fmt.Sprintf("gatehost_bench_%d_%d", os.Getpid(), time.Now().UnixNano())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(b, err)
	b.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	})
	if u, err := url.Parse(dsn); err == nil && strings.HasPrefix(u.Scheme, "postgres") {
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name // key=value form: the last dbname wins
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
	writers := make([]string, len(logs)*benchConcurrency)
	for i := range writers {
		writers[i] = fmt.Sprintf("w%d", i)
	}
	runLoad(b, len(writers), "records/s", func(i int, n int64) error {
		_, err := logs[i%len(logs)].Append(record(writers[i], int(n)))
		return err
	})
}
