package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
)

func testCatalog(t *testing.T) *catalog.Store {
	t.Helper()
	tools, err := catalog.Load("../../testdata/exec/catalog.json", catalog.ImportOptions{Format: catalog.FormatNative})
	require.NoError(t, err)
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s
}

func code(err error) string {
	var e *session.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func stores(t *testing.T) map[string]session.Store {
	return map[string]session.Store{
		"mem":  session.NewMemStore(),
		"file": session.NewFileStore(filepath.Join(t.TempDir(), "sessions.json")),
	}
}

func TestOperations(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			cat := testCatalog(t)
			snap := cat.Snapshot()

			set, err := session.Create(ctx, st, snap, "s1", "read_file")
			require.NoError(t, err)
			assert.Equal(t, uint64(0), set.Version)
			assert.Contains(t, set.Core, "builtin:read_file")

			_, err = session.Create(ctx, st, snap, "s1")
			assert.ErrorIs(t, err, session.ErrSessionExists)

			// activate_many: sorted, one bump, all or nothing.
			set, err = session.ActivateMany(ctx, st, snap, "s1", []string{"files_write", "echo"})
			require.NoError(t, err)
			assert.Equal(t, uint64(1), set.Version)
			g := set.Activated["mcp.files:write"].Grant
			w, _ := snap.Get("mcp.files:write")
			assert.Equal(t, session.Grant{Session: "s1", Tool: "mcp.files:write", CatalogGeneration: 0, CatalogDigest: snap.Digest(), SchemaDigest: w.SchemaDigest, PolicyDigest: w.PolicyDigest}, g)
			assert.Len(t, g.PolicyDigest, 64)
			assert.Equal(t, "mcp_config{files}", set.Activated["mcp.files:write"].Provenance)
			assert.Contains(t, set.Activated, "ext.srv:echo_tool")

			for _, tc := range []struct {
				names []string
				want  error
				code  string
			}{
				{[]string{"files_read", "Files_Read"}, session.ErrUnknownTool, "unknown_tool"},
				{[]string{"files_read", "stray"}, session.ErrUntrustedSource, "untrusted_source"},
				{[]string{"files_read", "mcp.files:read"}, session.ErrDuplicateTool, "duplicate_tool"},
				{[]string{"files_read", "echo"}, session.ErrAlreadyActive, "already_active"},
				{[]string{"read_file"}, session.ErrAlreadyActive, "already_active"},
			} {
				_, err := session.ActivateMany(ctx, st, snap, "s1", tc.names)
				assert.ErrorIs(t, err, tc.want, tc.names)
				assert.Equal(t, tc.code, code(err))
				cur, _ := st.Load(ctx, "s1")
				assert.Equal(t, uint64(1), cur.Version, "a failed activate_many changes nothing")
				assert.NotContains(t, cur.Activated, "mcp.files:read")
			}

			_, err = session.Revoke(ctx, st, snap, "s1", "files_read")
			assert.ErrorIs(t, err, session.ErrNotActivated)
			_, err = session.Revoke(ctx, st, snap, "s1", "read_file")
			assert.ErrorIs(t, err, session.ErrCoreTool)
			_, err = session.Revoke(ctx, st, snap, "nobody", "files_read")
			assert.ErrorIs(t, err, session.ErrUnknownSession)
			set, err = session.Revoke(ctx, st, nil, "s1", "ext.srv:echo_tool")
			require.NoError(t, err)
			assert.Equal(t, uint64(2), set.Version)
			assert.NotContains(t, set.Activated, "ext.srv:echo_tool")

			_, err = session.Activate(ctx, st, snap, "bad id", "files_read")
			assert.ErrorIs(t, err, session.ErrInvalidSession)

			// Rebuild after a catalog change.
			_, err = session.Activate(ctx, st, snap, "s1", "files_read")
			require.NoError(t, err)
			next, err := cat.Update(func(b *catalog.Builder) error {
				if err := b.Remove("mcp.files:read"); err != nil {
					return err
				}
				w, _ := b.Get("files_write")
				w.InputSchema, w.SchemaDigest = json.RawMessage(`{"type":"object"}`), ""
				return b.Replace(w)
			})
			require.NoError(t, err)
			set, rep, err := session.Rebuild(ctx, st, next, "s1")
			require.NoError(t, err)
			assert.Equal(t, []string{"builtin:read_file"}, rep.Kept)
			assert.Equal(t, []session.Dropped{
				{Tool: "mcp.files:read", Reason: session.DropRemoved},
				{Tool: "mcp.files:write", Reason: session.DropDrifted, Drift: []string{session.DriftSchema, session.DriftPolicy}},
			}, rep.Dropped)
			assert.Empty(t, set.Activated)
			assert.Equal(t, uint64(4), set.Version)

			ids, err := st.IDs(ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"s1"}, ids)
		})
	}
}

func TestFileStorePersistsAndRefusesCorruption(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "var", "sessions.json")
	snap := testCatalog(t).Snapshot()
	_, err := session.Activate(ctx, session.NewFileStore(path), snap, "cli", "files_read")
	require.NoError(t, err)

	// A new store on the same file (a restart) sees the grant.
	set, err := session.NewFileStore(path).Load(ctx, "cli")
	require.NoError(t, err)
	require.Contains(t, set.Activated, "mcp.files:read")

	for name, body := range map[string]string{
		"not json":      `{"format":1,`,
		"wrong format":  `{"format":2,"sessions":{}}`,
		"unknown field": `{"format":1,"sessions":{},"extra":1}`,
		"id mismatch":   `{"format":1,"sessions":{"a":{"id":"b","version":0,"core":{},"activated":{}}}}`,
		"forged grant":  `{"format":1,"sessions":{"a":{"id":"a","version":0,"core":{},"activated":{"mcp.files:read":{"grant":{"session":"b","tool":"mcp.files:read","catalog_generation":0,"schema_digest":"x"},"provenance":"p"}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.json")
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			_, err := session.NewFileStore(p).Load(ctx, "a")
			assert.ErrorIs(t, err, session.ErrStore)
			_, err = session.Activate(ctx, session.NewFileStore(p), snap, "a", "files_read")
			assert.ErrorIs(t, err, session.ErrStore, "a corrupt file is never overwritten as empty")
		})
	}
}

func TestConcurrentActivations(t *testing.T) {
	ctx := context.Background()
	snap := testCatalog(t).Snapshot()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for _, tool := range []string{"files_read", "files_write", "echo", "plugin__core__search"} {
				wg.Go(func() {
					_, err := session.Activate(ctx, st, snap, "c", tool)
					assert.NoError(t, err)
				})
			}
			wg.Wait()
			set, err := st.Load(ctx, "c")
			require.NoError(t, err)
			assert.Len(t, set.Activated, 4, "no activation lost")
			assert.Equal(t, uint64(4), set.Version)
		})
	}
}

// FuzzFileStoreRead checks that no session file makes the store panic, and
// that one it accepts holds only consistent sets.
func FuzzFileStoreRead(f *testing.F) {
	f.Add([]byte(`{"format":1,"sessions":{"a":{"id":"a","version":2,"core":{},"activated":{"t:x":{"grant":{"session":"a","tool":"t:x","catalog_generation":0,"schema_digest":"d"},"provenance":"p"}}}}}`))
	f.Add([]byte(`{"format":1,"sessions":null}`))
	f.Add([]byte(`{"format":1,"sessions":{"a":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "s.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st := session.NewFileStore(p)
		ids, err := st.IDs(context.Background())
		if err != nil {
			if !errors.Is(err, session.ErrStore) {
				t.Fatalf("error %v does not wrap ErrStore", err)
			}
			return
		}
		for _, id := range ids {
			s, err := st.Load(context.Background(), id)
			if err != nil || s == nil || s.ID != id || !session.ValidID(id) {
				t.Fatalf("session %q: %v %v", id, s, err)
			}
			for tool, a := range s.Activated {
				if a.Grant.Session != id || a.Grant.Tool != tool {
					t.Fatalf("inconsistent grant %v", a)
				}
			}
		}
	})
}
