package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestBuiltinPlugins: plugins.P.builtin resolves to NAME.wasm in
// $GATEHOST_PLUGIN_DIR, then in PREFIX/lib/gatehost/plugins beside the
// executable PREFIX/bin/gatehost; every failure names the key and the
// places looked.
func TestBuiltinPlugins(t *testing.T) {
	tests := []struct {
		name string
		// plugin is the body of plugins.exec.
		plugin string
		// inEnv and inPrefix put exec.wasm in $GATEHOST_PLUGIN_DIR and in
		// the prefix's lib/gatehost/plugins; noEnv leaves the variable unset.
		inEnv, inPrefix, noEnv bool
		// want is "env" or "prefix": where the module must resolve.
		want    string
		wantErr []string
	}{
		{name: "env", plugin: "{builtin: exec}", inEnv: true, inPrefix: true, want: "env"},
		{name: "prefix after env", plugin: "{builtin: exec}", inPrefix: true, want: "prefix"},
		{name: "prefix without env", plugin: "{builtin: exec}", inPrefix: true, noEnv: true, want: "prefix"},
		{name: "pin passes through", plugin: `{builtin: exec, sha256: "ab"}`, inEnv: true, want: "env"},
		{name: "unknown gate", plugin: "{builtin: nope}", inEnv: true,
			wantErr: []string{`plugins.exec.builtin: "nope" is not a built-in gate (exec, merge, policy, preconditions, static-verify)`}},
		{name: "not found", plugin: "{builtin: exec}",
			wantErr: []string{"plugins.exec.builtin: module exec.wasm not found; looked in $GATEHOST_PLUGIN_DIR: ENV/exec.wasm, PREFIX/lib/gatehost/plugins/exec.wasm"}},
		{name: "not found, env unset", plugin: "{builtin: exec}", noEnv: true,
			wantErr: []string{"plugins.exec.builtin: module exec.wasm not found; looked in $GATEHOST_PLUGIN_DIR (unset), PREFIX/lib/gatehost/plugins/exec.wasm"}},
		{name: "path and builtin", plugin: "{builtin: exec, path: x.wasm}", inEnv: true,
			wantErr: []string{"plugins.exec: path and builtin are exclusive"}},
		{name: "neither", plugin: "{sha256: ab}", inEnv: true,
			wantErr: []string{"plugins.exec.path: required (or builtin: one of exec, merge, policy, preconditions, static-verify)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envDir, prefix := t.TempDir(), t.TempDir()
			prefixDir := filepath.Join(prefix, "lib", "gatehost", "plugins")
			require.NoError(t, os.MkdirAll(prefixDir, 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(prefix, "bin"), 0o755))
			setExecutable(t, filepath.Join(prefix, "bin", "gatehost"))
			if tt.noEnv {
				t.Setenv(PluginDirEnv, "")
			} else {
				t.Setenv(PluginDirEnv, envDir)
			}
			if tt.inEnv {
				require.NoError(t, os.WriteFile(filepath.Join(envDir, "exec.wasm"), []byte("env"), 0o644))
			}
			if tt.inPrefix {
				require.NoError(t, os.WriteFile(filepath.Join(prefixDir, "exec.wasm"), []byte("prefix"), 0o644))
			}
			l, err := Load(write(t, "g.yaml", "event_log: {path: e.jsonl}\nplugins:\n  exec: "+tt.plugin+"\n"))
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, w := range tt.wantErr {
					w = strings.NewReplacer("ENV", envDir, "PREFIX", prefix).Replace(w)
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			defer l.Close()
			want := map[string]string{"env": filepath.Join(envDir, "exec.wasm"), "prefix": filepath.Join(prefixDir, "exec.wasm")}[tt.want]
			assert.Equal(t, want, l.Host.Plugins["exec"].Path)
			assert.Equal(t, map[string]string{"exec": "exec"}, l.Builtins)
			if tt.name == "pin passes through" {
				assert.Equal(t, "ab", l.Host.Plugins["exec"].SHA256)
			}
		})
	}
}

// TestBuiltinNotRegular: a directory where the module should be is an
// error naming the key, not a reason to look further.
func TestBuiltinNotRegular(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "merge.wasm"), 0o755))
	t.Setenv(PluginDirEnv, dir)
	_, err := Load(write(t, "g.yaml", "event_log: {path: e.jsonl}\nplugins:\n  m: {builtin: merge}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.m.builtin: ")
	assert.Contains(t, err.Error(), "not a regular file")
}

// TestBuiltinPin: the pin of a built-in gate is checked against the
// resolved file, and a mismatch names plugins.P.sha256.
func TestBuiltinPin(t *testing.T) {
	wasm, err := os.ReadFile(prefixDenyWasm)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "static-verify.wasm"), wasm, 0o644))
	t.Setenv(PluginDirEnv, dir)
	sum := sha256.Sum256(wasm)
	for _, pin := range []string{hex.EncodeToString(sum[:]), strings.Repeat("0", 64)} {
		l, err := Load(write(t, "g.yaml", "event_log: {path: e.jsonl}\ncache_dir: "+testwasm.CacheDir()+"\nplugins:\n  sv: {builtin: static-verify, sha256: \""+pin+"\"}\n"+
			"pipelines:\n  p:\n    subject: proposal\n    stages: [{plugin: sv, config: {denyPrefixes: []}}]\n"))
		require.NoError(t, err)
		h, err := host.New(context.Background(), l.Host)
		if pin != hex.EncodeToString(sum[:]) {
			require.Error(t, err)
			err = l.HostError(err)
			assert.True(t, errors.Is(err, host.ErrSHA256Mismatch), err)
			assert.Contains(t, err.Error(), "plugins.sv.sha256")
		} else {
			require.NoError(t, err)
			require.NoError(t, h.Close(context.Background()))
		}
		require.NoError(t, l.Close())
	}
}

func setExecutable(t *testing.T, path string) {
	t.Helper()
	old := executable
	executable = func() (string, error) { return path, nil }
	t.Cleanup(func() { executable = old })
}
