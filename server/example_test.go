package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/server"
)

// Example embeds the whole decision API: the config file's pipelines
// behind POST /v1/pipelines/NAME/check, with /healthz, /readyz and
// /metrics (s.Reload reloads the config; s.Serve would also watch it).
func Example() {
	s, err := server.New(server.Options{ConfigPath: "gatehost.yaml"}, slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(context.Background()); err != nil { // compile the gates
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8490", s.Handler()))
}

// TestEmbedded does what Example does, on 127.0.0.1:0, and makes one
// decision over HTTP.
func TestEmbedded(t *testing.T) {
	root, err := testwasm.Root()
	require.NoError(t, err)
	sv, err := testwasm.Go("plugins/static-verify/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
catalog: {sources: [{format: mcp, path: %s, server: github}]}
event_log: {path: events.jsonl}
cache_dir: %s
plugins: {static-verify: {path: %s}}
pipelines:
  admission:
    subject: proposal
    stages: [{plugin: static-verify, timeout: 60s, capabilities: [catalog, schema]}]
`, filepath.Join(root, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), sv)), 0o644))

	s, err := server.New(server.Options{ConfigPath: cfg}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	defer func() {
		ts.Close()
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "a second Close is a no-op")
	}()
	check := func(body string) *http.Response {
		resp, err := http.Post(ts.URL+"/v1/pipelines/admission/check", "application/json", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		return resp
	}
	// Before Start nothing is decided: 503, not ready.
	resp := check(`{"actions":[]}`)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NoError(t, s.Start(context.Background()))

	tests := []struct {
		name    string
		body    string
		verdict abi.Verdict
	}{
		{"known tool", `{"actions":[{"tool":"list_issues","parameters":{"owner":"o","repo":"r"}}]}`, abi.Accepted},
		{"unknown tool", `{"actions":[{"tool":"format_disk"}]}`, abi.Rejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := check(tt.body)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var d host.Decision
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&d))
			assert.Equal(t, tt.verdict, d.Verdict)
		})
	}
	resp, err = http.Get(ts.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestNewRefusesMissingConfig: New reads the config, so a missing file is
// an error before anything is served.
func TestNewRefusesMissingConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing.yaml")
	s, err := server.New(server.Options{ConfigPath: p}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config "+p+": ")
	assert.Nil(t, s)
}
