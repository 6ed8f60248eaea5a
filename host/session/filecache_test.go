package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/session"
)

// TestFileStoreSeesEveryChange: a FileStore decodes its file only when the
// bytes changed, and every change is seen by its next Load, whoever made
// it: another FileStore (another process), an edit of the file in place
// that keeps its length, or damage, which is an error, never the sets
// decoded before.
func TestFileStoreSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	snap := testCatalog(t).Snapshot()
	path := filepath.Join(t.TempDir(), "sessions.json")
	reader, writer := session.NewFileStore(path), session.NewFileStore(path)
	_, err := session.Activate(ctx, writer, snap, "a", "files_read")
	require.NoError(t, err)
	set, err := reader.Load(ctx, "a")
	require.NoError(t, err)
	require.Contains(t, set.Activated, "mcp.files:read")

	// A Set a caller got is its own: changing it changes no later Load.
	delete(set.Activated, "mcp.files:read")
	set, err = reader.Load(ctx, "a")
	require.NoError(t, err)
	require.Contains(t, set.Activated, "mcp.files:read")

	// Another writer revokes: the next Load sees it.
	_, err = session.Revoke(ctx, writer, snap, "a", "files_read")
	require.NoError(t, err)
	set, err = reader.Load(ctx, "a")
	require.NoError(t, err)
	assert.NotContains(t, set.Activated, "mcp.files:read")

	// An edit in place of the same length (the session's id changed).
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := []byte(string(b))
	for i := range len(edited) - 2 {
		if string(edited[i:i+3]) == `"a"` {
			edited[i+1] = 'b'
		}
	}
	require.Len(t, edited, len(b))
	require.NoError(t, os.WriteFile(path, edited, 0o600))
	set, err = reader.Load(ctx, "a")
	require.NoError(t, err)
	assert.Nil(t, set, "the session is now b")
	ids, err := reader.IDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, ids)

	// Damage after a good read is an error.
	require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600))
	_, err = reader.Load(ctx, "b")
	require.ErrorIs(t, err, session.ErrStore)
	_, err = session.Activate(ctx, reader, snap, "b", "files_read")
	require.ErrorIs(t, err, session.ErrStore, "a damaged file is never overwritten from memory")
}

// BenchmarkFileStoreLoad is one session's Load from a file holding n
// sessions of four grants each, as every gated call of a gateway with n
// sessions does.
func BenchmarkFileStoreLoad(b *testing.B) {
	ctx := context.Background()
	tb := &testing.T{}
	snap := testCatalog(tb).Snapshot()
	for _, n := range []int{1, 200} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			st := session.NewFileStore(filepath.Join(b.TempDir(), "sessions.json"))
			for i := range n {
				for _, tool := range []string{"files_read", "files_write", "echo", "plugin__core__search"} {
					_, err := session.Activate(ctx, st, snap, fmt.Sprint("s", i), tool)
					require.NoError(b, err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.Load(ctx, "s0"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
