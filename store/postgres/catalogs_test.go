package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// openReplica opens a store as node on the database dsn names; a nil
// logger is slog.Default().
func openReplica(t *testing.T, dsn, node string, logger *slog.Logger) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: node, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

// replicas opens one store per node on one new database of cluster c.
func replicas(t *testing.T, c *pgtest.Cluster, nodes ...string) []*postgres.DB {
	t.Helper()
	dsn := c.NewDatabase(t)
	dbs := make([]*postgres.DB, len(nodes))
	for i, node := range nodes {
		dbs[i] = openReplica(t, dsn, node, nil)
	}
	return dbs
}

func githubTools(t *testing.T) []catalog.Tool {
	t.Helper()
	tools, err := catalog.Load("../../testdata/catalogs/github-mcp-server", catalog.ImportOptions{Server: "github"})
	require.NoError(t, err)
	return tools
}

func snapshotOf(t *testing.T, tools ...catalog.Tool) *catalog.Snapshot {
	t.Helper()
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s.Snapshot()
}

// count returns the rows of a table.
func count(t *testing.T, db *postgres.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func TestPublishCatalogOnOneReplicaPullOnAnother(t *testing.T) {
	dbs := replicas(t, pgtest.Shared(t), "a", "b")
	a, b := dbs[0], dbs[1]
	ctx := context.Background()

	_, _, err := b.PublishedCatalog(ctx)
	require.ErrorIs(t, err, postgres.ErrNoCatalog)
	assert.NotErrorIs(t, err, postgres.ErrUnavailable)
	ok, _ := b.Healthy()
	assert.True(t, ok, "an empty head is an answer, not an outage")

	tools := githubTools(t)
	snap := snapshotOf(t, tools...)
	digest, err := a.PublishCatalog(ctx, snap)
	require.NoError(t, err)
	assert.Equal(t, snap.Digest(), digest)

	got, pulled, err := b.PublishedCatalog(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest, got)
	replica := snapshotOf(t, pulled...)
	assert.Equal(t, digest, replica.Digest(), "the replica's catalog has the publisher's name")
	assert.Equal(t, snap.List(), replica.List(), "every record, schemas byte for byte")

	var tools64 int
	var by string
	require.NoError(t, a.Pool().QueryRow(ctx, "SELECT tools, published_by FROM gatehost_catalogs WHERE digest = $1", digest).Scan(&tools64, &by))
	assert.Equal(t, len(tools), tools64)
	assert.Equal(t, "a", by)
}

// Republishing the head stores nothing and records nothing; every move of
// the head, back to an earlier catalog included, is one publication.
func TestPublishCatalogIsIdempotent(t *testing.T) {
	dbs := replicas(t, pgtest.Shared(t), "a", "b")
	a, b := dbs[0], dbs[1]
	ctx := context.Background()
	tools := githubTools(t)
	first := snapshotOf(t, tools...)
	second := snapshotOf(t, tools[1:]...)

	_, err := a.PublishCatalog(ctx, first)
	require.NoError(t, err)
	// The same content from another replica, built in another order.
	reversed := slices.Clone(tools)
	slices.Reverse(reversed)
	d, err := b.PublishCatalog(ctx, snapshotOf(t, reversed...))
	require.NoError(t, err)
	assert.Equal(t, first.Digest(), d)
	assert.Equal(t, 1, count(t, a, "gatehost_catalogs"))
	assert.Equal(t, 1, count(t, a, "gatehost_catalog_publications"), "republishing the head is a no-op")

	_, err = b.PublishCatalog(ctx, second)
	require.NoError(t, err)
	_, err = a.PublishCatalog(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, 2, count(t, a, "gatehost_catalogs"), "a catalog is stored once")
	rows, err := a.Pool().Query(ctx, "SELECT digest, coalesce(previous, ''), published_by FROM gatehost_catalog_publications ORDER BY seq")
	require.NoError(t, err)
	type pub struct{ digest, previous, by string }
	var pubs []pub
	for rows.Next() {
		var p pub
		require.NoError(t, rows.Scan(&p.digest, &p.previous, &p.by))
		pubs = append(pubs, p)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []pub{
		{first.Digest(), "", "a"},
		{second.Digest(), first.Digest(), "b"},
		{first.Digest(), second.Digest(), "a"},
	}, pubs)
	got, _, err := b.PublishedCatalog(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.Digest(), got)

	// The empty catalog is a catalog like any other.
	empty, err := a.PublishCatalog(ctx, snapshotOf(t))
	require.NoError(t, err)
	got, pulled, err := b.PublishedCatalog(ctx)
	require.NoError(t, err)
	assert.Equal(t, empty, got)
	assert.Empty(t, pulled)
}

func TestPublishedCatalogRefusesTamperedContent(t *testing.T) {
	ctx := context.Background()
	tools := githubTools(t)[:3]
	snap := snapshotOf(t, tools...)
	good, err := snap.MarshalNative()
	require.NoError(t, err)
	other, err := snapshotOf(t, tools[:2]...).MarshalNative()
	require.NoError(t, err)
	mutate := func(f func(tool map[string]any)) []byte {
		var d map[string][]map[string]any
		require.NoError(t, json.Unmarshal(good, &d))
		f(d["tools"][0])
		b, err := json.Marshal(d)
		require.NoError(t, err)
		return b
	}
	big := []byte(strings.Repeat(" ", catalog.MaxFileBytes) + string(good))
	tests := map[string][]byte{
		"description changed": mutate(func(tl map[string]any) { tl["description"] = "do something else" }),
		"effect loosened":     mutate(func(tl map[string]any) { tl["effect"] = "read_only"; delete(tl, "hints"); delete(tl, "policy_digest") }),
		"schema changed": mutate(func(tl map[string]any) {
			tl["input_schema"] = map[string]any{"type": "object"}
			delete(tl, "schema_digest")
		}),
		"policy digest forged": mutate(func(tl map[string]any) { tl["policy_digest"] = "00" }),
		"another catalog":      other,
		"not json":             []byte(`{"tools":[`),
		"not native":           []byte(`[{"type":"function","function":{"name":"x"}}]`),
		"empty":                []byte(`{"tools":[]}`),
		"too large":            big,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			db := replicas(t, pgtest.Shared(t), "a")[0]
			_, err := db.PublishCatalog(ctx, snap)
			require.NoError(t, err)
			_, err = db.Pool().Exec(ctx, "UPDATE gatehost_catalogs SET content = $1", content)
			require.NoError(t, err)
			digest, pulled, err := db.PublishedCatalog(ctx)
			require.ErrorIs(t, err, postgres.ErrCatalogIntegrity)
			assert.NotErrorIs(t, err, postgres.ErrUnavailable)
			assert.Empty(t, digest)
			assert.Nil(t, pulled, "never a catalog")
		})
	}
}

func TestPublishCatalogRefusesOversizedCatalog(t *testing.T) {
	db := replicas(t, pgtest.Shared(t), "a")[0]
	huge := catalog.Tool{ID: "builtin:huge", Name: "huge",
		InputSchema: json.RawMessage(`{"description":"` + strings.Repeat("x", catalog.MaxFileBytes) + `"}`)}
	_, err := db.PublishCatalog(context.Background(), snapshotOf(t, huge))
	require.ErrorIs(t, err, catalog.ErrTooLarge)
	assert.Equal(t, 0, count(t, db, "gatehost_catalogs"))
}

// delivery is one call of WatchCatalog's fn.
type delivery struct {
	digest string
	tools  int
}

func watch(t *testing.T, db *postgres.DB) (<-chan delivery, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan delivery, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.WatchCatalog(ctx, 10*time.Millisecond, func(digest string, tools []catalog.Tool) {
			// What fn gets is a catalog with the digest it is told.
			if s, err := catalog.NewStore(tools...); err != nil || s.Snapshot().Digest() != digest {
				t.Errorf("delivered %s with tools of another digest (%v)", digest, err)
			}
			got <- delivery{digest, len(tools)}
		})
	}()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return got, stop
}

// next waits for the next delivery; the deadline only guards a hang.
func next(t *testing.T, got <-chan delivery) delivery {
	t.Helper()
	select {
	case d := <-got:
		return d
	case <-time.After(2 * time.Minute):
		t.Fatal("no catalog delivered")
		return delivery{}
	}
}

// syncBuffer is a log destination safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWatchCatalogDeliversEachNewHeadOnce(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	var logs syncBuffer
	pub := openReplica(t, dsn, "publisher", nil)
	rep := openReplica(t, dsn, "replica", slog.New(slog.NewTextHandler(&logs, nil)))
	tools := githubTools(t)
	got, stop := watch(t, rep)

	first := snapshotOf(t, tools[:5]...)
	_, err := pub.PublishCatalog(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, delivery{first.Digest(), 5}, next(t, got))

	second := snapshotOf(t, tools[:7]...)
	_, err = pub.PublishCatalog(ctx, second)
	require.NoError(t, err)
	_, err = pub.PublishCatalog(ctx, second)
	require.NoError(t, err)
	assert.Equal(t, delivery{second.Digest(), 7}, next(t, got))

	// A head whose content fails verification is never delivered; the
	// next good one is. The forged publication is made in one
	// transaction, so the watcher never sees its catalog intact.
	bad := snapshotOf(t, tools[:9]...)
	tx, err := pub.Pool().Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO gatehost_catalogs (digest, content, tools, published_by) VALUES ($1, $2, 9, 'forger')", bad.Digest(), []byte(`{"tools":[]}`))
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `WITH p AS (INSERT INTO gatehost_catalog_publications (digest, published_by) VALUES ($1, 'forger') RETURNING seq)
		UPDATE gatehost_catalog_head SET digest = $1, publication = (SELECT seq FROM p)`, bad.Digest())
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "fails verification") }, 2*time.Minute, 10*time.Millisecond,
		"the watcher refuses the forged head")
	assert.Contains(t, logs.String(), bad.Digest())
	third := snapshotOf(t, tools[:3]...)
	_, err = pub.PublishCatalog(ctx, third)
	require.NoError(t, err)
	assert.Equal(t, delivery{third.Digest(), 3}, next(t, got), "the tampered catalog was skipped")

	// Back to an earlier catalog: delivered again.
	_, err = pub.PublishCatalog(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, delivery{first.Digest(), 5}, next(t, got))

	stop()
	select {
	case d := <-got:
		t.Fatalf("unexpected delivery %v", d)
	default:
	}
}

// An outage is ErrUnavailable for publisher and reader alike, and the
// watcher carries on when the database is back.
func TestCatalogOutage(t *testing.T) {
	c := pgtest.Start(t)
	dbs := replicas(t, c, "publisher", "replica")
	pub, rep := dbs[0], dbs[1]
	ctx := context.Background()
	tools := githubTools(t)
	first := snapshotOf(t, tools[:2]...)
	_, err := pub.PublishCatalog(ctx, first)
	require.NoError(t, err)
	got, _ := watch(t, rep)
	assert.Equal(t, delivery{first.Digest(), 2}, next(t, got))

	require.NoError(t, c.Stop())
	_, err = pub.PublishCatalog(ctx, snapshotOf(t, tools[:4]...))
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	_, pulled, err := rep.PublishedCatalog(ctx)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	assert.Nil(t, pulled)
	ok, _ := rep.Healthy()
	assert.False(t, ok)

	require.NoError(t, c.Start())
	second := snapshotOf(t, tools[:6]...)
	require.Eventually(t, func() bool {
		_, err := pub.PublishCatalog(ctx, second)
		return err == nil
	}, 2*time.Minute, 50*time.Millisecond, "the pool reconnects")
	assert.Equal(t, delivery{second.Digest(), 6}, next(t, got))
}
