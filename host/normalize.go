package host

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"
)

// normalize is New's first stage: it applies every default of cfg and makes
// every check that needs no module, once, and returns a copy that shares no
// map or slice with cfg, so that a caller changing its Config after New
// changes nothing in the host. Stages come back with Name, Mode, Timeout and
// MemoryLimit filled in; every later stage reads only the normalized values.
// The error is a *ConfigError naming the field.
func normalize(cfg Config) (Config, error) {
	n := cfg
	n.Logger = cmp.Or(cfg.Logger, slog.Default())
	if n.Now == nil {
		n.Now = time.Now
	}
	n.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	n.PoolSize = cmp.Or(cfg.PoolSize, runtime.GOMAXPROCS(0))
	n.LoadTimeout = cmp.Or(cfg.LoadTimeout, DefaultLoadTimeout)
	n.CompileTimeout = cmp.Or(cfg.CompileTimeout, DefaultCompileTimeout)
	n.MaxSubjectBytes = cmp.Or(cfg.MaxSubjectBytes, MaxSubjectBytes)
	n.MaxConcurrentRuns = cmp.Or(cfg.MaxConcurrentRuns, 4*runtime.GOMAXPROCS(0))
	n.MaxQueuedRuns = cmp.Or(cfg.MaxQueuedRuns, 4*n.MaxConcurrentRuns)
	n.QueueTimeout = cmp.Or(cfg.QueueTimeout, DefaultQueueTimeout)
	n.Quarantine = cfg.Quarantine.withDefaults()
	if err := checkLimits(n); err != nil {
		return Config{}, err
	}
	if err := checkCompileLimits(n.CompileLimits); err != nil {
		return Config{}, err
	}
	if err := checkWindows(cfg.CounterWindows); err != nil {
		return Config{}, err
	}
	n.CounterWindows = slices.Sorted(slices.Values(cfg.CounterWindows))
	if cfg.EventLog != nil && cfg.EventLogPath != "" {
		return Config{}, cfgErr("event_log", "set EventLog or EventLogPath, not both")
	}
	n.Checks = maps.Clone(cfg.Checks)
	for name, c := range n.Checks {
		c.Argv, c.Env = slices.Clone(c.Argv), slices.Clone(c.Env)
		n.Checks[name] = c
	}
	if err := validateChecks(n.Checks); err != nil {
		return Config{}, err
	}
	n.Domains = maps.Clone(cfg.Domains)
	var err error
	if n.Plugins, err = normalizePlugins(cfg.Plugins); err != nil {
		return Config{}, err
	}
	if n.Pipelines, err = normalizePipelines(cfg.Pipelines, n.Plugins); err != nil {
		return Config{}, err
	}
	if err := checkPoolBudget(n); err != nil {
		return Config{}, err
	}
	if n.OnlyPipeline != "" {
		if _, ok := n.Pipelines[n.OnlyPipeline]; !ok {
			return Config{}, cfgErr("only_pipeline", "no pipeline named %q", n.OnlyPipeline)
		}
	}
	return n, nil
}

// checkLimits refuses out-of-range limits of a Config with defaults applied.
func checkLimits(c Config) error {
	q := c.Quarantine
	if err := firstNegative("", []limit{
		{"max_subject_bytes", c.MaxSubjectBytes < 0}, {"max_concurrent_runs", c.MaxConcurrentRuns < 0},
		{"max_queued_runs", c.MaxQueuedRuns < 0}, {"queue_timeout", c.QueueTimeout < 0},
		{"pool_size", c.PoolSize < 0}, {"load_timeout", c.LoadTimeout < 0}, {"compile_timeout", c.CompileTimeout < 0},
		{"quarantine.failures", q.Failures < 0}, {"quarantine.window", q.Window < 0}, {"quarantine.backoff", q.Backoff < 0},
	}); err != nil {
		return err
	}
	switch {
	case c.PoolSize > MaxPoolSize:
		return cfgErr("pool_size", "at most %d", MaxPoolSize)
	case q.MaxBackoff < q.Backoff:
		return cfgErr("quarantine.max_backoff", "must be at least quarantine.backoff (%s)", q.Backoff)
	case c.MaxResponseBytes < 0 || c.MaxResponseBytes > MaxResponseBytesLimit:
		return cfgErr("max_response_bytes", "must be between 1 and %d", MaxResponseBytesLimit)
	}
	return nil
}

// checkCompileLimits refuses negative compile limits, naming the field.
func checkCompileLimits(l CompileLimits) error {
	return firstNegative("compile_limits.", []limit{
		{"module_bytes", l.ModuleBytes < 0}, {"functions", l.Functions < 0}, {"function_bytes", l.FunctionBytes < 0},
		{"nesting", l.Nesting < 0}, {"loop_nesting", l.LoopNesting < 0}, {"locals", l.Locals < 0},
		{"local_blocks", l.LocalBlocks < 0}, {"total_local_blocks", l.TotalLocalBlocks < 0}, {"total_depth", l.TotalDepth < 0},
		{"blocks", l.Blocks < 0}, {"total_blocks_squared", l.TotalBlocksSquared < 0},
	})
}

// limit is a config field and whether its value is negative.
type limit struct {
	field    string
	negative bool
}

// firstNegative refuses the first negative limit, naming prefix+field.
func firstNegative(prefix string, limits []limit) error {
	for _, l := range limits {
		if l.negative {
			return cfgErr(prefix+l.field, "must be positive")
		}
	}
	return nil
}

// normalizePlugins checks every plugin's name, source and pin, and returns
// a copy. A module's bytes are read later, and only for the plugins a
// loaded stage uses.
func normalizePlugins(in map[string]PluginConfig) (map[string]PluginConfig, error) {
	out := make(map[string]PluginConfig, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		pc := in[name]
		switch {
		case !nameRE.MatchString(name):
			return nil, cfgErr("plugins."+name, "name must match %s", nameRE)
		case pc.Path != "" && pc.Module != nil:
			return nil, cfgErr("plugins."+name, "set path or module, not both")
		case pc.Path == "" && len(pc.Module) == 0:
			return nil, cfgErr("plugins."+name+".path", "no module given")
		case pc.SHA256 != "" && (len(pc.SHA256) != 64 || strings.Trim(strings.ToLower(pc.SHA256), "0123456789abcdef") != ""):
			return nil, cfgErr("plugins."+name+".sha256", "must be 64 hex digits")
		}
		pc.Module = bytes.Clone(pc.Module)
		pc.SHA256 = strings.ToLower(pc.SHA256)
		out[name] = pc
	}
	return out, nil
}

// normalizePipelines checks every pipeline and stage and returns a copy with
// the stage defaults applied. plugins is the normalized Config.Plugins.
func normalizePipelines(in map[string]PipelineConfig, plugins map[string]PluginConfig) (map[string]PipelineConfig, error) {
	out := make(map[string]PipelineConfig, len(in))
	for _, pname := range slices.Sorted(maps.Keys(in)) {
		pc := in[pname]
		field := "pipelines." + pname
		switch {
		case !nameRE.MatchString(pname):
			return nil, cfgErr(field, "name must match %s", nameRE)
		case !pc.Subject.Valid():
			return nil, cfgErr(field+".subject", "%q is not one of proposal, tool_call, merge", pc.Subject)
		case len(pc.Stages) == 0:
			return nil, cfgErr(field+".stages", "a pipeline needs at least one stage")
		}
		pc.Stages = slices.Clone(pc.Stages)
		seen := map[string]bool{}
		for i := range pc.Stages {
			sc, err := normalizeStage(fmt.Sprintf("%s.stages[%d]", field, i), pc.Stages[i], plugins, seen)
			if err != nil {
				return nil, err
			}
			pc.Stages[i] = sc
		}
		out[pname] = pc
	}
	return out, nil
}

// normalizeStage applies a stage's defaults and checks it; seen holds the
// names of the pipeline's earlier stages. field is the stage's key path.
func normalizeStage(field string, sc StageConfig, plugins map[string]PluginConfig, seen map[string]bool) (StageConfig, error) {
	sc.Name = cmp.Or(sc.Name, sc.Plugin)
	sc.Mode = cmp.Or(sc.Mode, Enforce)
	sc.Timeout = cmp.Or(sc.Timeout, DefaultTimeout)
	sc.MemoryLimit = cmp.Or(sc.MemoryLimit, DefaultMemoryLimit)
	switch {
	case sc.Plugin == "":
		return sc, cfgErr(field+".plugin", "required")
	case !nameRE.MatchString(sc.Name):
		return sc, cfgErr(field+".name", "must match %s", nameRE)
	case seen[sc.Name]:
		return sc, cfgErr(field+".name", "duplicate stage name %q", sc.Name)
	case sc.Mode != Enforce && sc.Mode != Advisory:
		return sc, cfgErr(field+".mode", "%q is not enforce or advisory", sc.Mode)
	case sc.Timeout < time.Millisecond:
		return sc, cfgErr(field+".timeout", "%v is less than 1ms (write a unit, such as 500ms or 2s)", sc.Timeout)
	case sc.MemoryLimit > 1<<32:
		return sc, cfgErr(field+".memory_limit", "at most 4GiB")
	}
	seen[sc.Name] = true
	if _, ok := plugins[sc.Plugin]; !ok {
		return sc, cfgErr(field+".plugin", "no plugin named %q", sc.Plugin)
	}
	for _, c := range sc.Capabilities {
		if !slices.Contains(knownCapabilities(), c) {
			return sc, cfgErr(field+".capabilities", "unknown capability %q (known: %v)", c, knownCapabilities())
		}
	}
	sc.Capabilities = slices.Clone(sc.Capabilities)
	sc.Config = bytes.Clone(sc.Config)
	return sc, nil
}
