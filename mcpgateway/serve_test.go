package mcpgateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/frontend"
	"github.com/gatehost/gatehost/mcpgateway"
)

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServeMetricsAndReload: Serve answers /mcp, /metrics, /healthz and
// /readyz; after a call /metrics has the decision, the upstream's health
// and the open session. A Reload whose config does not build changes
// nothing; one whose pipeline now asks for confirmation turns a call that
// was accepted into a refused one, in the same session. Serve returns once
// its context is done.
func TestServeMetricsAndReload(t *testing.T) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	m := frontend.NewMetrics()
	f.cfg.Hooks = m.Hooks()
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	m.Register(g.Collector())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(ctx, ln, mcpgateway.ServeOptions{Metrics: m.Handler(), ShutdownTimeout: 2 * time.Second})
	}()
	base := "http://" + ln.Addr().String()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, sessionful)
	require.NoError(t, err)
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "before"})
	require.False(t, w.IsError, text(w))

	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`gatehost_decisions_total{pipeline="exec",verdict="accepted"} 1`,
		`gatehost_mcp_upstream_state{state="up",upstream="notes"} 1`,
		`gatehost_mcp_upstream_state{state="failing",upstream="notes"} 0`,
		`gatehost_mcp_sessions_open 1`,
		`gatehost_mcp_ready 1`,
		`gatehost_config_reloads_total{result="failure"} 0`,
	} {
		assert.Contains(t, body, want)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		code, body := get(t, base+probe)
		assert.Equal(t, http.StatusOK, code, probe+": "+body)
	}
	var ready mcpgateway.Readiness
	_, body = get(t, base+"/readyz")
	require.NoError(t, json.Unmarshal([]byte(body), &ready))
	assert.True(t, ready.Ready)

	confirmWrites := json.RawMessage(`{"confirm_tools":["mcp.notes:write_note"]}`)
	withExec := func(execConfig json.RawMessage) host.Config {
		cfg := f.cfg
		cfg.Pipelines = map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall,
			Stages: []host.StageConfig{{Plugin: "exec", Capabilities: []string{"catalog", "session"}, Config: execConfig}}}}
		return cfg
	}
	for _, tc := range []struct {
		name    string
		cfg     func() host.Config
		wantErr error
		// refused: write_note is refused after the reload.
		refused bool
	}{
		{name: "a plugin that is not there", cfg: func() host.Config {
			cfg := withExec(confirmWrites)
			cfg.Plugins = map[string]host.PluginConfig{"exec": {Path: "/nonexistent/exec.wasm"}}
			return cfg
		}},
		{name: "the gateway's pipeline gone", wantErr: mcpgateway.ErrPipeline, cfg: func() host.Config {
			cfg := withExec(confirmWrites)
			cfg.Pipelines = map[string]host.PipelineConfig{"other": cfg.Pipelines["exec"]}
			return cfg
		}},
		{name: "writes need a confirmation", refused: true, cfg: func() host.Config { return withExec(confirmWrites) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retired := make(chan struct{})
			err := g.Reload(context.Background(), tc.cfg(), func() { close(retired) })
			if !tc.refused {
				require.Error(t, err)
				if tc.wantErr != nil {
					assert.ErrorIs(t, err, tc.wantErr)
				}
				w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "kept"})
				assert.False(t, w.IsError, "the running config keeps deciding: %s", text(w))
				return
			}
			require.NoError(t, err)
			select {
			case <-retired:
			case <-time.After(30 * time.Second):
				t.Fatal("the previous host was never closed")
			}
			w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "after"})
			assert.True(t, w.IsError, text(w))
			assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, w))
			assert.Equal(t, "note: kept", text(call(t, cs, "read_note", map[string]any{"name": "a"})), "the refused write was not sent")
		})
	}
	_, body = get(t, base+"/metrics")
	assert.Contains(t, body, `gatehost_decisions_total{pipeline="exec",verdict="rejected"} 1`)

	require.NoError(t, cs.Close())
	cancel()
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context was done")
	}
}
