package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestMCPListenUpstreamHeaderSecret: gatehost mcp --listen sends a url
// upstream the header its config reads from a secret file, and a reload
// reads the file again; the secret is never in its log or event log.
func TestMCPListenUpstreamHeaderSecret(t *testing.T) {
	const first, second = "first-secret-1111", "second-secret-2222"
	var mu sync.Mutex
	var keys []string // X-Api-Key of each tools/call the upstream got
	up := mcp.NewServer(&mcp.Implementation{Name: "keyed", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			mu.Lock()
			keys = append(keys, r.Header.Get("X-Api-Key"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(upSrv.Close)

	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	require.NoError(t, os.WriteFile(keyFile, []byte(first+"\n"), 0o600))
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
event_log: {path: events.jsonl}
sessions: {path: sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
pipelines:
  gated:
    subject: tool_call
    stages:
      - {plugin: exec, timeout: 60s, capabilities: [catalog, session], config: {confirm_effects: []}}
mcp:
  pipeline: gated
  sessions: {activate_on_list: ["*"]}
  upstreams:
    keyed:
      url: %s
      headers:
        X-Api-Key: {secret_file: api-key, prefix: "key "}
`, testwasm.CacheDir(), execWasm, upSrv.URL)), 0o644))

	cmd, base, logs := listenMCP(t, nil, "--config", cfg, "--listen", "127.0.0.1:0", "--watch-interval", "0")

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	echo := func() {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	echo()

	require.NoError(t, os.WriteFile(keyFile, []byte(second+"\n"), 0o600))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `gatehost_config_reloads_total{result="success"} 1`)
	}, time.Minute, 50*time.Millisecond)
	echo()
	mu.Lock()
	assert.Equal(t, []string{"key " + first, "key " + second}, keys)
	mu.Unlock()

	require.NoError(t, cs.Close())
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-logs.done
	events, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	require.NoError(t, err)
	for _, s := range []string{first, second} {
		assert.NotContains(t, logs.String(), s)
		assert.NotContains(t, string(events), s)
	}
}
