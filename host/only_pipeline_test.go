package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

func TestOnlyPipeline(t *testing.T) {
	cfg := func(only, otherMode string) host.Config {
		return host.Config{
			CacheDir: cacheDir,
			Plugins: map[string]host.PluginConfig{
				"sv":      {Path: staticVerifyWasm},
				"missing": {Path: "/nonexistent/gate.wasm"},
			},
			Pipelines: map[string]host.PipelineConfig{
				"p": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "sv", Timeout: hosttest.Timeout, Capabilities: []string{"catalog", "schema"}}}},
				"q": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "missing", Mode: host.Mode(otherMode)}}},
			},
			OnlyPipeline: only,
		}
	}
	ctx := context.Background()
	t.Run("other pipeline's plugin not loaded", func(t *testing.T) {
		h, err := host.New(ctx, cfg("p", ""))
		require.NoError(t, err)
		defer h.Close(ctx)
		require.Len(t, h.Pipelines(), 1)
		assert.Equal(t, "p", h.Pipelines()[0].Name)
		d, err := h.Check(ctx, "p", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, abi.Inconclusive, d.Verdict)
		_, err = h.Check(ctx, "q", []byte(okProposal), host.RunOptions{})
		assert.ErrorIs(t, err, host.ErrUnknownPipeline)
	})
	t.Run("other pipeline's fields still checked", func(t *testing.T) {
		_, err := host.New(ctx, cfg("p", "maybe"))
		var ce *host.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, err.Error(), "mode")
	})
	t.Run("without it every plugin loads", func(t *testing.T) {
		_, err := host.New(ctx, cfg("", ""))
		assert.ErrorIs(t, err, host.ErrReadModule)
	})
	t.Run("unknown name", func(t *testing.T) {
		_, err := host.New(ctx, cfg("nope", ""))
		assert.ErrorContains(t, err, "only_pipeline")
	})
}
