package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/server"
)

func TestOptionsDefaults(t *testing.T) {
	d := server.Options{}.Defaults()
	assert.Equal(t, config.DefaultFile, d.ConfigPath)
	assert.Equal(t, server.DefaultListen, d.Listen)
	assert.Zero(t, d.ApprovalTTL, "deprecated: 0 is the config's approvals.ttl")
	assert.Equal(t, 30*time.Second, d.ShutdownTimeout)
	assert.Equal(t, time.Second, d.RetryAfter)
	assert.Zero(t, d.WatchInterval, "no watching unless asked")
	assert.NotNil(t, d.Load)

	set := server.Options{ConfigPath: "x.yaml", Listen: "127.0.0.1:1", ApprovalTTL: time.Hour, ShutdownTimeout: time.Second}.Defaults()
	assert.Equal(t, "x.yaml", set.ConfigPath)
	assert.Equal(t, "127.0.0.1:1", set.Listen)
	assert.Equal(t, time.Hour, set.ApprovalTTL)
	assert.Equal(t, time.Second, set.ShutdownTimeout)
}

// TestNewRefuses: every option or config fault is an error from New,
// before anything is served.
func TestNewRefuses(t *testing.T) {
	errLoad := errors.New("no config here")
	tests := []struct {
		name    string
		opts    server.Options
		wantIs  error
		wantMsg string
	}{
		{name: "approval TTL too long", opts: server.Options{ApprovalTTL: 25 * time.Hour}, wantIs: server.ErrUsage, wantMsg: "--approval-ttl 25h0m0s"},
		{name: "approval TTL too short", opts: server.Options{ApprovalTTL: time.Millisecond}, wantIs: server.ErrUsage, wantMsg: "want 1s to 24h0m0s"},
		{name: "TLS cert without key", opts: server.Options{TLSCert: "c.pem", Load: func(string) (*config.Loaded, error) { return nil, errLoad }}, wantIs: server.ErrUsage, wantMsg: "--tls-cert and --tls-key go together"},
		{name: "loader error", opts: server.Options{Load: func(string) (*config.Loaded, error) { return nil, errLoad }}, wantIs: errLoad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(server.TokenEnv, "")
			t.Setenv(server.ApproverTokenEnv, "")
			s, err := server.New(tt.opts, nil)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}

// TestStartFailsClosed: a config whose gate does not load fails Start with
// the config's file and key; the handler never decides (503).
func TestStartFailsClosed(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.wasm"), []byte("not a module"), 0o644))
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
event_log: {path: events.jsonl}
cache_dir: %s
plugins: {bad: {path: bad.wasm}}
pipelines:
  admission:
    subject: proposal
    stages: [{plugin: bad, timeout: 60s}]
`, testwasm.CacheDir())), 0o644))
	s, err := server.New(server.Options{ConfigPath: cfg}, nil)
	require.NoError(t, err)
	err = s.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config "+cfg+": plugins.bad")
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/v1/pipelines/admission/check", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NoError(t, s.Close())
}
