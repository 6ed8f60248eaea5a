package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/engine"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Kinds of LoadError, for errors.Is. A load error refuses the whole host:
// a pipeline never starts with a stage it cannot run.
var (
	ErrCompile         = engine.ErrCompile
	ErrMissingExport   = engine.ErrMissingExport
	ErrExportType      = engine.ErrExportType
	ErrForbiddenImport = engine.ErrForbiddenImport
	ErrABIVersion      = engine.ErrABIVersion
	ErrInstantiate     = engine.ErrInstantiate
	ErrDescriptor      = engine.ErrDescriptor
	ErrTooComplex      = engine.ErrTooComplex
	ErrCompileTimeout  = engine.ErrCompileTimeout
	// ErrCacheUnsafe: the compilation cache directory or its key is not
	// private to the user running the host (a *ConfigError for cache_dir).
	ErrCacheUnsafe    = engine.ErrCacheUnsafe
	ErrSHA256Mismatch = errors.New("module sha256 does not match its pin")
	ErrReadModule     = errors.New("module cannot be read")
	ErrStageConfig    = errors.New("stage config rejected by the plugin's config schema")
)

// LoadError is a plugin the host refuses to load (reason code load_error).
type LoadError struct {
	Plugin string
	// Stage is set when the fault is in how a stage uses the plugin.
	Stage string
	Err   error
}

func (e *LoadError) Error() string {
	where := "plugin " + e.Plugin
	if e.Stage != "" {
		where = "stage " + e.Stage + " (" + where + ")"
	}
	return abi.ReasonLoadError + ": " + where + ": " + e.Err.Error()
}

func (e *LoadError) Unwrap() error { return e.Err }

// maxDescriptorBytes caps gate_describe's answer.
const maxDescriptorBytes = 1 << 20

// plugin is a loaded module variant: one plugin compiled for one memory
// limit, with its descriptor and its pool of instances.
type plugin struct {
	name       string
	sha256     string
	descriptor abi.Descriptor
	config     *jsonschema.Schema // nil: the gate takes no config
	schemaDoc  any                // the config schema, decoded; for tool references
	module     *engine.Module
	pool       *pool
}

// readModule reads a plugin's module, as normalize checked its config, and
// checks it against its pin; it returns the bytes and their SHA-256 in hex.
func readModule(name string, pc PluginConfig) ([]byte, string, error) {
	wasm := pc.Module
	if pc.Path != "" {
		b, err := safefile.ReadFile(pc.Path, MaxModuleFileBytes)
		if err != nil {
			return nil, "", &LoadError{Plugin: name, Err: fmt.Errorf("%w: %w", ErrReadModule, err)}
		}
		wasm = b
	}
	sum := sha256.Sum256(wasm)
	got := hex.EncodeToString(sum[:])
	if pc.SHA256 != "" && pc.SHA256 != got {
		return nil, "", &LoadError{Plugin: name, Err: fmt.Errorf("%w: pinned %s, module is %s", ErrSHA256Mismatch, pc.SHA256, got)}
	}
	return wasm, got, nil
}

// load takes a compiled module, instantiates one probe instance, checks its
// ABI major and descriptor, and returns the plugin with the probe in its
// pool.
func load(ctx context.Context, name string, pre precompiled, sum string, poolSize int, timeout time.Duration) (*plugin, error) {
	fail := func(err error) error { return &LoadError{Plugin: name, Err: err} }
	// Compilation was bounded by CompileTimeout; instantiation and
	// describe, which run guest code, by LoadTimeout.
	mod, err := pre.mod, pre.err
	if err != nil {
		return nil, fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	probe, err := mod.Instantiate(ctx)
	if err != nil {
		_ = mod.Close(ctx)
		return nil, fail(&engine.LoadError{Kind: ErrInstantiate, Err: err})
	}
	p := &plugin{name: name, sha256: sum, module: mod}
	if err := p.describe(ctx, probe); err != nil {
		_ = probe.Close(ctx)
		_ = mod.Close(ctx)
		return nil, fail(err)
	}
	p.pool = newPool(mod, poolSize)
	p.pool.adopt(probe)
	return p, nil
}

func (p *plugin) describe(ctx context.Context, inst *engine.Instance) error {
	v, err := inst.ABIVersion(ctx)
	if err != nil {
		return &engine.LoadError{Kind: ErrABIVersion, Detail: abi.ExportABIVersion + " failed", Err: err}
	}
	if v != abi.MajorVersion {
		return &engine.LoadError{Kind: ErrABIVersion, Detail: fmt.Sprintf("module speaks %d, host speaks %d", v, abi.MajorVersion)}
	}
	raw, err := inst.Describe(ctx, maxDescriptorBytes)
	if err != nil {
		return &engine.LoadError{Kind: ErrDescriptor, Detail: abi.ExportDescribe + " failed", Err: err}
	}
	if err := abischema.Validate(abi.SchemaDescriptor, raw); err != nil {
		return &engine.LoadError{Kind: ErrDescriptor, Err: err}
	}
	if err := abischema.CheckNames(raw, abischema.DescriptorStructs); err != nil {
		return &engine.LoadError{Kind: ErrDescriptor, Err: err}
	}
	if err := json.Unmarshal(raw, &p.descriptor); err != nil {
		return &engine.LoadError{Kind: ErrDescriptor, Err: err}
	}
	if p.descriptor.ABIVersion != abi.MajorVersion {
		return &engine.LoadError{Kind: ErrABIVersion, Detail: fmt.Sprintf("descriptor says %d, host speaks %d", p.descriptor.ABIVersion, abi.MajorVersion)}
	}
	if len(p.descriptor.ConfigSchema) > 0 {
		s, err := abischema.CompileConfigSchema(p.descriptor.ConfigSchema)
		if err != nil {
			return &engine.LoadError{Kind: ErrDescriptor, Detail: "config_schema does not compile", Err: err}
		}
		p.config = s
		if err := json.Unmarshal(p.descriptor.ConfigSchema, &p.schemaDoc); err != nil {
			return &engine.LoadError{Kind: ErrDescriptor, Detail: "config_schema does not decode", Err: err}
		}
		if err := checkRefAnnotations(p.schemaDoc); err != nil {
			return &engine.LoadError{Kind: ErrDescriptor, Err: err}
		}
	}
	return nil
}

// validateConfig checks a stage config against the plugin's schema and
// returns it compacted; nil when the stage has none. field is the config's
// key path; the error is a *ConfigError naming the first offending key
// below it, wrapping ErrStageConfig.
func (p *plugin) validateConfig(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		raw = nil
	}
	if p.config == nil {
		if raw != nil && string(raw) != "{}" {
			return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("gate %s takes no config (its descriptor has no config_schema)", p.descriptor.Name), Err: ErrStageConfig}
		}
		return nil, nil
	}
	doc := raw
	if doc == nil {
		doc = json.RawMessage(`{}`)
	}
	v, err := abischema.Decode(doc)
	if err != nil {
		return nil, &ConfigError{Field: field, Reason: "not one JSON value", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
	}
	if err := abischema.SafeValidate(p.config, v); err != nil {
		return nil, configSchemaError(field, p.descriptor.ConfigSchema, v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, &ConfigError{Field: field, Reason: "cannot be encoded", Err: fmt.Errorf("%w: %w", ErrStageConfig, err)}
	}
	return out, nil
}
