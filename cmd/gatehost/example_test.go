package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// exampleGateway copies examples/gateway/gatehost.yaml into a temp dir (its
// event log and sessions are relative to it) and points
// $GATEHOST_PLUGIN_DIR at a directory holding the exec gate built from this
// tree. It returns the config's path and the module's SHA-256.
func exampleGateway(t *testing.T) (string, string) {
	t.Helper()
	wasmPath, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	wasm, err := os.ReadFile(wasmPath)
	require.NoError(t, err)
	plugins := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "exec.wasm"), wasm, 0o644))
	t.Setenv(config.PluginDirEnv, plugins)
	t.Setenv("GATEHOST_CACHE_DIR", testwasm.CacheDir())
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples/gateway/gatehost.yaml"))
	require.NoError(t, err)
	cfg := filepath.Join(t.TempDir(), "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, src, 0o644))
	sum := sha256.Sum256(wasm)
	return cfg, hex.EncodeToString(sum[:])
}

// TestExampleGatewayConfig: the gateway example loads, its builtin exec gate
// resolves through $GATEHOST_PLUGIN_DIR, and the host accepts the pipeline
// the mcp: section names.
func TestExampleGatewayConfig(t *testing.T) {
	cfg, sum := exampleGateway(t)
	l, err := config.Load(cfg)
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, filepath.Join(os.Getenv(config.PluginDirEnv), "exec.wasm"), l.Host.Plugins["exec"].Path)
	assert.Equal(t, map[string]string{"exec": "exec"}, l.Builtins)
	require.Equal(t, "gated", l.MCP.Pipeline)
	assert.Equal(t, []string{"*"}, l.MCP.Sessions.ActivateOnList)
	h, err := host.New(context.Background(), l.Host)
	if err != nil {
		require.NoError(t, l.HostError(err))
	}
	require.NoError(t, h.Close(context.Background()))

	// plugin inspect shows the resolved module of the builtin and its sum,
	// by the config's plugin name and by builtin:GATE.
	code, out, stderr := runCLI("plugin", "inspect", "--config", cfg, "exec")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"plugin   exec (" + cfg + ")", "builtin  exec", "module   " + l.Host.Plugins["exec"].Path,
		"sha256   " + sum, "pin      none"} {
		assert.Contains(t, out, want)
	}
	code, out, stderr = runCLI("plugin", "inspect", "--output", "json", "builtin:exec")
	require.Equal(t, 0, code, stderr)
	var in inspection
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	assert.Equal(t, inspection{Path: l.Host.Plugins["exec"].Path, Builtin: "exec", SHA256: sum},
		inspection{Path: in.Path, Builtin: in.Builtin, SHA256: in.SHA256})
	code, _, stderr = runCLI("plugin", "inspect", "builtin:nope")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `builtin:nope: "nope" is not a built-in gate`)
	code, _, stderr = runCLI("plugin", "inspect", "--config", cfg, "merge")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "plugins.merge: no such plugin")
}

// TestExampleGatewayPin: plugin pin writes the builtin's resolved module's
// sum under builtin:, which inspect then reports as matching; a stale pin
// is reported, with exit code 1.
func TestExampleGatewayPin(t *testing.T) {
	cfg, sum := exampleGateway(t)
	code, out, stderr := runCLI("plugin", "pin", "--config", cfg)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "exec: pinned "+sum+" (builtin exec)")
	src, err := os.ReadFile(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(src), "    builtin: exec               # the installed exec gate")
	assert.Contains(t, string(src), "\n    sha256: \""+sum+"\"\n")
	code, out, stderr = runCLI("plugin", "inspect", "--config", cfg, "exec")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "pin      matches")

	stale := strings.Replace(string(src), sum, strings.Repeat("0", 64), 1)
	require.NoError(t, os.WriteFile(cfg, []byte(stale), 0o644))
	code, out, _ = runCLI("plugin", "inspect", "--config", cfg, "exec")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "DOES NOT MATCH")
}
