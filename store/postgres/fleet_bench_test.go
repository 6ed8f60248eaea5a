package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/store/postgres"
)

// fleetConcurrency is the number of decisions in flight at once in every
// case of BenchmarkFleetDecisions, whatever the number of replicas: the
// same offered load, spread round-robin over the replicas (3, 3 and 2
// with three). It equals a host's default max_concurrent_runs on 2 cores
// (4×GOMAXPROCS), so no run ever queues.
const fleetConcurrency = 8

// fleetTool is the tool every decision calls, and fleetCall a call of it.
const (
	fleetTool = "create_pull_request"
	fleetCall = `{"tool":"mcp.github:create_pull_request","parameters":{"owner":"octo-org","repo":"widgets","title":"t","head":"h","base":"main"}}`
)

// BenchmarkFleetDecisions measures whole decisions: host.Check of a
// tool_call pipeline whose one stage is the exec gate (capabilities
// catalog and session, confirm_effects []) over the GitHub MCP catalog,
// for a session granted the tool, so that every decision reads the
// session from the store and appends its records to the event log before
// it returns. Cases:
//
//   - file: session.FileStore and a file event log with fsync, the
//     single-process baseline;
//   - mem-nosync: session.MemStore and a file log without fsync, the
//     reference with no durability at all;
//   - pg-node-replicas=1: one host on a PostgreSQL store, its own chain;
//   - pg-node-replicas=3: three hosts, each with its own postgres.DB (its
//     own connection pool) and chain, on one database;
//   - pg-global-replicas=3: the same three appending to one global chain.
//
// Every case keeps fleetConcurrency decisions in flight in total. The
// replicas are in this process: they share the machine's cores with each
// other and with the PostgreSQL server (2 cores where the figures in
// docs/PERFORMANCE.md were taken), so three replicas cannot add CPU; what
// the cases compare is what the store costs and where replicas wait on
// each other. The database is the server $GATEHOST_BENCH_DSN names (a
// fresh database on it, dropped afterwards), which should be a durable
// one (fsync on); without it, the test cluster of internal/testing/pgtest, which
// runs with fsync off. It reports decisions/s and the latency percentiles
// of a decision (p50-ms, p99-ms).
func BenchmarkFleetDecisions(b *testing.B) {
	ctx := context.Background()
	wasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(b, err)
	b.Cleanup(testwasm.Cleanup)
	tools, err := catalog.Load("../../testdata/catalogs/github-mcp-server", catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	require.NoError(b, err)
	newHost := func(sessions session.Store, log eventlog.Appender) *host.Host {
		cat, err := catalog.NewStore(tools...)
		require.NoError(b, err)
		h, err := host.New(ctx, host.Config{
			Plugins:   map[string]host.PluginConfig{"exec": {Path: wasm}},
			Catalog:   cat,
			Sessions:  sessions,
			EventLog:  log,
			CacheDir:  testwasm.CacheDir(),
			WarmPools: true,
			Logger:    quiet,
			Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
				Plugin: "exec", Capabilities: []string{"catalog", "session"}, Timeout: time.Minute,
				Config: json.RawMessage(`{"confirm_effects":[]}`),
			}}}},
		})
		require.NoError(b, err)
		b.Cleanup(func() { _ = h.Close(context.Background()) })
		return h
	}
	fileLog := func(noSync bool) eventlog.Appender {
		l, err := eventlog.Open(filepath.Join(b.TempDir(), "events.jsonl"), eventlog.Options{NoSync: noSync, Logger: quiet})
		require.NoError(b, err)
		b.Cleanup(func() { _ = l.Close() }) // after the host's Close: cleanups run last first
		return l
	}

	b.Run("file", func(b *testing.B) {
		sessions := session.NewFileStore(filepath.Join(b.TempDir(), "sessions.json"))
		runDecisions(b, []*host.Host{newHost(sessions, fileLog(false))})
	})
	b.Run("mem-nosync", func(b *testing.B) {
		runDecisions(b, []*host.Host{newHost(session.NewMemStore(), fileLog(true))})
	})

	if os.Getenv(benchDSNEnv) == "" && !pgtest.Enabled() {
		return
	}
	for _, c := range []struct {
		mode     string
		replicas int
	}{{"node", 1}, {"node", 3}, {"global", 3}} {
		b.Run(fmt.Sprintf("pg-%s-replicas=%d", c.mode, c.replicas), func(b *testing.B) {
			var dsn string
			if server := os.Getenv(benchDSNEnv); server != "" {
				dsn = benchDatabase(b, server)
			} else {
				dsn = pgtest.Shared(b).NewDatabase(b)
			}
			var hosts []*host.Host
			for i := range c.replicas {
				db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: fmt.Sprintf("node-%d", i), Logger: quiet})
				require.NoError(b, err)
				b.Cleanup(db.Close)
				chain := db.NodeID()
				if c.mode == "global" {
					chain = postgres.GlobalChain
				}
				l, err := db.EventLog(ctx, chain)
				require.NoError(b, err)
				b.Cleanup(func() { _ = l.Close() })
				hosts = append(hosts, newHost(db.Sessions(), l))
			}
			runDecisions(b, hosts)
		})
	}
}

// runDecisions grants each of the fleetConcurrency workers a session of
// its own (through the first host: the store is shared), checks that a
// call is accepted on every host, and then makes b.N decisions, worker i
// on hosts[i%len(hosts)]. A decision that is not accepted fails b.
func runDecisions(b *testing.B, hosts []*host.Host) {
	ctx := context.Background()
	snap := hosts[0].Catalog().Snapshot()
	sess := make([]string, fleetConcurrency)
	for i := range sess {
		sess[i] = fmt.Sprintf("agent-%d", i)
		_, err := session.Activate(ctx, hosts[0].Sessions(), snap, sess[i], fleetTool)
		require.NoError(b, err)
	}
	decide := func(i int) error {
		d, err := hosts[i%len(hosts)].Check(ctx, "exec", []byte(fleetCall), host.RunOptions{Session: sess[i]})
		if err != nil {
			return err
		}
		if d.Verdict != abi.Accepted {
			return fmt.Errorf("decision %s: %s, want accepted: %+v", d.RunID, d.Verdict, d.Findings)
		}
		return nil
	}
	for i := range hosts {
		require.NoError(b, decide(i), "host %d", i)
	}
	runLoad(b, fleetConcurrency, "decisions/s", func(worker int, _ int64) error { return decide(worker) })
}

// runLoad makes b.N calls of op, spread over workers goroutines (op gets
// the worker's index and the call's number, 1 to b.N), and reports the
// latency percentiles of a call (p50-ms, p99-ms) and the throughput in
// calls per second under the name rate ("records/s"). A failing call
// fails b and stops its worker.
func runLoad(b *testing.B, workers int, rate string, op func(worker int, n int64) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range lat {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				t0 := time.Now()
				if err := op(i, n); err != nil {
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
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), rate)
}
