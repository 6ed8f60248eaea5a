package host

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/engine"
)

// Defaults applied to zero fields of Config and StageConfig.
const (
	DefaultTimeout          = time.Second
	DefaultMemoryLimit      = 64 << 20 // bytes
	DefaultMaxResponseBytes = 1 << 20
	DefaultLoadTimeout      = 30 * time.Second
	DefaultCompileTimeout   = 5 * time.Minute
	// MaxResponseBytesLimit is the largest MaxResponseBytes accepted.
	MaxResponseBytesLimit = 64 << 20
	// MaxSubjectBytes caps the subject of one run.
	MaxSubjectBytes = 4 << 20
)

// CacheOff as Config.CacheDir disables the on-disk compilation cache.
const CacheOff = "off"

// Config configures a Host. Its zero value is valid but empty: a host with no
// plugins and no pipelines. Zero fields take the documented defaults.
type Config struct {
	// Plugins maps a plugin name to where its module is.
	Plugins map[string]PluginConfig
	// Pipelines maps a pipeline name to its stages.
	Pipelines map[string]PipelineConfig
	// Catalog is the tool catalog the host owns from now on; nil means an
	// empty catalog. Mutate it through Host.Catalog.
	Catalog *catalog.Store
	// Sessions holds agent sessions' tool sets, read by the session
	// capability; nil means a new in-memory store (session.MemStore).
	Sessions session.Store
	// Counters keeps the counts of accepted tool calls the counters
	// capability answers with; nil means a new in-memory store
	// (counter.MemStore) keeping calls for the longest CounterWindows.
	Counters counter.Store
	// CounterWindows are the windows the host counts a session's and a
	// principal's accepted calls over (abi.ValidWindow each, at most
	// MaxCounterWindows, no two alike); none counts only a session's
	// calls since its first.
	CounterWindows []time.Duration
	// EventLogPath is the hash-chained JSONL event log; "" means no log
	// (for embedders who audit elsewhere; the CLI always sets one). A path
	// that exists must be a regular file (ErrNotRegular otherwise).
	EventLogPath string
	// EventLog is an already-open event log (a file *eventlog.Log, or a
	// store's, such as store/postgres's) the host appends to instead of opening
	// EventLogPath (set at most one of the two). The host never
	// closes it: its owner does, after every host using it is closed. This
	// lets hosts that replace one another (a server's reload) share one
	// writer, whose group commits batch every host's records.
	EventLog eventlog.Appender
	// Hooks receives decisions and quarantine changes, for metrics; nil
	// means none.
	Hooks *Hooks
	// TracerProvider makes the spans of every Check
	// (docs/IDENTITY-AND-TRACING.md "Tracing": SpanDecision, SpanStage); nil
	// means no tracing, at no cost.
	TracerProvider trace.TracerProvider
	// CacheDir is the compilation cache: "" means
	// os.UserCacheDir()/gatehost/wazero, CacheOff disables it. Its entries
	// are authenticated with a key kept in it (docs/CONFIGURATION.md
	// "Compilation cache"); New refuses, with a *ConfigError for cache_dir
	// wrapping ErrCacheUnsafe, a directory or key other users could write.
	CacheDir string
	// MaxResponseBytes caps one gate answer; default 1 MiB, at most
	// MaxResponseBytesLimit. A larger answer is an abi_violation.
	MaxResponseBytes int
	// PoolSize caps the live instances of each plugin module; default
	// GOMAXPROCS, since a run holds an instance only while its guest runs
	// on a CPU: more instances than CPUs add memory, not throughput. A run
	// waits for a free instance within its stage deadline.
	PoolSize int
	// PoolMemoryBudget, in bytes, caps the guest memory of each pool (one
	// plugin at one memory limit): the pool holds at most
	// PoolMemoryBudget / memory limit instances, counting each at its
	// stage's MemoryLimit (rounded up to 64 KiB pages), the most its linear
	// memory can reach. It lowers PoolSize, never raises it. 0 means no
	// budget. A budget below one instance of a stage refuses the config
	// (a *ConfigError for pool_memory_budget wrapping ErrPoolBudget).
	PoolMemoryBudget uint64
	// WarmPools makes New fill every pool to its size before it returns
	// (see Host.Warm), bounded by LoadTimeout per plugin, so that the first
	// concurrent runs pay no instantiation; a failure refuses the host with
	// a *LoadError. Off, an instance is made when a run first needs it.
	WarmPools bool
	// LoadTimeout bounds instantiating and describing a module at load
	// time; default 30s.
	LoadTimeout time.Duration
	// CompileTimeout bounds compiling one module; default 5m. A module
	// not compiled by then refuses the host (ErrCompileTimeout); its
	// compile, which cannot be interrupted, finishes in the background,
	// bounded by CompileLimits.
	CompileTimeout time.Duration
	// CompileLimits bounds the shape of a module before it is compiled
	// (nesting depth, locals, function sizes...); zero fields take
	// DefaultCompileLimits. A module over one is refused with
	// ErrTooComplex naming the limit.
	CompileLimits CompileLimits
	// Logger receives the host's and guests' log lines; default
	// slog.Default().
	Logger *slog.Logger
	// Now is the run clock; default time.Now. Gates see it as
	// Request.Context.Now, and quarantine backoffs are measured on it.
	Now func() time.Time
	// Policy answers the policy capability; nil means PathPolicy{} (no
	// rules: every change allowed). See cap_policy.go.
	Policy Policy
	// Checks are the build/test commands the check capability may run,
	// by name. A gate names one; it never supplies a command line.
	Checks map[string]CheckCommand

	// Confirmer resolves RunOptions.ConfirmationToken against each run's
	// pinned catalog snapshot; nil confirms the call's tool by its catalog
	// id (see Confirmer).
	Confirmer Confirmer

	// Limits (docs/CONFIGURATION.md "Limits"). Zero fields take the defaults.

	// MaxSubjectBytes caps the subject of one run; default 4 MiB
	// (MaxSubjectBytes). A larger subject is refused with ErrBadSubject.
	MaxSubjectBytes int
	// MaxConcurrentRuns caps the runs in progress at once; default
	// 4×GOMAXPROCS. A run over the cap waits (see QueueTimeout).
	MaxConcurrentRuns int
	// MaxQueuedRuns caps the runs waiting for a slot; default
	// 4×MaxConcurrentRuns. A run beyond it is inconclusive with
	// host_overloaded at once: the queue is never unbounded.
	MaxQueuedRuns int
	// QueueTimeout bounds a queued run's wait when its context has no
	// earlier deadline; default 1s. Then it is inconclusive with
	// host_overloaded.
	QueueTimeout time.Duration
	// Quarantine sets crash-loop protection; see QuarantineConfig.
	Quarantine QuarantineConfig
	// Domains maps a domain name to its catalog and data source, read by
	// stages granted the query capability. Every view must be evaluable
	// by its source, or New refuses the config.
	Domains map[string]Domain

	// OnlyPipeline, when set, makes New check every pipeline's config but
	// compile and load only the plugins of this pipeline, and serve only
	// it: for one-shot commands, whose cold start is mostly compilation.
	// Checks that need a plugin (its descriptor, its config schema) are
	// then made for this pipeline alone. It must name a pipeline.
	OnlyPipeline string

	// interrupt is how guests are stopped at their deadline; only
	// benchmarks of its cost change it (through export_test.go).
	interrupt engine.Interrupt
	// onInstantiate, when set (tests only, through export_test.go), is
	// called before a pool makes an instance; its error fails that
	// instantiation, as the engine's would.
	onInstantiate func() error
	// partialGrants lets a stage withhold capabilities its gate declares,
	// which New otherwise refuses: for conformance and host tests of how a
	// gate copes with a denied call (set from hostkit.WithPartialGrants).
	partialGrants bool
}

// CompileLimits bounds a module's shape before compilation; see
// engine.Limits for each field.
type CompileLimits = engine.Limits

// DefaultCompileLimits are the CompileLimits of zero fields.
var DefaultCompileLimits = engine.DefaultLimits

// Defaults of the run limits.
const (
	DefaultQueueTimeout = time.Second
	// MaxPoolSize caps Config.PoolSize.
	MaxPoolSize = 1024
)

// PluginConfig says where a gate module is.
type PluginConfig struct {
	// Path is the .wasm file. Exactly one of Path and Module is set. It
	// must be a regular file (links followed) of at most
	// MaxModuleFileBytes; anything else is a LoadError matching
	// ErrReadModule and ErrNotRegular or ErrFileTooLarge.
	Path string
	// Module is the module's bytes, for embedders that ship them.
	Module []byte
	// SHA256 optionally pins the module: lowercase or uppercase hex of the
	// SHA-256 of its bytes. A mismatch refuses to load.
	SHA256 string
}

// PipelineConfig is an ordered list of stages over one subject kind.
type PipelineConfig struct {
	// Subject is the kind of subject the pipeline checks.
	Subject abi.SubjectKind
	// StopOnReject stops the run at the first enforcing stage that
	// rejects; the remaining stages are recorded as skipped. When false,
	// every stage runs, for the full diagnosis.
	StopOnReject bool
	// Stages run in order.
	Stages []StageConfig
}

// Mode says whether a stage's verdict counts.
type Mode string

const (
	// Enforce: the stage's verdict decides (see Combine).
	Enforce Mode = "enforce"
	// Advisory: the stage is run and recorded, and never decides.
	Advisory Mode = "advisory"
)

// StageConfig is one stage of a pipeline.
type StageConfig struct {
	// Name is unique within the pipeline; default the plugin name.
	Name string
	// Plugin names an entry of Config.Plugins.
	Plugin string
	// Mode defaults to Enforce.
	Mode Mode
	// Timeout is the stage deadline, covering waiting for an instance, the
	// call and the host's check of the answer; default 1s, at least 1ms.
	// The stage ends at it whatever the guest is doing (abi/SPEC.md §3.3).
	Timeout time.Duration
	// MemoryLimit caps the instance's linear memory in bytes, rounded up
	// to 64 KiB pages; default 64 MiB, at most 4 GiB.
	MemoryLimit uint64
	// Capabilities granted to the stage, such as "catalog". Each must be
	// known to the host and declared by the gate's descriptor, and every
	// capability the descriptor declares must be granted: a gate denied a
	// capability it uses can only answer inconclusive, so New refuses the
	// stage (a *ConfigError for its capabilities) instead.
	Capabilities []string
	// Config is the stage config, JSON. It must validate against the
	// gate's config schema, or New returns a *ConfigError naming the key
	// (pipelines.P.stages[i].config.KEY) and wrapping ErrStageConfig.
	// Empty means none.
	Config json.RawMessage
}

// ConfigError is a Config the host refuses, naming the field.
type ConfigError struct {
	// Field is a dotted path such as pipelines.admission.stages[0].mode.
	Field  string
	Reason string
	Err    error
}

func (e *ConfigError) Error() string {
	s := "config: " + e.Field + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConfigError) Unwrap() error { return e.Err }

func cfgErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
