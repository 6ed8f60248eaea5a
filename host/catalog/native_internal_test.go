package catalog

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// goldenFixture uses every field of a record, and characters the
// canonical encoding must write literally or escape.
func goldenFixture(t *testing.T) []Tool {
	t.Helper()
	read, err := MakeID(NamespaceBuiltin, "Read")
	require.NoError(t, err)
	return []Tool{
		{ID: read, Name: "Read", Aliases: []string{"read_file", "cat"}, Description: "Read a file <as is> & return it; ünïcode \u2028 \"quoted\"\n",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":4096}},"required":["path"]}`),
			Provenance:  ProvenanceBuiltin, Effect: EffectReadOnly},
		{ID: "mcp.github:merge_pull_request", Name: "merge_pull_request", Provenance: "mcp_config{github}", Source: "github",
			Hints:       &Hints{Destructive: true, Idempotent: true, OpenWorld: true},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer","minimum":1e0}}}`)},
		{ID: "unknown:search", Name: "search"},
	}
}

// The digest's encoding is pinned: a change to the document or to its
// canonical form renames every published catalog, and must be a decision
// (snapshotVersion), not an accident. Run with -update to rewrite. The
// golden values were checked independently: Python's json.dumps(doc,
// sort_keys=True, separators=(",", ":"), ensure_ascii=False) of the
// golden document gives it back byte for byte, and its SHA-256 is the
// fixture's digest.
func TestSnapshotDigestGolden(t *testing.T) {
	s, err := NewStore(goldenFixture(t)...)
	require.NoError(t, err)
	raw, err := snapshotDocument(s.Snapshot().tools)
	require.NoError(t, err)
	doc, err := CanonicalJSON(raw)
	require.NoError(t, err)
	gh, err := Load(filepath.Join("..", "..", "testdata", "catalogs", "github-mcp-server"), ImportOptions{Server: "github"})
	require.NoError(t, err)
	ghStore, err := NewStore(gh...)
	require.NoError(t, err)
	digests := "empty " + emptyDigest + "\n" +
		"fixture " + s.Snapshot().Digest() + "\n" +
		"github-mcp-server " + ghStore.Snapshot().Digest() + "\n"

	docPath := filepath.Join("testdata", "snapshot-document.golden.json")
	digestPath := filepath.Join("testdata", "snapshot-digests.golden")
	if *update {
		require.NoError(t, os.WriteFile(docPath, append(doc, '\n'), 0o644))
		require.NoError(t, os.WriteFile(digestPath, []byte(digests), 0o644))
	}
	wantDoc, err := os.ReadFile(docPath)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(string(wantDoc), "\n"), string(doc))
	wantDigests, err := os.ReadFile(digestPath)
	require.NoError(t, err)
	assert.Equal(t, string(wantDigests), digests)
}
