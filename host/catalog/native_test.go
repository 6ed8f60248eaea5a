package catalog_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

// digestFixture is a catalog that uses every field of a record.
func digestFixture() []catalog.Tool {
	read := tool("builtin", "Read", "read_file", "cat")
	read.Description = "Read a file <as is> & return it; ünïcode"
	read.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"]}`)
	read.Provenance = catalog.ProvenanceBuiltin
	read.Effect = catalog.EffectReadOnly
	merge := tool("mcp.github", "merge_pull_request")
	merge.Provenance = "mcp_config{github}"
	merge.Source = "github"
	merge.Hints = &catalog.Hints{Destructive: true, Idempotent: true, OpenWorld: true}
	merge.InputSchema = json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer","minimum":1e0}}}`)
	label := tool("mcp.github", "add_label")
	label.Provenance = "mcp_config{github}"
	label.Source = "github"
	label.Hints = &catalog.Hints{Idempotent: true}
	search := tool("unknown", "search")
	return []catalog.Tool{read, merge, label, search}
}

func snapshotOf(t *testing.T, tools ...catalog.Tool) *catalog.Snapshot {
	t.Helper()
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s.Snapshot()
}

func TestDigestIndependentOfOrderAndGeneration(t *testing.T) {
	tools := digestFixture()
	want := snapshotOf(t, tools...).Digest()
	assert.Len(t, want, 64)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		perm := append([]catalog.Tool(nil), tools...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		assert.Equal(t, want, snapshotOf(t, perm...).Digest())
	}

	// Built up by Updates, at other generations, in another order, with
	// a detour through a removed tool: the same content, the same name.
	s, err := catalog.NewStoreAt(41, tools[3])
	require.NoError(t, err)
	_, err = s.Update(func(b *catalog.Builder) error {
		require.NoError(t, b.Add(tool("builtin", "scratch")))
		for _, tl := range []catalog.Tool{tools[2], tools[0], tools[1]} {
			require.NoError(t, b.Add(tl))
		}
		return nil
	})
	require.NoError(t, err)
	assert.NotEqual(t, want, s.Snapshot().Digest())
	snap, err := s.Update(func(b *catalog.Builder) error { return b.Remove(tool("builtin", "scratch").ID) })
	require.NoError(t, err)
	assert.Equal(t, uint64(43), snap.Generation())
	assert.Equal(t, want, snap.Digest())

	// An Update that changes nothing moves the generation, not the digest.
	next, err := s.Update(func(*catalog.Builder) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, snap.Generation()+1, next.Generation())
	assert.Equal(t, want, next.Digest())
}

func TestDigestCoversEveryField(t *testing.T) {
	base := digestFixture()
	want := snapshotOf(t, base...).Digest()
	tests := []struct {
		name   string
		change func(ts []catalog.Tool) []catalog.Tool
	}{
		{"id", func(ts []catalog.Tool) []catalog.Tool { ts[3].ID = "unknown:search2"; return ts }},
		{"wire name", func(ts []catalog.Tool) []catalog.Tool { ts[0].Name = "Read2"; return ts }},
		{"alias added", func(ts []catalog.Tool) []catalog.Tool { ts[3].Aliases = []string{"find"}; return ts }},
		{"alias removed", func(ts []catalog.Tool) []catalog.Tool { ts[0].Aliases = ts[0].Aliases[:1]; return ts }},
		{"aliases reordered", func(ts []catalog.Tool) []catalog.Tool { ts[0].Aliases = []string{"cat", "read_file"}; return ts }},
		{"description", func(ts []catalog.Tool) []catalog.Tool { ts[1].Description = "merges"; return ts }},
		{"schema", func(ts []catalog.Tool) []catalog.Tool {
			ts[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer","minimum":2}}}`)
			return ts
		}},
		{"provenance", func(ts []catalog.Tool) []catalog.Tool { ts[1].Provenance = "mcp_config{gh}"; return ts }},
		{"source", func(ts []catalog.Tool) []catalog.Tool { ts[1].Source = "gh"; return ts }},
		{"effect", func(ts []catalog.Tool) []catalog.Tool { ts[0].Effect = catalog.EffectIdempotentWrite; return ts }},
		{"hints added", func(ts []catalog.Tool) []catalog.Tool { ts[0].Hints = &catalog.Hints{ReadOnly: true}; return ts }},
		{"hints removed", func(ts []catalog.Tool) []catalog.Tool {
			ts[2].Hints = nil
			ts[2].Effect = catalog.EffectIdempotentWrite
			return ts
		}},
		{"hint destructive", func(ts []catalog.Tool) []catalog.Tool {
			ts[2].Hints = &catalog.Hints{Idempotent: true, Destructive: true}
			return ts
		}},
		{"hint idempotent", func(ts []catalog.Tool) []catalog.Tool {
			ts[1].Hints = &catalog.Hints{Destructive: true, OpenWorld: true}
			return ts
		}},
		{"hint open world", func(ts []catalog.Tool) []catalog.Tool {
			ts[2].Hints = &catalog.Hints{Idempotent: true, OpenWorld: true}
			return ts
		}},
		{"tool added", func(ts []catalog.Tool) []catalog.Tool { return append(ts, tool("builtin", "extra")) }},
		{"tool removed", func(ts []catalog.Tool) []catalog.Tool { return ts[1:] }},
	}
	seen := map[string]string{want: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := snapshotOf(t, tt.change(digestFixture())...).Digest()
			require.NotEqual(t, want, got)
			if other, dup := seen[got]; dup {
				t.Fatalf("same digest as %s", other)
			}
			seen[got] = tt.name
		})
	}

	// What does not change the record does not change the name: a schema
	// written with other key order, spacing or number spelling, and a
	// policy digest given to Add (the store computes its own).
	same := digestFixture()
	same[1].InputSchema = json.RawMessage(`{ "properties": {"number": {"minimum": 1.0, "type": "integer"}}, "type": "object" }`)
	same[2].PolicyDigest = strings.Repeat("0", 64)
	assert.Equal(t, want, snapshotOf(t, same...).Digest())
}

func TestDigestOfEmptyCatalog(t *testing.T) {
	var zero catalog.Store
	empty := snapshotOf(t).Digest()
	assert.Equal(t, empty, zero.Snapshot().Digest())
	s, err := catalog.NewStoreAt(7)
	require.NoError(t, err)
	assert.Equal(t, empty, s.Snapshot().Digest())
	snap, err := s.Update(func(b *catalog.Builder) error { return b.Add(tool("builtin", "a")) })
	require.NoError(t, err)
	assert.NotEqual(t, empty, snap.Digest())
	snap, err = s.Update(func(b *catalog.Builder) error { return b.Remove(tool("builtin", "a").ID) })
	require.NoError(t, err)
	assert.Equal(t, empty, snap.Digest())
}

// roundTrip ships snap as MarshalNative does and builds a store of what
// Parse reads back.
func roundTrip(t testing.TB, snap *catalog.Snapshot) *catalog.Snapshot {
	doc, err := snap.MarshalNative()
	if err != nil {
		t.Fatalf("MarshalNative: %v", err)
	}
	tools, err := catalog.Parse(doc, catalog.ImportOptions{Format: catalog.FormatNative})
	if err != nil {
		t.Fatalf("Parse of MarshalNative: %v\n%s", err, doc)
	}
	s, err := catalog.NewStore(tools...)
	if err != nil {
		t.Fatalf("NewStore of MarshalNative: %v", err)
	}
	return s.Snapshot()
}

func TestMarshalNativeRoundTrip(t *testing.T) {
	gh, err := catalog.Load(filepath.Join(catalogsDir, "github-mcp-server"), catalog.ImportOptions{Server: "github"})
	require.NoError(t, err)
	require.NotEmpty(t, gh)
	for name, tools := range map[string][]catalog.Tool{
		"fixture":           digestFixture(),
		"github-mcp-server": gh,
		"empty":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			snap := snapshotOf(t, tools...)
			back := roundTrip(t, snap)
			assert.Equal(t, snap.Digest(), back.Digest())
			assert.Equal(t, snap.List(), back.List(), "every field of every record, schemas byte for byte")
			// Detected as native, too: what a person saves loads back.
			doc, err := snap.MarshalNative()
			require.NoError(t, err)
			detected, err := catalog.Parse(doc, catalog.ImportOptions{})
			require.NoError(t, err)
			if len(tools) > 0 {
				assert.Equal(t, snap.List(), detected)
			}
		})
	}

	snap := snapshotOf(t, digestFixture()...)
	doc, err := snap.MarshalNative()
	require.NoError(t, err)
	assert.Contains(t, string(doc), `"description":"Read a file <as is> & return it; ünïcode"`, "text kept literal")
	assert.Contains(t, string(doc), `"minimum":1e0`, "the schema as stored")
}

func TestParseNativeHintsAndPolicyDigest(t *testing.T) {
	tl := func(extra string) string {
		return `{"tools":[{"id":"builtin:t","name":"t","provenance":"builtin_runtime"` + extra + `}]}`
	}
	parse := func(doc string) (catalog.Tool, error) {
		tools, err := catalog.Parse([]byte(doc), catalog.ImportOptions{Format: catalog.FormatNative})
		if err != nil {
			return catalog.Tool{}, err
		}
		require.Len(t, tools, 1)
		return tools[0], nil
	}
	got, err := parse(tl(`,"hints":{"read_only":true}`))
	require.NoError(t, err)
	assert.Equal(t, &catalog.Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}, got.Hints, "missing hints take the MCP defaults, then normalised")
	assert.Equal(t, catalog.EffectReadOnly, got.Effect)

	got, err = parse(tl(`,"hints":{}`))
	require.NoError(t, err)
	want := catalog.DefaultHints()
	assert.Equal(t, &want, got.Hints)
	assert.Equal(t, catalog.EffectNonIdempotent, got.Effect)

	got, err = parse(tl(`,"hints":null`))
	require.NoError(t, err)
	assert.Nil(t, got.Hints)

	got, err = parse(tl(``))
	require.NoError(t, err)
	_, err = parse(tl(`,"policy_digest":"` + got.PolicyDigest + `"`))
	require.NoError(t, err, "the record's own policy digest")

	for name, extra := range map[string]string{
		"hint not boolean":        `,"hints":{"read_only":"true"}`,
		"hint unknown":            `,"hints":{"readOnlyHint":true}`,
		"hints not object":        `,"hints":[true]`,
		"effect safer than hints": `,"hints":{"destructive":true},"effect":"read_only"`,
		"policy digest wrong":     `,"policy_digest":"` + strings.Repeat("0", 64) + `"`,
		"policy digest not text":  `,"policy_digest":1`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(tl(extra))
			require.ErrorIs(t, err, catalog.ErrInvalidTool)
		})
	}

	// The new keys are native's, never read as an MCP tool's.
	_, err = catalog.Parse([]byte(`{"tools":[{"name":"t","hints":{"read_only":true}}]}`), catalog.ImportOptions{Format: catalog.FormatMCP})
	require.ErrorIs(t, err, catalog.ErrFormat)
}

func TestDescriptionMustBeUTF8(t *testing.T) {
	bad := tool("builtin", "t")
	bad.Description = "caf\xe9"
	_, err := catalog.NewStore(bad)
	require.ErrorIs(t, err, catalog.ErrInvalidTool)
}

// Whatever a catalog document holds, the snapshot built from it survives
// shipping in the native format unchanged.
func FuzzMarshalNativeRoundTrip(f *testing.F) {
	for _, name := range []string{"mcp-tools-list.json", "native-tools.json", "openai-tools.json"} {
		if data, err := os.ReadFile(filepath.Join(catalogsDir, name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"tools":[{"id":"builtin:t","name":"t","aliases":["u"],"description":"d","hints":{"open_world":false},"effect":"non_idempotent","source":"s","provenance":"builtin_runtime"}]}`))
	f.Add([]byte(`{"name":"a","inputSchema":{"type":"object","properties":{"x":{"const":"<\u2028>"}}},"annotations":{"readOnlyHint":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := catalog.Parse(data, catalog.ImportOptions{Server: "fuzz"})
		if err != nil {
			return
		}
		s, err := catalog.NewStore(tools...)
		if err != nil {
			t.Fatalf("parsed tools do not form a store: %v", err)
		}
		snap := s.Snapshot()
		if _, err := snap.MarshalNative(); errors.Is(err, catalog.ErrTooLarge) {
			return
		}
		back := roundTrip(t, snap)
		if back.Digest() != snap.Digest() {
			t.Fatalf("digest %s after shipping, %s before", back.Digest(), snap.Digest())
		}
		assert.Equal(t, snap.List(), back.List())
	})
}
