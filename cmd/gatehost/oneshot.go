package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
)

// openHost is a one-shot command's wiring: the composition root for cfg
// (no decision export: the next long-running process exports the records
// from the log), a host on it, and the config's tool names checked against
// its catalog. closeAll closes the host, then the runtime under it.
func openHost(ctx context.Context, cfg *config.Loaded, logger *slog.Logger) (h *host.Host, closeAll func(), err error) {
	rt, err := compose.Open(ctx, cfg, compose.Options{Logger: logger, Version: buildVersion()})
	if err != nil {
		return nil, nil, err
	}
	if h, err = host.New(ctx, rt.Host()); err != nil {
		_ = rt.Close()
		return nil, nil, cfg.HostError(err)
	}
	closeAll = func() {
		_ = h.Close(context.WithoutCancel(ctx))
		_ = rt.Close()
	}
	if err := cfg.CheckToolReferences(h); err != nil {
		closeAll()
		return nil, nil, err
	}
	return h, closeAll, nil
}

// onlyPipeline sets cfg.OnlyPipeline when name is a configured pipeline, so
// a one-shot command checks the whole config but compiles and loads only
// the plugins that pipeline runs: compiling is most of a cold start
// (docs/PERFORMANCE.md). An unknown or empty name leaves cfg as it is, so
// the usual errors name every pipeline.
func onlyPipeline(cfg *host.Config, name string) {
	if _, ok := cfg.Pipelines[name]; ok && name != "" {
		cfg.OnlyPipeline = name
	}
}

// pipelineFlag is the --pipeline value as the config names pipelines: the
// config loader lower-cases every key, so --pipeline Plan names the
// pipeline a config file spells Plan.
func pipelineFlag(name string) string { return strings.ToLower(name) }
