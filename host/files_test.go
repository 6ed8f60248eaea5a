//go:build unix

package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/safefile/safefiletest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestNewRefusesSpecialFiles: a plugin path or event log path naming a named
// pipe, a device or a directory — or a module over MaxModuleFileBytes — fails
// New at once with a typed error (host.ErrNotRegular, host.ErrFileTooLarge)
// naming the file.
func TestNewRefusesSpecialFiles(t *testing.T) {
	fx := safefiletest.New(t)
	pipelines := map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "x", Capabilities: []string{"catalog", "schema"}}}}}
	for _, c := range append(fx.NotFiles(), fx.OverCap(t, "big.wasm", host.MaxModuleFileBytes)) {
		t.Run("plugin/"+c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error {
				h, err := host.New(context.Background(), host.Config{CacheDir: testwasm.CacheDir(),
					Plugins: map[string]host.PluginConfig{"x": {Path: c.Path}}, Pipelines: pipelines})
				if err == nil {
					h.Close(context.Background())
				}
				return err
			})
			require.ErrorIs(t, err, host.ErrReadModule)
			require.ErrorIs(t, err, c.Want)
			var le *host.LoadError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "x", le.Plugin)
			assert.Contains(t, err.Error(), c.Path+": "+c.Reason)
		})
	}
	for _, c := range fx.NotFiles() {
		t.Run("event log/"+c.Name, func(t *testing.T) {
			err := safefiletest.Returns(t, func() error {
				h, err := host.New(context.Background(), host.Config{CacheDir: testwasm.CacheDir(),
					EventLogPath: c.Path, Plugins: map[string]host.PluginConfig{"x": {Path: staticVerifyWasm}}, Pipelines: pipelines})
				if err == nil {
					h.Close(context.Background())
				}
				return err
			})
			require.ErrorIs(t, err, host.ErrNotRegular)
			assert.Contains(t, err.Error(), c.Path+": "+c.Reason)
		})
	}
	assert.ErrorIs(t, host.ErrFileTooLarge, fx.OverCap(t, "x", 1).Want)
}
