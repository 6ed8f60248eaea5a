package main

import (
	"strings"

	"github.com/gatehost/gatehost/host"
)

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
