package baseline_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
)

func TestMemoryStore(t *testing.T) {
	baselinetest.Run(t, func(t *testing.T) baselinetest.Instance {
		return baselinetest.Instance{Store: baseline.NewMemory()}
	})
}

func TestFileStore(t *testing.T) {
	baselinetest.Run(t, func(t *testing.T) baselinetest.Instance {
		path := filepath.Join(t.TempDir(), "baseline.json")
		return baselinetest.Instance{
			Store:  openFile(t, path),
			Open:   func(t *testing.T) baseline.Store { return openFile(t, path) },
			Tamper: func(t *testing.T, k baseline.Key, def json.RawMessage) { tamperFile(t, path, k, def) },
		}
	})
}

func openFile(t *testing.T, path string) *baseline.File {
	t.Helper()
	f, err := baseline.OpenFile(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// tamperFile replaces the definition of k's entry in the file at path,
// keeping the digest, by writing the file in place.
func tamperFile(t *testing.T, path string, k baseline.Key, def json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Version int              `json:"version"`
		Tools   []map[string]any `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	found := false
	for _, e := range doc.Tools {
		if e["upstream"] == k.Upstream && e["tool"] == k.Tool {
			e["definition"] = def
			found = true
		}
	}
	require.True(t, found, "%v not in the file", k)
	data, err = json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}
