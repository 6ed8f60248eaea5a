// Package config loads a gatehost config file — YAML, TOML or JSON, with
// GATEHOST_* environment overrides (docs/CONFIGURATION.md) — into a
// host.Config and what the caller must close. The CLI and the server load
// their configs here; an embedder may too.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/oneline"
)

// DefaultFile is the config file Load reads when given no path, relative
// to the working directory.
const DefaultFile = "gatehost.yaml"

// DefaultLogHeadInterval is event_log.head_interval's default: the head
// checkpoint trails the log by at most a second, and a gated call waits
// for one fsync, its records', rather than three.
const DefaultLogHeadInterval = time.Second

// maxLogHeadInterval bounds event_log.head_interval: the head is the log's
// protection against truncation, and a longer lag leaves more of it out.
const maxLogHeadInterval = time.Minute

// resolveHeadInterval is event_log.head_interval: the default when unset,
// 0 (every commit) when set so, and otherwise within 1ms..1m.
func resolveHeadInterval(d time.Duration, set bool) (time.Duration, error) {
	switch {
	case !set:
		return DefaultLogHeadInterval, nil
	case d == 0:
		return 0, nil
	case d < time.Millisecond || d > maxLogHeadInterval:
		return 0, fmt.Errorf("event_log.head_interval: %s: want 0 (the head in every commit) or 1ms to %s", d, maxLogHeadInterval)
	}
	return d, nil
}

// fileConfig is the config file's shape (docs/CONFIGURATION.md). Every key
// is known: an unknown key is an error naming it.
type fileConfig struct {
	Catalog struct {
		Sources []sourceConfig `mapstructure:"sources"`
	} `mapstructure:"catalog"`
	EventLog struct {
		Path         string        `mapstructure:"path"`
		HeadInterval time.Duration `mapstructure:"head_interval"`
	} `mapstructure:"event_log"`
	Sessions struct {
		Path string `mapstructure:"path"`
	} `mapstructure:"sessions"`
	Counters          countersConfig            `mapstructure:"counters"`
	Store             storeConfig               `mapstructure:"store"`
	CacheDir          string                    `mapstructure:"cache_dir"`
	MaxResponseBytes  byteSize                  `mapstructure:"max_response_bytes"`
	PoolSize          int                       `mapstructure:"pool_size"`
	PoolMemoryBudget  byteSize                  `mapstructure:"pool_memory_budget"`
	WarmPools         bool                      `mapstructure:"warm_pools"`
	MaxSubjectBytes   byteSize                  `mapstructure:"max_subject_bytes"`
	MaxConcurrentRuns int                       `mapstructure:"max_concurrent_runs"`
	MaxQueuedRuns     int                       `mapstructure:"max_queued_runs"`
	QueueTimeout      time.Duration             `mapstructure:"queue_timeout"`
	LoadTimeout       time.Duration             `mapstructure:"load_timeout"`
	CompileTimeout    time.Duration             `mapstructure:"compile_timeout"`
	CompileLimits     compileLimits             `mapstructure:"compile_limits"`
	Quarantine        quarantineConfig          `mapstructure:"quarantine"`
	Plugins           map[string]pluginConfig   `mapstructure:"plugins"`
	Pipelines         map[string]pipelineConfig `mapstructure:"pipelines"`
	Checks            map[string]checkConfig    `mapstructure:"checks"`
	Domains           map[string]domainConfig   `mapstructure:"domains"`
	Policy            struct {
		Rules []policyRule `mapstructure:"rules"`
	} `mapstructure:"policy"`
	MCP         MCP               `mapstructure:"mcp"`
	Approvals   approvalsConfig   `mapstructure:"approvals"`
	DecisionLog decisionLogConfig `mapstructure:"decision_log"`
	Tracing     tracingConfig     `mapstructure:"tracing"`
	Auth        authConfig        `mapstructure:"auth"`
}

// compileLimits bounds a module's shape before compilation (host.CompileLimits).
type compileLimits struct {
	ModuleBytes      byteSize `mapstructure:"module_bytes"`
	Functions        int      `mapstructure:"functions"`
	FunctionBytes    byteSize `mapstructure:"function_bytes"`
	Nesting          int      `mapstructure:"nesting"`
	LoopNesting      int      `mapstructure:"loop_nesting"`
	Locals           int      `mapstructure:"locals"`
	LocalBlocks      int      `mapstructure:"local_blocks"`
	TotalLocalBlocks int      `mapstructure:"total_local_blocks"`
	Blocks           int      `mapstructure:"blocks"`
	TotalBlocksSq    int      `mapstructure:"total_blocks_squared"`
	TotalDepth       int      `mapstructure:"total_depth"`
}

// checkConfig is a build/test command the check capability may run.
type checkConfig struct {
	Command []string      `mapstructure:"command"`
	Timeout time.Duration `mapstructure:"timeout"`
	Env     []string      `mapstructure:"env"`
}

// policyRule is a path rule of the embedded policy.
type policyRule struct {
	Name    string   `mapstructure:"name"`
	Paths   []string `mapstructure:"paths"`
	Effect  string   `mapstructure:"effect"`
	Message string   `mapstructure:"message"`
}

type quarantineConfig struct {
	Disabled   bool          `mapstructure:"disabled"`
	Failures   int           `mapstructure:"failures"`
	Window     time.Duration `mapstructure:"window"`
	Backoff    time.Duration `mapstructure:"backoff"`
	MaxBackoff time.Duration `mapstructure:"max_backoff"`
}

type sourceConfig struct {
	Format string `mapstructure:"format"`
	Path   string `mapstructure:"path"`
	Server string `mapstructure:"server"`
}

type pluginConfig struct {
	Path    string `mapstructure:"path"`
	Builtin string `mapstructure:"builtin"`
	SHA256  string `mapstructure:"sha256"`
}

type pipelineConfig struct {
	Subject      string        `mapstructure:"subject"`
	StopOnReject bool          `mapstructure:"stop_on_reject"`
	Stages       []stageConfig `mapstructure:"stages"`
}

type stageConfig struct {
	Name         string         `mapstructure:"name"`
	Plugin       string         `mapstructure:"plugin"`
	Mode         string         `mapstructure:"mode"`
	Timeout      time.Duration  `mapstructure:"timeout"`
	MemoryLimit  byteSize       `mapstructure:"memory_limit"`
	Capabilities []string       `mapstructure:"capabilities"`
	Config       map[string]any `mapstructure:"config"`
}

// byteSize is a size in bytes, written as an integer or with a unit:
// 64MiB, 512KiB, 1GiB, 10MB, 100kB.
type byteSize uint64

var sizeUnits = []struct {
	suffix string
	mult   uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1},
}

// ParseSize parses a size in bytes: an integer, optionally followed by a
// unit (B, kB/KB, MB, GB in powers of 1000; KiB, MiB, GiB in powers of
// 1024), such as 64MiB. The error quotes s whole; sizes of 2^63 bytes or
// more are refused.
func ParseSize(s string) (uint64, error) {
	n, err := parseSize(s)
	return uint64(n), err
}

func parseSize(orig string) (byteSize, error) {
	s := strings.TrimSpace(orig)
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (use bytes or a unit such as 64MiB)", orig)
	}
	if n > (1<<63)/mult {
		return 0, fmt.Errorf("%q is too large (at most 2^63 bytes)", orig)
	}
	return byteSize(n * mult), nil
}

func sizeHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[byteSize]() {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return parseSize(v)
	case int:
		if v < 0 {
			return nil, fmt.Errorf("size %d is negative", v)
		}
		return byteSize(v), nil
	}
	return data, nil
}

// durationHook parses a duration written as a string, quoting the whole
// value when it is not one.
func durationHook(from reflect.Type, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	d, err := time.ParseDuration(data.(string))
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration (such as 30s, 2m or 1h30m)", data)
	}
	return d, nil
}

// envKeys are the keys a GATEHOST_* variable may override, such as
// GATEHOST_EVENT_LOG_PATH for event_log.path. Nothing else is read from
// the environment; in particular no stage's config: block.
var envKeys = []string{"event_log.path", "sessions.path", "store.kind", "store.dsn", "store.node_id", "cache_dir", "max_response_bytes", "pool_size", "pool_memory_budget"}

// envName is the variable that overrides key.
func envName(key string) string {
	return "GATEHOST_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// formats are the config file formats, by extension.
var formats = []string{"yaml", "yml", "toml", "json"}

// Loaded is a config file turned into what the host needs.
type Loaded struct {
	// File is the path of the config file read.
	File string
	// Host is the host's configuration. Its Domains hold open data
	// sources: Close closes them.
	Host host.Config
	// LogPath is the event log file (event_log.path, resolved).
	LogPath string
	// LogHeadInterval is how long the file log's head checkpoint may
	// trail acknowledged records (event_log.head_interval, default
	// DefaultLogHeadInterval; 0 replaces it in every commit); see
	// eventlog.Options.HeadInterval.
	LogHeadInterval time.Duration
	// SessionPath is the session file (sessions.path, resolved); ""
	// keeps sessions in memory.
	SessionPath string
	// MCP is the mcp: section, read by gatehost mcp.
	MCP MCP
	// Approvals is the approvals: section, read by gatehost serve and
	// gatehost mcp.
	Approvals Approvals
	// FileCatalog is true when catalog.sources names at least one file:
	// the catalog is then known at load (see CheckToolReferences).
	FileCatalog bool
	// Store is the store: section: where sessions, the event log and
	// (optionally) the catalog live. Load opens nothing of it: the
	// composition root does (compose.OpenStore), once for all reloads.
	Store Store
	// DecisionLog is the decision_log: section, read by gatehost serve.
	DecisionLog DecisionLog
	// Tracing is the tracing: section (server.NewTracer).
	Tracing Tracing
	// Auth is the auth: section, read by gatehost serve and mcp --listen.
	Auth Auth
	// Builtins maps each plugin given as builtin: NAME to NAME; its
	// Host.Plugins entry holds the module's resolved path (ResolveBuiltin).
	Builtins map[string]string
}

// Close closes what Load opened: each domain's data source. It is safe to
// call on a nil *Loaded and more than once.
func (l *Loaded) Close() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, d := range l.Host.Domains {
		errs = append(errs, d.Source.Close())
	}
	l.Host.Domains = nil
	return errors.Join(errs...)
}

// Load reads the config file at path ("" is DefaultFile) — YAML, TOML or
// JSON by its extension — with GATEHOST_* environment overrides of the
// keys in docs/CONFIGURATION.md, and returns the host configuration it
// describes. Relative paths in the file are relative to its directory.
//
// A stage's config: block is passed to its gate as written, keys in the
// author's case; the loader folds every other map key (plugin and
// pipeline names) to lower case, as docs/CONFIGURATION.md says.
//
// Errors name the file and the key as a dotted path ("config F:
// pipelines.plan.stages[0].timeout: …"), or the environment variable and
// its value when the bad value came from one ("GATEHOST_POOL_SIZE=\"x\":
// …"). On error nothing is left open.
func Load(path string) (*Loaded, error) { return LoadWith(path, Options{}) }

// Options are what the caller of LoadWith knows beyond the file.
type Options struct {
	// Upstreams are MCP stdio upstreams given outside the file (gatehost
	// mcp's command after --), name → command. A domain var taken from an
	// upstream's command (domains.NAME.vars) reads them before
	// mcp.upstreams.
	Upstreams map[string][]string
}

// LoadWith is Load, with what the caller knows beyond the file.
func LoadWith(path string, o Options) (*Loaded, error) {
	if path == "" {
		path = DefaultFile
	}
	// Viper would open the file itself, and wait forever on a named pipe:
	// it gets the bytes of a checked, capped read instead.
	src, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if !slices.Contains(formats, ext) {
		return nil, fmt.Errorf("config %s: unsupported config type %q (name it .yaml, .yml, .toml or .json)", path, ext)
	}
	v := viper.New()
	v.SetConfigType(ext)
	v.SetEnvPrefix("GATEHOST")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	for _, k := range envKeys {
		if err := v.BindEnv(k); err != nil {
			return nil, err
		}
	}
	if err := v.ReadConfig(bytes.NewReader(src)); err != nil {
		return nil, fmt.Errorf("config %s: %s", path, oneline.Of(err.Error()))
	}
	var fc fileConfig
	hook := viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		durationHook, sizeHook))
	if err := v.UnmarshalExact(&fc, hook); err != nil {
		return nil, decodeError(path, err)
	}
	// Viper folds every key to lower case, and a gate's config schema may
	// use any case: stage configs come from the document as written.
	stageConfigs, err := rawStageConfigs(ext, src)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	base := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	// The CLI never decides unaudited: an acceptance nobody can verify
	// later is not one (embedders may choose otherwise). So the file
	// store needs event_log.path, and the PostgreSQL store holds the log.
	st, err := resolveStore(fc.Store, fc.EventLog.Path, fc.Sessions.Path, rel)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	auth, err := resolveAuth(fc.Auth, rel)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	headInterval, err := resolveHeadInterval(fc.EventLog.HeadInterval, v.IsSet("event_log.head_interval"))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	l := &Loaded{File: path, LogPath: rel(fc.EventLog.Path), LogHeadInterval: headInterval, SessionPath: rel(fc.Sessions.Path), MCP: fc.MCP, Store: st, Auth: auth}
	if l.MCP.Baseline.Path != "" {
		l.MCP.Baseline.Path = rel(l.MCP.Baseline.Path)
	}
	if err := resolveMCPCredentials(&l.MCP, rel); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if l.Approvals, err = resolveApprovals(fc.Approvals, fc.MCP.ApprovalTTL, st, l.LogPath, rel); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if l.DecisionLog, err = resolveDecisionLog(fc.DecisionLog, l.LogPath, rel); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if l.Tracing, err = resolveTracing(fc.Tracing); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	windows, err := fc.Counters.durations()
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg := host.Config{
		CounterWindows:    windows,
		EventLogPath:      l.LogPath,
		CacheDir:          fc.CacheDir,
		MaxResponseBytes:  int(fc.MaxResponseBytes),
		PoolSize:          fc.PoolSize,
		PoolMemoryBudget:  uint64(fc.PoolMemoryBudget),
		WarmPools:         fc.WarmPools,
		MaxSubjectBytes:   int(min(fc.MaxSubjectBytes, 1<<40)),
		MaxConcurrentRuns: fc.MaxConcurrentRuns,
		MaxQueuedRuns:     fc.MaxQueuedRuns,
		QueueTimeout:      fc.QueueTimeout,
		LoadTimeout:       fc.LoadTimeout,
		CompileTimeout:    fc.CompileTimeout,
		CompileLimits: host.CompileLimits{
			ModuleBytes: int(min(fc.CompileLimits.ModuleBytes, 1<<40)), Functions: fc.CompileLimits.Functions,
			FunctionBytes: int(min(fc.CompileLimits.FunctionBytes, 1<<40)), Nesting: fc.CompileLimits.Nesting,
			LoopNesting: fc.CompileLimits.LoopNesting, Locals: fc.CompileLimits.Locals,
			LocalBlocks: fc.CompileLimits.LocalBlocks, TotalLocalBlocks: fc.CompileLimits.TotalLocalBlocks,
			TotalDepth: fc.CompileLimits.TotalDepth, Blocks: fc.CompileLimits.Blocks,
			TotalBlocksSquared: fc.CompileLimits.TotalBlocksSq,
		},
		Quarantine: host.QuarantineConfig{
			Disabled: fc.Quarantine.Disabled, Failures: fc.Quarantine.Failures, Window: fc.Quarantine.Window,
			Backoff: fc.Quarantine.Backoff, MaxBackoff: fc.Quarantine.MaxBackoff,
		},
		Plugins:   map[string]host.PluginConfig{},
		Pipelines: map[string]host.PipelineConfig{},
	}
	if cfg.CacheDir != "" && cfg.CacheDir != host.CacheOff {
		cfg.CacheDir = rel(cfg.CacheDir)
	}
	for _, name := range slices.Sorted(maps.Keys(fc.Plugins)) {
		p := fc.Plugins[name]
		switch {
		case p.Path != "" && p.Builtin != "":
			return nil, fmt.Errorf("config %s: plugins.%s: path and builtin are exclusive: give one", path, name)
		case p.Builtin != "":
			mod, err := ResolveBuiltin(p.Builtin)
			if err != nil {
				return nil, fmt.Errorf("config %s: plugins.%s.builtin: %w", path, name, err)
			}
			if l.Builtins == nil {
				l.Builtins = map[string]string{}
			}
			l.Builtins[name] = p.Builtin
			cfg.Plugins[name] = host.PluginConfig{Path: mod, SHA256: p.SHA256}
		case p.Path == "":
			return nil, fmt.Errorf("config %s: plugins.%s.path: required (or builtin: one of %s)", path, name, strings.Join(Builtins, ", "))
		default:
			cfg.Plugins[name] = host.PluginConfig{Path: rel(p.Path), SHA256: p.SHA256}
		}
	}
	if err := checkConfiguredPaths(&cfg, l.SessionPath, l.Builtins); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	for name, p := range fc.Pipelines {
		pc := host.PipelineConfig{Subject: abi.SubjectKind(p.Subject), StopOnReject: p.StopOnReject}
		for i, s := range p.Stages {
			raw, err := stageConfigs.config(name, i)
			if err == nil && l.Builtins[strings.ToLower(s.Plugin)] == PolicyGate {
				raw, err = policyStageConfig(raw, rel)
			}
			if err != nil {
				return nil, fmt.Errorf("config %s: pipelines.%s.stages[%d].config: %w", path, name, i, err)
			}
			// Viper lower-cases map keys, so plugin names are matched
			// case-insensitively: lower-case the references too.
			pc.Stages = append(pc.Stages, host.StageConfig{
				Name: s.Name, Plugin: strings.ToLower(s.Plugin), Mode: host.Mode(s.Mode), Timeout: s.Timeout,
				MemoryLimit: uint64(s.MemoryLimit), Capabilities: s.Capabilities, Config: raw,
			})
		}
		cfg.Pipelines[name] = pc
	}
	if len(fc.Checks) > 0 {
		cfg.Checks = map[string]host.CheckCommand{}
		for name, c := range fc.Checks {
			cfg.Checks[name] = host.CheckCommand{Argv: c.Command, Timeout: c.Timeout, Env: c.Env}
		}
	}
	rules := make([]host.PathRule, len(fc.Policy.Rules))
	for i, r := range fc.Policy.Rules {
		rules[i] = host.PathRule{Name: r.Name, Paths: r.Paths, Effect: r.Effect, Message: r.Message}
	}
	pol, err := host.NewPathPolicy(rules)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Policy = pol
	store, err := catalogLoader(fc.Catalog.Sources, rel)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	cfg.Catalog = store
	l.FileCatalog = len(fc.Catalog.Sources) > 0
	if err := validatePolicyStages(&cfg, l); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if l.SessionPath != "" {
		cfg.Sessions = session.NewFileStore(l.SessionPath)
	}
	ups := upstreamCommands(o.Upstreams, fc.MCP.Upstreams)
	if cfg.Domains, err = openDomains(context.Background(), fc.Domains, rel, ups); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	l.Host = cfg
	return l, nil
}
