// Package host is gatehost's embeddable host: it loads gates as sandboxed
// WebAssembly modules behind the versioned JSON ABI of package abi, runs them
// in the pipelines an operator configured, and combines their verdicts
// fail-closed into a Decision. A trap, timeout, out-of-memory, malformed or
// oversized answer, ABI mismatch or missing export is never an acceptance.
//
// The host alone owns the tool catalog (immutable snapshots; one run sees one
// snapshot) and the hash-chained event log.
package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/engine"
)

// Host runs pipelines of gates. It is safe for concurrent use; Close it when
// done.
type Host struct {
	cfg       Config
	logger    *slog.Logger
	catalog   *catalog.Store
	sessions  session.Store
	log       *eventlog.Log
	ownLog    bool                      // the host opened log and closes it
	engines   map[uint32]*engine.Engine // by memory limit in pages
	plugins   map[variant]*plugin
	pipelines map[string]*pipeline
	// breakers holds each plugin's quarantine state, by plugin name.
	breakers map[string]*breaker
	// compiled holds the modules precompile compiled, until load takes them.
	compiled map[variant]precompiled
	// runSlots admits MaxConcurrentRuns runs; queued counts runs waiting.
	runSlots chan struct{}
	queued   atomic.Int64

	closeOnce sync.Once
	closed    atomic.Bool
}

type variant struct {
	plugin string
	pages  uint32
}

type pipeline struct {
	name   string
	cfg    PipelineConfig
	stages []*stage
}

type stage struct {
	cfg          StageConfig
	plugin       *plugin
	breaker      *breaker
	config       []byte // validated, compact JSON; nil for none
	configDigest string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// New validates cfg, loads every plugin a stage uses, and opens the event
// log. Any fault refuses the whole host: a *ConfigError for a bad field, a
// *LoadError (errors.Is one of the Err* kinds) for a module, or an event log
// error.
func New(ctx context.Context, cfg Config) (*Host, error) {
	h := &Host{
		cfg:       cfg,
		logger:    cmp.Or(cfg.Logger, slog.Default()),
		catalog:   cfg.Catalog,
		sessions:  cfg.Sessions,
		engines:   map[uint32]*engine.Engine{},
		plugins:   map[variant]*plugin{},
		pipelines: map[string]*pipeline{},
		breakers:  map[string]*breaker{},
	}
	if h.catalog == nil {
		c, err := catalog.NewStore()
		if err != nil {
			return nil, err
		}
		h.catalog = c
	}
	if h.sessions == nil {
		h.sessions = session.NewMemStore()
	}
	h.cfg.MaxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	h.cfg.PoolSize = cmp.Or(cfg.PoolSize, runtime.GOMAXPROCS(0))
	h.cfg.LoadTimeout = cmp.Or(cfg.LoadTimeout, DefaultLoadTimeout)
	h.cfg.CompileTimeout = cmp.Or(cfg.CompileTimeout, DefaultCompileTimeout)
	if h.cfg.Now == nil {
		h.cfg.Now = time.Now
	}
	h.cfg.MaxSubjectBytes = cmp.Or(cfg.MaxSubjectBytes, MaxSubjectBytes)
	h.cfg.MaxConcurrentRuns = cmp.Or(cfg.MaxConcurrentRuns, 4*runtime.GOMAXPROCS(0))
	h.cfg.MaxQueuedRuns = cmp.Or(cfg.MaxQueuedRuns, 4*h.cfg.MaxConcurrentRuns)
	h.cfg.QueueTimeout = cmp.Or(cfg.QueueTimeout, DefaultQueueTimeout)
	h.cfg.Quarantine = cfg.Quarantine.withDefaults()
	q := h.cfg.Quarantine
	switch {
	case h.cfg.MaxSubjectBytes < 0:
		return nil, cfgErr("max_subject_bytes", "must be positive")
	case h.cfg.MaxConcurrentRuns < 0:
		return nil, cfgErr("max_concurrent_runs", "must be positive")
	case h.cfg.MaxQueuedRuns < 0:
		return nil, cfgErr("max_queued_runs", "must be positive")
	case h.cfg.QueueTimeout < 0:
		return nil, cfgErr("queue_timeout", "must be positive")
	case h.cfg.PoolSize > MaxPoolSize:
		return nil, cfgErr("pool_size", "at most %d", MaxPoolSize)
	case q.Failures < 0:
		return nil, cfgErr("quarantine.failures", "must be positive")
	case q.Window < 0:
		return nil, cfgErr("quarantine.window", "must be positive")
	case q.Backoff < 0:
		return nil, cfgErr("quarantine.backoff", "must be positive")
	case q.MaxBackoff < q.Backoff:
		return nil, cfgErr("quarantine.max_backoff", "must be at least quarantine.backoff (%s)", q.Backoff)
	}
	h.runSlots = make(chan struct{}, h.cfg.MaxConcurrentRuns)
	switch {
	case h.cfg.MaxResponseBytes < 0 || h.cfg.MaxResponseBytes > MaxResponseBytesLimit:
		return nil, cfgErr("max_response_bytes", "must be between 1 and %d", MaxResponseBytesLimit)
	case h.cfg.PoolSize < 0:
		return nil, cfgErr("pool_size", "must be positive")
	case h.cfg.LoadTimeout < 0:
		return nil, cfgErr("load_timeout", "must be positive")
	case h.cfg.CompileTimeout < 0:
		return nil, cfgErr("compile_timeout", "must be positive")
	}
	if err := checkCompileLimits(cfg.CompileLimits); err != nil {
		return nil, err
	}
	if err := validateChecks(cfg.Checks); err != nil {
		return nil, err
	}
	if err := h.prepareDomains(ctx); err != nil {
		return nil, err
	}
	if err := h.build(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	if cfg.EventLog != nil {
		if cfg.EventLogPath != "" {
			_ = h.Close(context.Background())
			return nil, cfgErr("event_log", "set EventLog or EventLogPath, not both")
		}
		h.log = cfg.EventLog
	} else if cfg.EventLogPath != "" {
		l, err := eventlog.Open(cfg.EventLogPath, eventlog.Options{Logger: h.logger})
		if err != nil {
			_ = h.Close(context.Background())
			return nil, fmt.Errorf("host: event log: %w", err)
		}
		h.log, h.ownLog = l, true
	}
	return h, nil
}

func (h *Host) build(ctx context.Context) error {
	for name := range h.cfg.Plugins {
		if !nameRE.MatchString(name) {
			return cfgErr("plugins."+name, "name must match %s", nameRE)
		}
	}
	names := slices.Sorted(maps.Keys(h.cfg.Pipelines))
	if len(names) == 0 && len(h.cfg.Plugins) > 0 {
		h.logger.Warn("host: no pipelines configured")
	}
	if h.cfg.OnlyPipeline != "" {
		if _, ok := h.cfg.Pipelines[h.cfg.OnlyPipeline]; !ok {
			return cfgErr("only_pipeline", "no pipeline named %q", h.cfg.OnlyPipeline)
		}
	}
	modules, sums := h.precompile(ctx)
	for _, pname := range names {
		pc := h.cfg.Pipelines[pname]
		field := "pipelines." + pname
		if !nameRE.MatchString(pname) {
			return cfgErr(field, "name must match %s", nameRE)
		}
		if !pc.Subject.Valid() {
			return cfgErr(field+".subject", "%q is not one of proposal, tool_call, merge", pc.Subject)
		}
		if len(pc.Stages) == 0 {
			return cfgErr(field+".stages", "a pipeline needs at least one stage")
		}
		p := &pipeline{name: pname, cfg: pc}
		seen := map[string]bool{}
		enforcing := false
		for i, sc := range pc.Stages {
			sf := fmt.Sprintf("%s.stages[%d]", field, i)
			sc.Name = cmp.Or(sc.Name, sc.Plugin)
			sc.Mode = cmp.Or(sc.Mode, Enforce)
			sc.Timeout = cmp.Or(sc.Timeout, DefaultTimeout)
			sc.MemoryLimit = cmp.Or(sc.MemoryLimit, DefaultMemoryLimit)
			switch {
			case sc.Plugin == "":
				return cfgErr(sf+".plugin", "required")
			case !nameRE.MatchString(sc.Name):
				return cfgErr(sf+".name", "must match %s", nameRE)
			case seen[sc.Name]:
				return cfgErr(sf+".name", "duplicate stage name %q", sc.Name)
			case sc.Mode != Enforce && sc.Mode != Advisory:
				return cfgErr(sf+".mode", "%q is not enforce or advisory", sc.Mode)
			case sc.Timeout < time.Millisecond:
				return cfgErr(sf+".timeout", "%v is less than 1ms (write a unit, such as 500ms or 2s)", sc.Timeout)
			case sc.MemoryLimit > 1<<32:
				return cfgErr(sf+".memory_limit", "at most 4GiB")
			}
			seen[sc.Name] = true
			enforcing = enforcing || sc.Mode == Enforce
			pcfg, ok := h.cfg.Plugins[sc.Plugin]
			if !ok {
				return cfgErr(sf+".plugin", "no plugin named %q", sc.Plugin)
			}
			for _, c := range sc.Capabilities {
				if !slices.Contains(knownCapabilities(), c) {
					return cfgErr(sf+".capabilities", "unknown capability %q (known: %v)", c, knownCapabilities())
				}
			}
			if h.cfg.OnlyPipeline != "" && pname != h.cfg.OnlyPipeline {
				continue // checked, not loaded (Config.OnlyPipeline)
			}
			if _, ok := modules[sc.Plugin]; !ok {
				wasm, sum, err := readModule(sc.Plugin, pcfg)
				if err != nil {
					return err
				}
				modules[sc.Plugin], sums[sc.Plugin] = wasm, sum
			}
			pages := uint32((sc.MemoryLimit + engine.PageSize - 1) / engine.PageSize)
			pl, err := h.plugin(ctx, sc.Plugin, pages, modules[sc.Plugin], sums[sc.Plugin])
			if err != nil {
				return err
			}
			if !slices.Contains(pl.descriptor.SubjectKinds, pc.Subject) {
				return &LoadError{Plugin: sc.Plugin, Stage: sc.Name, Err: fmt.Errorf("%w: gate handles %v, pipeline %s checks %s", ErrDescriptor, pl.descriptor.SubjectKinds, pname, pc.Subject)}
			}
			for _, c := range sc.Capabilities {
				if !slices.Contains(pl.descriptor.Capabilities, c) {
					return cfgErr(sf+".capabilities", "plugin %s does not declare capability %q (declares %v)", sc.Plugin, c, pl.descriptor.Capabilities)
				}
			}
			conf, err := pl.validateConfig(sc.Config)
			if err != nil {
				return &LoadError{Plugin: sc.Plugin, Stage: sc.Name, Err: err}
			}
			br, ok := h.breakers[sc.Plugin]
			if !ok {
				br = newBreaker(h.cfg.Quarantine)
				h.breakers[sc.Plugin] = br
			}
			p.stages = append(p.stages, &stage{cfg: sc, plugin: pl, breaker: br, config: conf, configDigest: digest(conf)})
		}
		if h.cfg.OnlyPipeline != "" && pname != h.cfg.OnlyPipeline {
			continue
		}
		if !enforcing {
			h.logger.Warn("host: pipeline has no enforcing stage; every run will be inconclusive", "pipeline", pname)
		}
		h.pipelines[pname] = p
	}
	return nil
}

func (h *Host) plugin(ctx context.Context, name string, pages uint32, wasm []byte, sum string) (*plugin, error) {
	key := variant{name, pages}
	if p, ok := h.plugins[key]; ok {
		return p, nil
	}
	e, err := h.engine(ctx, pages)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	pre, ok := h.compiled[key]
	delete(h.compiled, key)
	if !ok {
		pre.mod, pre.err = h.compile(ctx, e, wasm)
	}
	p, err := load(ctx, e, name, pre, sum, h.cfg.PoolSize, h.cfg.LoadTimeout)
	if err != nil {
		return nil, err
	}
	h.logger.Debug("host: plugin loaded", "plugin", name, "gate", p.descriptor.Name, "version", p.descriptor.Version,
		"sha256", sum, "memory_pages", pages, "took", time.Since(start))
	h.plugins[key] = p
	return p, nil
}

func (h *Host) engine(ctx context.Context, pages uint32) (*engine.Engine, error) {
	if e, ok := h.engines[pages]; ok {
		return e, nil
	}
	dir, err := h.cacheDir()
	if err != nil {
		return nil, err
	}
	e, err := engine.New(ctx, engine.Options{CacheDir: dir, Limits: h.cfg.CompileLimits, MemoryLimitPages: pages,
		Calls: calls{h.logger}, Logger: h.logger, NoInterrupt: h.cfg.noInterrupt})
	var ce *engine.CacheError
	if errors.As(err, &ce) {
		return nil, &ConfigError{Field: "cache_dir", Reason: "refused", Err: err}
	}
	if err != nil {
		return nil, err
	}
	h.engines[pages] = e
	return e, nil
}

// compile compiles wasm on e within CompileTimeout and ctx.
func (h *Host) compile(ctx context.Context, e *engine.Engine, wasm []byte) (*engine.Module, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.CompileTimeout)
	defer cancel()
	return e.Compile(ctx, wasm)
}

// checkCompileLimits refuses negative compile limits, naming the field.
func checkCompileLimits(l CompileLimits) error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"module_bytes", l.ModuleBytes}, {"functions", l.Functions}, {"function_bytes", l.FunctionBytes},
		{"nesting", l.Nesting}, {"loop_nesting", l.LoopNesting}, {"locals", l.Locals},
		{"local_blocks", l.LocalBlocks}, {"total_local_blocks", l.TotalLocalBlocks}, {"total_depth", l.TotalDepth},
		{"blocks", l.Blocks}, {"total_blocks_squared", l.TotalBlocksSquared},
	} {
		if f.v < 0 {
			return cfgErr("compile_limits."+f.name, "must be positive")
		}
	}
	return nil
}

func (h *Host) cacheDir() (string, error) {
	switch h.cfg.CacheDir {
	case CacheOff:
		return "", nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			h.logger.Warn("host: no user cache dir; compilation cache off", "err", err)
			return "", nil
		}
		return filepath.Join(base, "gatehost", "wazero"), nil
	}
	return h.cfg.CacheDir, nil
}

// Catalog returns the host's tool catalog. Runs pin its snapshot at start;
// updates apply to later runs.
func (h *Host) Catalog() *catalog.Store { return h.catalog }

// PipelineInfo describes a configured pipeline.
type PipelineInfo struct {
	Name    string          `json:"name"`
	Subject abi.SubjectKind `json:"subject"`
	Stages  []string        `json:"stages"`
}

// Pipelines lists the configured pipelines, sorted by name.
func (h *Host) Pipelines() []PipelineInfo {
	out := make([]PipelineInfo, 0, len(h.pipelines))
	for _, name := range slices.Sorted(maps.Keys(h.pipelines)) {
		p := h.pipelines[name]
		info := PipelineInfo{Name: name, Subject: p.cfg.Subject}
		for _, s := range p.stages {
			info.Stages = append(info.Stages, s.cfg.Name)
		}
		out = append(out, info)
	}
	return out
}

// Close releases every module and instance and closes the event log it
// opened (never a Config.EventLog). Runs in progress must have returned.
func (h *Host) Close(ctx context.Context) error {
	var err error
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		for _, p := range h.plugins {
			p.pool.close(ctx)
		}
		for _, e := range h.engines {
			err = errors.Join(err, e.Close(ctx))
		}
		if h.log != nil && h.ownLog {
			err = errors.Join(err, h.log.Close())
		}
	})
	return err
}
