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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/engine"
	"github.com/gatehost/gatehost/internal/hostkit"
)

// Host runs pipelines of gates. It is safe for concurrent use; Close it when
// done.
type Host struct {
	cfg       Config
	logger    *slog.Logger
	catalog   *catalog.Store
	sessions  session.Store
	counters  counter.Store
	windows   []time.Duration // Config.CounterWindows, sorted
	counting  bool            // some stage is granted the counters capability
	log       eventlog.Appender
	ownLog    *eventlog.Log             // the log the host opened, and closes
	engines   map[uint32]*engine.Engine // by memory limit in pages
	plugins   map[variant]*plugin
	pipelines map[string]*pipeline
	// quarantines holds each plugin's quarantine state, by plugin name.
	quarantines map[string]*quarantine
	// runSlots admits MaxConcurrentRuns runs; queued counts runs waiting.
	runSlots chan struct{}
	queued   atomic.Int64
	// tracer makes the spans of runs; nil when tracing is off.
	tracer trace.Tracer

	closeOnce sync.Once
	closed    atomic.Bool

	// queryDigest names the content of the domains' query.capability
	// answers (context.query_digest); "" when there are no domains.
	queryDigest string
	// onHostCall, when set (tests only), is called with the operation of
	// every host call a guest makes, before it is answered.
	onHostCall func(op string)
	// onServe, when set (tests only), is called with the operation of
	// every granted host call, on the goroutine that serves it.
	onServe func(op string)
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
	quarantine   *quarantine
	config       []byte // validated, compact JSON; nil for none
	configWire   []byte // config as a request carries it (encodeRequest)
	wireDigest   string // config_digest of configWire
	configDigest string
	refs         []ToolReference // the config's tool references (ToolReferences)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// New validates cfg, loads every plugin a stage uses, and opens the event
// log. Any fault refuses the whole host: a *ConfigError for a bad field, a
// *LoadError (errors.Is one of the Err* kinds) for a module, or an event log
// error. The host keeps a copy of cfg: changing cfg's maps and slices after
// New returns changes nothing in the host.
//
// New works in stages: normalize (every default and every check that needs
// no module, once), plan (the plugin variants the pipelines use), compile
// (all of them, in parallel), load (instantiate, describe, and check each
// stage against its gate's descriptor).
func New(ctx context.Context, cfg Config) (*Host, error) {
	ncfg, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	h := &Host{
		cfg:         ncfg,
		logger:      ncfg.Logger,
		catalog:     ncfg.Catalog,
		sessions:    ncfg.Sessions,
		engines:     map[uint32]*engine.Engine{},
		plugins:     map[variant]*plugin{},
		pipelines:   map[string]*pipeline{},
		quarantines: map[string]*quarantine{},
		runSlots:    make(chan struct{}, ncfg.MaxConcurrentRuns),
		tracer:      newTracer(ncfg.TracerProvider),
	}
	h.cfg.partialGrants = hostkit.PartialGrants(ctx)
	if h.catalog == nil {
		if h.catalog, err = catalog.NewStore(); err != nil {
			return nil, err
		}
	}
	if h.sessions == nil {
		h.sessions = session.NewMemStore()
	}
	h.counters, h.windows = ncfg.Counters, ncfg.CounterWindows
	if h.counters == nil {
		h.counters = counter.NewMemStore(maxWindow(h.windows))
	}
	if err := h.prepareDomains(ctx); err != nil {
		return nil, err
	}
	if err := h.build(ctx); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	h.counting = h.readsCounters()
	if h.cfg.WarmPools {
		if err := h.warm(ctx, h.cfg.LoadTimeout); err != nil {
			_ = h.Close(context.Background())
			return nil, err
		}
	}
	if err := h.openEventLog(); err != nil {
		_ = h.Close(context.Background())
		return nil, err
	}
	return h, nil
}

// build plans, compiles and loads the pipelines of the normalized config.
func (h *Host) build(ctx context.Context) error {
	if len(h.cfg.Pipelines) == 0 && len(h.cfg.Plugins) > 0 {
		h.logger.Warn("host: no pipelines configured")
	}
	pl := h.plan()
	modules, err := h.compileAll(ctx, pl)
	if err != nil {
		return err
	}
	for _, pname := range pl.pipelines {
		p, err := h.loadPipeline(ctx, pname, modules)
		if err != nil {
			return err
		}
		h.pipelines[pname] = p
	}
	return nil
}

// loadPipeline loads the stages of a pipeline of the normalized config.
func (h *Host) loadPipeline(ctx context.Context, pname string, modules map[variant]compiledModule) (*pipeline, error) {
	pc := h.cfg.Pipelines[pname]
	p := &pipeline{name: pname, cfg: pc}
	enforcing := false
	for i, sc := range pc.Stages {
		s, err := h.loadStage(ctx, fmt.Sprintf("pipelines.%s.stages[%d]", pname, i), pc.Subject, sc, modules)
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, s)
		enforcing = enforcing || sc.Mode == Enforce
	}
	if !enforcing {
		h.logger.Warn("host: pipeline has no enforcing stage; every run will be inconclusive", "pipeline", pname)
	}
	return p, nil
}

// loadStage loads the stage's plugin variant (once per host) and checks the
// stage against the gate's descriptor: subject kind, capabilities (every
// grant declared; every declared capability granted, unless grants may be
// partial), and the stage config against the gate's config schema. field is
// the stage's key path, for errors.
func (h *Host) loadStage(ctx context.Context, field string, kind abi.SubjectKind, sc StageConfig, modules map[variant]compiledModule) (*stage, error) {
	pl, err := h.plugin(ctx, variantOf(sc), modules[variantOf(sc)])
	if err != nil {
		return nil, err
	}
	d := pl.descriptor
	if !slices.Contains(d.SubjectKinds, kind) {
		return nil, &LoadError{Plugin: sc.Plugin, Stage: sc.Name, Err: fmt.Errorf("%w: gate handles %v, pipeline checks %s", ErrDescriptor, d.SubjectKinds, kind)}
	}
	if !h.cfg.partialGrants { // a conformance run withholding on purpose takes grants literally
		sc.Capabilities = impliedGrants(sc.Capabilities, d.Capabilities)
	}
	for _, c := range sc.Capabilities {
		if !slices.Contains(d.Capabilities, c) {
			return nil, cfgErr(field+".capabilities", "plugin %s does not declare capability %q (declares %v)", sc.Plugin, c, d.Capabilities)
		}
	}
	if !h.cfg.partialGrants {
		for _, c := range d.Capabilities {
			if !slices.Contains(sc.Capabilities, c) {
				return nil, cfgErr(field+".capabilities", "stage %s: gate %s uses capability %q but the stage does not grant it (capabilities: %v)",
					sc.Name, d.Name, c, sc.Capabilities)
			}
		}
	}
	conf, err := pl.validateConfig(field+".config", sc.Config)
	if err != nil {
		return nil, err
	}
	q, ok := h.quarantines[sc.Plugin]
	if !ok {
		q = newQuarantine(h.cfg.Quarantine)
		h.quarantines[sc.Plugin] = q
	}
	var refs []ToolReference
	if conf != nil && pl.schemaDoc != nil {
		doc, err := abischema.Decode(conf)
		if err != nil {
			return nil, &ConfigError{Field: field + ".config", Reason: "not one JSON value", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
		}
		refs = collectRefs(field+".config", pl.schemaDoc, doc)
	}
	wire, err := wireConfig(conf)
	if err != nil {
		return nil, &ConfigError{Field: field + ".config", Reason: "not one JSON value", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
	}
	return &stage{cfg: sc, plugin: pl, quarantine: q, config: conf, configWire: wire, wireDigest: configDigest(wire), configDigest: digest(conf), refs: refs}, nil
}

// impliedGrants returns granted with the capabilities that granting
// another implies, for a gate that declares them: catalog implies schema
// (abi/SPEC.md §7.13), since every schema schema.validate checks against
// is one catalog.get would hand the gate whole. A stage written before
// the schema capability existed keeps loading.
func impliedGrants(granted, declared []string) []string {
	if !slices.Contains(granted, abi.CapabilityCatalog) {
		return granted
	}
	out := granted
	// schema and counters read only what the catalog grant already shows a
	// stage: the pinned snapshot's schemas, and the run's own counts.
	for _, c := range []string{abi.CapabilitySchema, abi.CapabilityCounters} {
		if slices.Contains(declared, c) && !slices.Contains(out, c) {
			out = append(slices.Clone(out), c)
		}
	}
	return out
}

// plugin returns the loaded plugin variant key, loading it from its compiled
// module on first use.
func (h *Host) plugin(ctx context.Context, key variant, m compiledModule) (*plugin, error) {
	if p, ok := h.plugins[key]; ok {
		return p, nil
	}
	start := time.Now()
	p, err := load(ctx, key.plugin, m.precompiled, m.sum, poolSize(h.cfg, key.pages), h.cfg.LoadTimeout)
	if err != nil {
		return nil, err
	}
	p.pool.onInstantiate = h.cfg.onInstantiate
	h.logger.Debug("host: plugin loaded", "plugin", key.plugin, "gate", p.descriptor.Name, "version", p.descriptor.Version,
		"sha256", m.sum, "memory_pages", key.pages, "took", time.Since(start))
	h.plugins[key] = p
	return p, nil
}

// openEventLog adopts Config.EventLog or opens Config.EventLogPath.
func (h *Host) openEventLog() error {
	if h.cfg.EventLog != nil {
		h.log = h.cfg.EventLog
		return nil
	}
	if h.cfg.EventLogPath == "" {
		return nil
	}
	l, err := eventlog.Open(h.cfg.EventLogPath, eventlog.Options{Logger: h.logger})
	if err != nil {
		return fmt.Errorf("host: event log: %w", err)
	}
	h.log, h.ownLog = l, l
	return nil
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
		Calls: calls{h.logger}, Logger: h.logger, Interrupt: h.cfg.interrupt})
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
		if h.ownLog != nil {
			err = errors.Join(err, h.ownLog.Close())
		}
	})
	return err
}
