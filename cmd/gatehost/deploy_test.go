package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// The pod's environment as deploy/kubernetes/deployment.yaml sets it: the
// DSN from the gatehost-store Secret, the node id from the pod's name.
// Load opens nothing, so the DSN names a host that never resolves.
const (
	deployDSN    = "postgres://gatehost:x@db.invalid:5432/gatehost?sslmode=disable"
	deployNodeID = "gatehost-6d5f7c9b8-x2x4q"
)

// deployConfigMap returns the data of deploy/kubernetes/configmap.yaml:
// file name → content, as the pod sees the mounted volume.
func deployConfigMap(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/kubernetes/configmap.yaml"))
	require.NoError(t, err)
	var cm struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Data       map[string]string `yaml:"data"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cm))
	require.Equal(t, "v1", cm.APIVersion)
	require.Equal(t, "ConfigMap", cm.Kind)
	require.Contains(t, cm.Data, "gatehost.yaml")
	return cm.Data
}

// loadDeployConfig writes files into a fresh directory, as the ConfigMap
// volume holds them, and loads its gatehost.yaml in the pod's environment.
func loadDeployConfig(t *testing.T, files map[string]string) (*config.Loaded, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return config.Load(filepath.Join(dir, "gatehost.yaml"))
}

// buildDeployConfig builds the loaded config's host with the repository's
// gates in place of the image's modules (each plugins.NAME.path is
// /…/NAME.wasm, built from plugins/NAME/wasm), so that every stage's
// capabilities and config are checked against the real gate.
func buildDeployConfig(t *testing.T, l *config.Loaded) error {
	t.Helper()
	cfg := l.Host
	cfg.CacheDir = testwasm.CacheDir() // the pod's emptyDir is not here
	cfg.Plugins = map[string]host.PluginConfig{}
	for name, p := range l.Host.Plugins {
		gate := strings.TrimSuffix(filepath.Base(p.Path), ".wasm")
		require.True(t, filepath.IsAbs(p.Path), "plugins.%s.path: want the image's absolute path, got %s", name, p.Path)
		path, err := testwasm.Go("plugins/" + gate + "/wasm")
		require.NoError(t, err, "plugins.%s: no gate plugins/%s in the repository", name, gate)
		cfg.Plugins[name] = host.PluginConfig{Path: path, SHA256: p.SHA256}
	}
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	return h.Close(context.Background())
}

// TestDeployConfig: the Kubernetes example's gatehost config loads as a
// PostgreSQL store whose DSN and node id come from the pod's environment,
// with no file-backed event log or sessions, and its pipelines build with
// the real gates.
func TestDeployConfig(t *testing.T) {
	t.Setenv("GATEHOST_STORE_DSN", deployDSN)
	t.Setenv("GATEHOST_STORE_NODE_ID", deployNodeID)
	l, err := loadDeployConfig(t, deployConfigMap(t))
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, config.Store{Kind: config.StorePostgres, DSN: deployDSN, NodeID: deployNodeID,
		OpTimeout: l.Store.OpTimeout, MaxConns: l.Store.MaxConns, Chain: config.ChainNode, Catalog: config.CatalogLocal}, l.Store)
	assert.Empty(t, l.LogPath)
	assert.Empty(t, l.SessionPath)
	assert.Equal(t, "/var/cache/gatehost/wazero", l.Host.CacheDir, "the subdirectory of the deployment's emptyDir volume")
	assert.NotEmpty(t, l.Host.Pipelines)
	require.NoError(t, buildDeployConfig(t, l))
}

// TestDeployConfigRefusesMistakes: a mistake in the example's config — a
// misspelt key, a store setting it excludes, a missing file, a stage its
// gate refuses — is refused by Load or when the host builds, naming it.
// So TestDeployConfig passing means every key of the example is read.
func TestDeployConfigRefusesMistakes(t *testing.T) {
	base := deployConfigMap(t)
	tests := []struct {
		name     string
		old, new string // replaced once in gatehost.yaml ("" old: appended)
		drop     string // a file removed from the volume
		dsn      string // $GATEHOST_STORE_DSN, default deployDSN
		atBuild  bool   // refused by host.New, not Load
		want     string
	}{
		{name: "store key misspelt", old: "  chain: node", new: "  chian: node", want: "store.chian"},
		{name: "store kind misspelt", old: "kind: postgres", new: "kind: postgre", want: `store.kind: "postgre"`},
		{name: "chain value", old: "chain: node", new: "chain: pod", want: `store.chain: "pod"`},
		{name: "file event log beside postgres", new: "event_log:\n  path: /var/lib/gatehost/events.jsonl\n", want: "event_log.path: not used with store.kind postgres"},
		{name: "file sessions beside postgres", new: "sessions:\n  path: /var/lib/gatehost/sessions.json\n", want: "sessions.path: not used with store.kind postgres"},
		{name: "no DSN in the environment", dsn: " ", want: "store.dsn: required"},
		{name: "top-level key misspelt", old: "warm_pools:", new: "warm_pool:", want: "warm_pool"},
		{name: "stage key misspelt", old: "memory_limit: 64MiB", new: "memory_limt: 64MiB", want: "memory_limt"},
		{name: "catalog file missing", drop: "tools.json", want: "catalog.sources[0].path"},
		{name: "stage config key misspelt", old: "max_actions: 100", new: "max_action: 100", atBuild: true, want: `unknown key "max_action"`},
		{name: "capability withheld", old: "capabilities: [catalog, session]", new: "capabilities: [catalog]", atBuild: true, want: `uses capability "session"`},
		{name: "effect class misspelt", old: "confirm_effects: [non_idempotent]", new: "confirm_effects: [nonidempotent]", atBuild: true, want: "confirm_effects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GATEHOST_STORE_DSN", deployDSN)
			if tt.dsn != "" {
				t.Setenv("GATEHOST_STORE_DSN", tt.dsn)
			}
			t.Setenv("GATEHOST_STORE_NODE_ID", deployNodeID)
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			doc := files["gatehost.yaml"]
			if tt.old != "" {
				require.Contains(t, doc, tt.old, "the mutation must change the example")
				doc = strings.Replace(doc, tt.old, tt.new, 1)
			} else {
				doc += tt.new
			}
			files["gatehost.yaml"] = doc
			if tt.drop != "" {
				require.Contains(t, files, tt.drop)
				delete(files, tt.drop)
			}
			l, err := loadDeployConfig(t, files)
			if !tt.atBuild {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.want)
				assert.NotContains(t, err.Error(), deployDSN, "the DSN is a secret")
				return
			}
			require.NoError(t, err)
			defer l.Close()
			err = buildDeployConfig(t, l)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
