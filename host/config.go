package host

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
)

// Defaults applied to zero fields of Config and StageConfig.
const (
	DefaultTimeout          = time.Second
	DefaultMemoryLimit      = 64 << 20 // bytes
	DefaultMaxResponseBytes = 1 << 20
	DefaultLoadTimeout      = 30 * time.Second
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
	// EventLogPath is the hash-chained JSONL event log; "" means no log
	// (for embedders who audit elsewhere; the CLI always sets one).
	EventLogPath string
	// CacheDir is the wazero compilation cache: "" means
	// os.UserCacheDir()/gatehost/wazero, CacheOff disables it.
	CacheDir string
	// MaxResponseBytes caps one gate answer; default 1 MiB. A larger answer
	// is an abi_violation.
	MaxResponseBytes int
	// PoolSize caps the live instances of each plugin module; default
	// GOMAXPROCS. A run waits for a free instance within its stage deadline.
	PoolSize int
	// LoadTimeout bounds instantiating and describing a module at load
	// time; default 30s.
	LoadTimeout time.Duration
	// Logger receives the host's and guests' log lines; default
	// slog.Default().
	Logger *slog.Logger
	// Now is the run clock; default time.Now. Gates see it as
	// Request.Context.Now.
	Now func() time.Time
	// Domains maps a domain name to its catalog and data source, read by
	// stages granted the query capability. Every view must be evaluable
	// by its source, or New refuses the config.
	Domains map[string]Domain
}

// PluginConfig says where a gate module is.
type PluginConfig struct {
	// Path is the .wasm file. Exactly one of Path and Module is set.
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
	// Timeout is the stage deadline, covering waiting for an instance and
	// the call; default 1s.
	Timeout time.Duration
	// MemoryLimit caps the instance's linear memory in bytes, rounded up
	// to 64 KiB pages; default 64 MiB, at most 4 GiB.
	MemoryLimit uint64
	// Capabilities granted to the stage, such as "catalog". Each must be
	// declared by the plugin's descriptor and known to the host.
	Capabilities []string
	// Config is the stage config, JSON. It must validate against the
	// plugin's config schema. Empty means none.
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
