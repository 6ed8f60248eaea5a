package session_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
)

// A grant records the digest of the snapshot it was made on. The digest
// names content, so a grant made on one replica names the snapshot a
// second replica holds too, whatever their generations; validity is
// still the tool's pin alone.
func TestGrantPinsCatalogDigest(t *testing.T) {
	ctx := context.Background()
	tools := testCatalog(t).Snapshot().List()
	replicaA, err := catalog.NewStoreAt(5, tools...)
	require.NoError(t, err)
	reversed := slices.Clone(tools)
	slices.Reverse(reversed)
	replicaB, err := catalog.NewStore(reversed...)
	require.NoError(t, err)
	snapA, snapB := replicaA.Snapshot(), replicaB.Snapshot()
	require.NotEqual(t, snapA.Generation(), snapB.Generation())
	require.Equal(t, snapA.Digest(), snapB.Digest())

	path := filepath.Join(t.TempDir(), "sessions.json")
	set, err := session.Activate(ctx, session.NewFileStore(path), snapA, "s", "files_read")
	require.NoError(t, err)
	g := set.Activated["mcp.files:read"].Grant
	assert.Equal(t, uint64(5), g.CatalogGeneration)
	assert.Equal(t, snapA.Digest(), g.CatalogDigest)

	// Persisted, and valid against the other replica's snapshot.
	set, err = session.NewFileStore(path).Load(ctx, "s")
	require.NoError(t, err)
	act := set.Activated["mcp.files:read"]
	assert.Equal(t, g, act.Grant)
	status, drift := act.Pin().Status(snapB, "mcp.files:read")
	assert.Equal(t, "ok", status)
	assert.Empty(t, drift)

	// An unrelated tool changes the digest and revokes nothing; Rebuild
	// carries the grant forward to the new snapshot.
	next, err := replicaB.Update(func(b *catalog.Builder) error {
		return b.Add(catalog.Tool{ID: "builtin:extra", Name: "extra", Provenance: catalog.ProvenanceBuiltin})
	})
	require.NoError(t, err)
	require.NotEqual(t, snapA.Digest(), next.Digest())
	set, rep, err := session.Rebuild(ctx, session.NewFileStore(path), next, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp.files:read"}, rep.Kept)
	g = set.Activated["mcp.files:read"].Grant
	assert.Equal(t, next.Generation(), g.CatalogGeneration)
	assert.Equal(t, next.Digest(), g.CatalogDigest)
}
