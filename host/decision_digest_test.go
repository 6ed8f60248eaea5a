package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// The decision and its record name the catalog snapshot by content as
// well as by generation, so a fleet's decisions can be joined to the one
// published catalog they were made against.
func TestDecisionRecordNamesCatalogDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	cat := hosttest.GitHubCatalog(t)
	h := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:      cat,
		EventLogPath: path,
		Pipelines:    hosttest.OnePipeline("sv", "catalog", "schema"),
	})
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	snap := cat.Snapshot()
	assert.Equal(t, snap.Digest(), d.CatalogDigest)
	assert.Len(t, d.CatalogDigest, 64)
	out, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"catalog_generation":0,"catalog_digest":"`+snap.Digest()+`"`, "additive, next to the generation")

	_, err = eventlog.Verify(path, eventlog.VerifyOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var rec eventlog.Record
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &rec))
	require.Equal(t, "decision", rec.Kind)
	var data struct {
		Generation *uint64 `json:"catalog_generation"`
		Digest     string  `json:"catalog_digest"`
	}
	require.NoError(t, json.Unmarshal(rec.Data, &data))
	require.NotNil(t, data.Generation)
	assert.Equal(t, snap.Generation(), *data.Generation)
	assert.Equal(t, snap.Digest(), data.Digest)

	// Another store holding the same tools at another generation: the
	// same digest.
	other, err := catalog.NewStoreAt(9, snap.List()...)
	require.NoError(t, err)
	assert.Equal(t, snap.Digest(), other.Snapshot().Digest())
}
