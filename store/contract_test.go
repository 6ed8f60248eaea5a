package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
	"github.com/gatehost/gatehost/store"
	"github.com/gatehost/gatehost/store/file"
	"github.com/gatehost/gatehost/store/postgres"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// backend opens stores of one kind on one state: open(t, "a") is this
// process, with the event log; open(t, "b") another process (files) or
// replica (PostgreSQL) on the same state.
type backend struct {
	name   string
	shared bool
	open   func(t *testing.T) func(t *testing.T, replica string) store.Store
}

func backends() []backend {
	return []backend{
		{name: "file", shared: false, open: func(t *testing.T) func(*testing.T, string) store.Store {
			dir := t.TempDir()
			return func(t *testing.T, replica string) store.Store {
				o := file.Options{Sessions: session.NewFileStore(filepath.Join(dir, "sessions.json")),
					BaselinePath: filepath.Join(dir, "mcp-tools.lock.json"), CounterRetain: 24 * time.Hour}
				if replica == "a" {
					o.EventLogPath = filepath.Join(dir, "events.jsonl")
				}
				st, err := file.Open(o)
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				return st
			}
		}},
		{name: "postgres", shared: true, open: func(t *testing.T) func(*testing.T, string) store.Store {
			dsn := pgtest.Shared(t).NewDatabase(t)
			return func(t *testing.T, replica string) store.Store {
				ctx := context.Background()
				db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, NodeID: replica})
				require.NoError(t, err)
				st, err := postgres.NewStore(ctx, db, replica)
				if err != nil {
					db.Close()
				}
				require.NoError(t, err)
				t.Cleanup(func() { _ = st.Close() })
				return st
			}
		}},
	}
}

func snapshot(t *testing.T) *catalog.Snapshot {
	t.Helper()
	tools, err := catalog.Load("../testdata/exec/catalog.json", catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s.Snapshot()
}

// TestContract runs the same checks against every backend: what the front
// ends and the composition root rely on, whatever the store.
func TestContract(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Run("shared", func(t *testing.T) {
				open := b.open(t)
				assert.Equal(t, b.shared, open(t, "a").Shared())
			})

			t.Run("event log chains and outlives the store", func(t *testing.T) {
				open := b.open(t)
				st := open(t, "a")
				log := st.EventLog()
				require.NotNil(t, log)
				seq, hash := log.Last()
				assert.Equal(t, uint64(0), seq)
				assert.Equal(t, eventlog.GenesisPrev, hash)
				out, err := log.Append(
					eventlog.Record{Kind: eventlog.KindDecision, RunID: "0123456789abcdef0123456789abcdef", Pipeline: "p"},
					eventlog.Record{Kind: eventlog.KindDecision, RunID: "fedcba9876543210fedcba9876543210", Pipeline: "p"})
				require.NoError(t, err)
				require.Len(t, out, 2)
				assert.Equal(t, []uint64{1, 2}, []uint64{out[0].Seq, out[1].Seq})
				assert.Equal(t, eventlog.GenesisPrev, out[0].Prev)
				assert.Equal(t, out[0].Hash, out[1].Prev, "the second record chains onto the first")
				seq, hash = log.Last()
				assert.Equal(t, uint64(2), seq)
				assert.Equal(t, out[1].Hash, hash)

				require.NoError(t, st.Close())
				require.NoError(t, st.Close(), "closing twice is harmless")
				_, err = log.Append(eventlog.Record{Kind: eventlog.KindDecision, RunID: "0123456789abcdef0123456789abcdef", Pipeline: "p"})
				assert.ErrorIs(t, err, eventlog.ErrClosed)

				seq, hash = open(t, "a").EventLog().Last()
				assert.Equal(t, uint64(2), seq, "reopened, the log goes on from its last record")
				assert.Equal(t, out[1].Hash, hash)
			})

			t.Run("counts accepted calls, shared when the store is", func(t *testing.T) {
				open := b.open(t)
				a, other := open(t, "a"), open(t, "b")
				ca, ok := a.(store.Counting)
				require.True(t, ok, "every backend counts")
				cb := other.(store.Counting)
				t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
				alice := counter.PrincipalKey("https://issuer", "alice")
				for i, c := range []counter.Call{
					{Session: "s1", Principal: alice, Tool: "mcp.mail:send_email", At: t0.Add(-2 * time.Hour)},
					{Session: "s1", Principal: alice, Tool: "mcp.mail:send_email", At: t0.Add(-30 * time.Minute)},
					{Session: "s1", Tool: "mcp.mail:read_inbox", At: t0.Add(-time.Minute)},
					{Session: "s2", Principal: alice, Tool: "mcp.mail:send_email", At: t0.Add(-time.Minute)},
					{Principal: alice, Tool: "mcp.mail:send_email", At: t0},
				} {
					require.NoError(t, ca.Counters().Add(ctx, c), "call %d", i)
				}
				q := counter.Query{Session: "s1", Principal: alice, Windows: []time.Duration{time.Hour, 24 * time.Hour}, Now: t0}
				want := counter.Counts{
					Session: map[string]int64{"mcp.mail:send_email": 2, "mcp.mail:read_inbox": 1},
					Window: map[time.Duration]map[string]int64{
						time.Hour:      {"mcp.mail:send_email": 1, "mcp.mail:read_inbox": 1},
						24 * time.Hour: {"mcp.mail:send_email": 2, "mcp.mail:read_inbox": 1},
					},
					Principal: map[time.Duration]map[string]int64{
						time.Hour:      {"mcp.mail:send_email": 3},
						24 * time.Hour: {"mcp.mail:send_email": 4},
					},
				}
				got, err := ca.Counters().Counts(ctx, q)
				require.NoError(t, err)
				assert.Equal(t, want, got)
				got, err = cb.Counters().Counts(ctx, q)
				require.NoError(t, err)
				if b.shared {
					assert.Equal(t, want, got, "another replica reads the same counts")
				} else {
					assert.Empty(t, got.Session, "another process has its own counts")
				}
				got, err = ca.Counters().Counts(ctx, counter.Query{Session: "nobody", Windows: []time.Duration{time.Hour}, Now: t0})
				require.NoError(t, err)
				assert.Empty(t, got.Session)
				assert.Empty(t, got.Window[time.Hour])
			})

			t.Run("sessions are seen by the other process", func(t *testing.T) {
				open := b.open(t)
				a, other := open(t, "a"), open(t, "b")
				require.NotNil(t, a.Sessions())
				snap := snapshot(t)
				tool := snap.List()[0].ID
				created, err := session.Create(ctx, a.Sessions(), snap, "dev", tool)
				require.NoError(t, err)
				got, err := other.Sessions().Load(ctx, "dev")
				require.NoError(t, err)
				require.NotNil(t, got)
				assert.Equal(t, created, got)
				missing, err := other.Sessions().Load(ctx, "nobody")
				require.NoError(t, err)
				assert.Nil(t, missing, "an unknown session is nil, not an error")
			})

			t.Run("catalog publishing needs a shared store", func(t *testing.T) {
				open := b.open(t)
				a, other := open(t, "a"), open(t, "b")
				snap := snapshot(t)
				digest, err := a.PublishCatalog(ctx, snap)
				if !b.shared {
					assert.ErrorIs(t, err, store.ErrNotShared)
					_, _, err = other.PublishedCatalog(ctx)
					assert.ErrorIs(t, err, store.ErrNotShared)
					done := make(chan struct{})
					go func() { other.WatchCatalog(ctx, time.Millisecond, func(string, []catalog.Tool) {}); close(done) }()
					requireDone(t, done, "nothing to watch: WatchCatalog returns at once")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, snap.Digest(), digest)
				gotDigest, tools, err := other.PublishedCatalog(ctx)
				require.NoError(t, err)
				assert.Equal(t, digest, gotDigest)
				assert.Equal(t, snap.List(), tools)

				wctx, cancel := context.WithCancel(ctx)
				got := make(chan string, 1)
				done := make(chan struct{})
				go func() {
					other.WatchCatalog(wctx, 10*time.Millisecond, func(d string, _ []catalog.Tool) {
						select {
						case got <- d:
						default:
						}
					})
					close(done)
				}()
				select {
				case d := <-got:
					assert.Equal(t, digest, d)
				case <-time.After(30 * time.Second):
					t.Fatal("the published catalog was not delivered")
				}
				cancel()
				requireDone(t, done, "WatchCatalog returns when its context is done")
			})

			t.Run("health", func(t *testing.T) {
				open := b.open(t)
				st := open(t, "a")
				ok, err := st.Healthy()
				assert.True(t, ok)
				assert.NoError(t, err)
				mctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { st.Monitor(mctx, 5*time.Millisecond, 20*time.Millisecond); close(done) }()
				time.Sleep(30 * time.Millisecond)
				cancel()
				requireDone(t, done, "Monitor returns when its context is done")
				ok, _ = st.Healthy()
				assert.True(t, ok, "probed and answering")
			})

			t.Run("baseline is seen by the other process", func(t *testing.T) {
				open := b.open(t)
				a, other := open(t, "a"), open(t, "b")
				ba, err := a.Baseline()
				require.NoError(t, err)
				closeBaseline(t, ba)
				e := baselinetest.Entry(t, "notes", "write_note", "writes a note", "alice")
				_, err = ba.Approve(ctx, []baseline.Entry{e})
				require.NoError(t, err)
				bo, err := other.Baseline()
				require.NoError(t, err)
				closeBaseline(t, bo)
				set, err := bo.Load(ctx)
				require.NoError(t, err)
				got, ok := set.Get(e.Key())
				require.True(t, ok, "approved on one, trusted on the other")
				assert.Equal(t, e.Digest, got.Digest)
			})

			t.Run("approvals need a shared store", func(t *testing.T) {
				open := b.open(t)
				a, other := open(t, "a"), open(t, "b")
				aa, err := a.Approvals()
				if !b.shared {
					assert.ErrorIs(t, err, store.ErrNotShared)
					assert.Nil(t, aa)
					return
				}
				require.NoError(t, err)
				ap := approval.Approval{ID: approval.NewID(), Binding: approvaltest.Call, ExpiresAt: approvaltest.Epoch.Add(time.Minute)}
				require.NoError(t, aa.Add(ctx, ap, approvaltest.Epoch, 10))
				ao, err := other.Approvals()
				require.NoError(t, err)
				got, ok, err := ao.Take(ctx, ap.ID, approvaltest.Epoch)
				require.NoError(t, err)
				require.True(t, ok, "minted on one, presented to the other")
				assert.Equal(t, ap.Binding, got.Binding)
				assert.False(t, got.Used)
				again, ok, err := aa.Take(ctx, ap.ID, approvaltest.Epoch)
				require.NoError(t, err)
				require.True(t, ok)
				assert.True(t, again.Used, "taken on the other: used here too")
			})
		})
	}
}

func requireDone(t *testing.T, done <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}

// closeBaseline closes b at the end of the test when it holds a file.
func closeBaseline(t *testing.T, b baseline.Store) {
	if c, ok := b.(interface{ Close() error }); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
}
