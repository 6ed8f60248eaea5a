package catalog_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

func tool(ns, name string, aliases ...string) catalog.Tool {
	id, err := catalog.MakeID(ns, name)
	if err != nil {
		panic(err)
	}
	return catalog.Tool{ID: id, Name: name, Aliases: aliases}
}

func TestStoreGet(t *testing.T) {
	read := tool("builtin", "Read", "read_file")
	read.InputSchema = json.RawMessage(`{ "type": "object", "properties": { "path": {"type": "string"} } }`)
	read.Provenance = catalog.ProvenanceBuiltin
	read.Effect = catalog.EffectReadOnly
	search := tool("plugin.x", "search")
	s, err := catalog.NewStore(read, search)
	require.NoError(t, err)
	snap := s.Snapshot()
	assert.Equal(t, uint64(0), snap.Generation())
	assert.Equal(t, 2, snap.Len())

	for _, name := range []string{"builtin:.52ead", "Read", "read_file"} {
		got, ok := snap.Get(name)
		require.True(t, ok, name)
		assert.Equal(t, "builtin:.52ead", got.ID)
	}
	// Exact match only: another case, or a forged spelling, is no match.
	for _, name := range []string{"read", "READ", "Read_file", "plugin_search", "SEARCH", "builtin:read", "x:search", " search"} {
		_, ok := snap.Get(name)
		assert.False(t, ok, name)
	}

	got, _ := snap.Get("Read")
	assert.Equal(t, `{"type":"object","properties":{"path":{"type":"string"}}}`, string(got.InputSchema), "compacted, key order kept")
	d, err := catalog.Digest(read.InputSchema)
	require.NoError(t, err)
	assert.Equal(t, d, got.SchemaDigest)
	assert.Equal(t, catalog.ProvenanceBuiltin, got.Provenance)

	// Defaults are the least trusted choices.
	got, _ = snap.Get("search")
	assert.Equal(t, `{"type":"object"}`, string(got.InputSchema))
	assert.Equal(t, catalog.EffectNonIdempotent, got.Effect)
	assert.Equal(t, catalog.ProvenanceUnverified, got.Provenance)

	list := snap.List()
	require.Len(t, list, 2)
	assert.Equal(t, "builtin:.52ead", list[0].ID)
	assert.Equal(t, "plugin.x:search", list[1].ID)
	entries := snap.Entries()
	require.Len(t, entries, 2)
	assert.Equal(t, []string{"read_file"}, entries[0].Aliases)

	w := list[0].ABI()
	assert.Equal(t, "builtin:.52ead", w.ID)
	assert.Equal(t, "read_only", w.Effect)
	assert.Equal(t, list[0].SchemaDigest, w.SchemaDigest)
}

// Values handed out are copies: changing them does not change the snapshot.
func TestSnapshotIsImmutable(t *testing.T) {
	orig := tool("builtin", "read", "r")
	schema := json.RawMessage(`{"type":"object"}`)
	orig.InputSchema = schema
	s, err := catalog.NewStore(orig)
	require.NoError(t, err)
	schema[2] = 'X' // the caller's slice is not kept
	orig.Aliases[0] = "q"

	snap := s.Snapshot()
	got, _ := snap.Get("read")
	got.Aliases[0] = "changed"
	got.InputSchema[0] = '['
	list := snap.List()
	list[0].Aliases[0] = "changed"
	snap.Entries()[0].Aliases[0] = "changed"
	got.ABI().InputSchema[0] = '['

	again, ok := snap.Get("r")
	require.True(t, ok)
	assert.Equal(t, []string{"r"}, again.Aliases)
	assert.Equal(t, `{"type":"object"}`, string(again.InputSchema))
}

func TestUpdateGeneration(t *testing.T) {
	s, err := catalog.NewStore()
	require.NoError(t, err)
	before := s.Snapshot()
	snap, err := s.Update(func(b *catalog.Builder) error { return b.Add(tool("builtin", "a")) })
	require.NoError(t, err)
	assert.Equal(t, uint64(1), snap.Generation())
	assert.Same(t, snap, s.Snapshot())
	assert.Equal(t, 0, before.Len(), "an old snapshot does not change")

	snap, err = s.Update(func(b *catalog.Builder) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, uint64(2), snap.Generation(), "every successful Update counts")

	snap, err = s.Update(func(b *catalog.Builder) error {
		if err := b.Add(tool("builtin", "b")); err != nil {
			return err
		}
		if err := b.Add(tool("builtin", "c")); err != nil {
			return err
		}
		return b.Remove("builtin:a")
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(3), snap.Generation(), "one Update, however many edits, is +1")
	assert.Equal(t, 2, snap.Len())

	// A failing fn publishes nothing, even after successful edits.
	_, err = s.Update(func(b *catalog.Builder) error {
		require.NoError(t, b.Add(tool("builtin", "d")))
		return b.Add(tool("builtin", "b"))
	})
	require.ErrorIs(t, err, catalog.ErrDuplicateID)
	assert.Same(t, snap, s.Snapshot())
	_, ok := s.Snapshot().Get("d")
	assert.False(t, ok)
}

func TestBuilderErrors(t *testing.T) {
	base := []catalog.Tool{tool("builtin", "read", "cat"), tool("mcp.github", "get_me")}
	tests := []struct {
		name string
		fn   func(b *catalog.Builder) error
		want error
	}{
		{"duplicate id", func(b *catalog.Builder) error { return b.Add(tool("builtin", "read")) }, catalog.ErrDuplicateID},
		{"name is another tool's alias", func(b *catalog.Builder) error { return b.Add(tool("builtin", "cat")) }, catalog.ErrNameTaken},
		{"alias is another tool's name", func(b *catalog.Builder) error { return b.Add(tool("builtin", "x", "get_me")) }, catalog.ErrNameTaken},
		{"alias is another tool's id", func(b *catalog.Builder) error { return b.Add(tool("builtin", "x", "builtin:read")) }, catalog.ErrNameTaken},
		{"same wire name, other namespace", func(b *catalog.Builder) error { return b.Add(tool("mcp.other", "get_me")) }, catalog.ErrNameTaken},
		{"remove missing", func(b *catalog.Builder) error { return b.Remove("builtin:nope") }, catalog.ErrNotFound},
		{"replace missing", func(b *catalog.Builder) error { return b.Replace(tool("builtin", "nope")) }, catalog.ErrNotFound},
		{"empty name", func(b *catalog.Builder) error { return b.Add(catalog.Tool{ID: "builtin:x"}) }, catalog.ErrInvalidName},
		{"empty alias", func(b *catalog.Builder) error { return b.Add(tool("builtin", "x", "")) }, catalog.ErrInvalidName},
		{"repeated alias", func(b *catalog.Builder) error { return b.Add(tool("builtin", "x", "y", "y")) }, catalog.ErrInvalidTool},
		{"alias is own name", func(b *catalog.Builder) error { return b.Add(tool("builtin", "x", "x")) }, catalog.ErrInvalidTool},
		{"empty id", func(b *catalog.Builder) error { return b.Add(catalog.Tool{Name: "x"}) }, catalog.ErrInvalidID},
		{"non-canonical id", func(b *catalog.Builder) error { return b.Add(catalog.Tool{ID: "builtin:X", Name: "X"}) }, catalog.ErrInvalidID},
		{"schema array", func(b *catalog.Builder) error {
			t := tool("builtin", "x")
			t.InputSchema = json.RawMessage(`[]`)
			return b.Add(t)
		}, catalog.ErrInvalidSchema},
		{"schema not JSON", func(b *catalog.Builder) error {
			t := tool("builtin", "x")
			t.InputSchema = json.RawMessage(`{"type":`)
			return b.Add(t)
		}, catalog.ErrInvalidSchema},
		{"bad effect", func(b *catalog.Builder) error {
			t := tool("builtin", "x")
			t.Effect = "safe"
			return b.Add(t)
		}, catalog.ErrInvalidTool},
		{"bad provenance", func(b *catalog.Builder) error {
			t := tool("builtin", "x")
			t.Provenance = "mcp_config{GitHub}"
			return b.Add(t)
		}, catalog.ErrInvalidTool},
		{"digest mismatch", func(b *catalog.Builder) error {
			t := tool("builtin", "x")
			t.SchemaDigest = "00"
			return b.Add(t)
		}, catalog.ErrInvalidTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := catalog.NewStore(base...)
			require.NoError(t, err)
			_, err = s.Update(tt.fn)
			require.ErrorIs(t, err, tt.want)
			var e *catalog.Error
			require.ErrorAs(t, err, &e)
			assert.NotEmpty(t, e.Tool, "the error names the tool")
			assert.Contains(t, err.Error(), e.Tool)
			assert.Equal(t, uint64(0), s.Snapshot().Generation())
		})
	}
	_, err := catalog.NewStore(tool("builtin", "a"), tool("builtin", "a"))
	assert.ErrorIs(t, err, catalog.ErrDuplicateID)
}

func TestBuilderReplace(t *testing.T) {
	s, err := catalog.NewStore(tool("builtin", "a", "x"), tool("builtin", "b", "y"))
	require.NoError(t, err)
	snap, err := s.Update(func(b *catalog.Builder) error {
		// Move alias x from a to b; a keeps its id.
		a := tool("builtin", "a")
		if err := b.Replace(a); err != nil {
			return err
		}
		got, ok := b.Get("b")
		require.True(t, ok)
		got.Aliases = append(got.Aliases, "x")
		got.SchemaDigest = ""
		return b.Replace(got)
	})
	require.NoError(t, err)
	got, ok := snap.Get("x")
	require.True(t, ok)
	assert.Equal(t, "builtin:b", got.ID)

	// A failed Replace leaves the builder as it was.
	_, err = s.Update(func(b *catalog.Builder) error {
		err := b.Replace(tool("builtin", "a", "y"))
		require.ErrorIs(t, err, catalog.ErrNameTaken)
		got, ok := b.Get("a")
		require.True(t, ok, "old record restored")
		assert.Empty(t, got.Aliases)
		_, ok = b.Get("y")
		require.True(t, ok)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), s.Snapshot().Generation())
}

// Readers load snapshots while a writer publishes. A snapshot never changes
// under its reader, and generations only rise. Run with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s, err := catalog.NewStore(tool("builtin", "base"))
	require.NoError(t, err)
	pinned := s.Snapshot() // as a pipeline run pins one
	pinnedList := pinned.List()
	const updates = 300
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for i := 0; i < 2000; i++ {
				snap := s.Snapshot()
				gen, n := snap.Generation(), snap.Len()
				if gen < last {
					errs <- fmt.Errorf("generation went back from %d to %d", last, gen)
					return
				}
				last = gen
				// Every update adds one tool: the size follows the generation.
				if n != int(gen)+1 {
					errs <- fmt.Errorf("generation %d has %d tools", gen, n)
					return
				}
				name := fmt.Sprintf("t%d", gen)
				_, found := snap.Get(name)
				if gen > 0 && !found {
					errs <- fmt.Errorf("generation %d lacks %s", gen, name)
					return
				}
				_ = snap.List()
				if snap.Generation() != gen || snap.Len() != n {
					errs <- fmt.Errorf("snapshot %d changed under its reader", gen)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= updates; i++ {
			if _, err := s.Update(func(b *catalog.Builder) error {
				return b.Add(tool("builtin", fmt.Sprintf("t%d", i)))
			}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, uint64(updates), s.Snapshot().Generation())
	assert.Equal(t, uint64(0), pinned.Generation())
	assert.Equal(t, pinnedList, pinned.List(), "the pinned snapshot saw none of the updates")
	_, ok := pinned.Get("t1")
	assert.False(t, ok)
}

func TestZeroStore(t *testing.T) {
	var s catalog.Store
	assert.Equal(t, uint64(0), s.Snapshot().Generation())
	assert.Equal(t, 0, s.Snapshot().Len())
	snap, err := s.Update(func(b *catalog.Builder) error { return b.Add(tool("builtin", "a")) })
	require.NoError(t, err)
	assert.Equal(t, uint64(1), snap.Generation())
	assert.Equal(t, 1, s.Snapshot().Len())
}

// Concurrent writers are serialised: each Update gets its own generation.
func TestConcurrentWriters(t *testing.T) {
	s, err := catalog.NewStore()
	require.NoError(t, err)
	var wg sync.WaitGroup
	gens := make(chan uint64, 100)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				snap, err := s.Update(func(b *catalog.Builder) error {
					return b.Add(tool("builtin", fmt.Sprintf("w%d_%d", w, i)))
				})
				if err == nil {
					gens <- snap.Generation()
				}
			}
		}()
	}
	wg.Wait()
	close(gens)
	seen := map[uint64]bool{}
	for g := range gens {
		assert.False(t, seen[g], "generation %d published twice", g)
		seen[g] = true
	}
	assert.Len(t, seen, 100)
	assert.Equal(t, 100, s.Snapshot().Len())
	assert.Equal(t, uint64(100), s.Snapshot().Generation())
}

func BenchmarkSnapshotGet(b *testing.B) {
	tools, err := catalog.Load(githubDir, catalog.ImportOptions{Server: "github"})
	require.NoError(b, err)
	s, err := catalog.NewStore(tools...)
	require.NoError(b, err)
	snap := s.Snapshot()
	for _, name := range []string{"get_me", "mcp.github:issue_write", "no_such_tool"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snap.Get(name)
			}
		})
	}
	b.Run("Snapshot", func(b *testing.B) {
		for b.Loop() {
			_ = s.Snapshot()
		}
	})
}
