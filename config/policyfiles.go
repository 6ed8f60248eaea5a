package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/policy"
)

// PolicyGate is the built-in gate whose stage config may name Cedar policy
// files (docs/POLICY.md): policy_files, paths relative to the config file.
// A gate cannot read the disk, so the loader reads them and appends each to
// the config's policies as {"file": PATH, "text": …}, PATH as written.
const PolicyGate = "policy"

// MaxPolicyFileBytes caps one policy file a stage config names.
const MaxPolicyFileBytes = 4 << 20

// policyFilesKey is the stage config key the loader expands.
const policyFilesKey = "policy_files"

// PolicyFileError is a policy file a stage config names that could not be
// read, or a policy_files value that is not a list of paths.
type PolicyFileError struct {
	// File is the path as the config writes it ("" when the list itself is
	// malformed).
	File string
	Err  error
}

func (e *PolicyFileError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("%s: %v", policyFilesKey, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", policyFilesKey, e.File, e.Err)
}

func (e *PolicyFileError) Unwrap() error { return e.Err }

// policyStageConfig prepares a policy stage's config: policy_files are
// inlined (inlinePolicyFiles), then the policies are parsed and the claim
// types checked, so that a policy that does not parse refuses the config
// (naming FILE:LINE:COLUMN) instead of making every call inconclusive.
// Type-checking against the catalog is gatehost policy validate's.
func policyStageConfig(raw json.RawMessage, rel func(string) string) (json.RawMessage, error) {
	raw, err := inlinePolicyFiles(raw, rel)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return raw, err
	}
	if json.Unmarshal(raw, &policy.StageConfig{}) != nil {
		return raw, nil // the gate's config schema says why
	}
	if _, _, err := policy.ParseStageConfig(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// inlinePolicyFiles expands a policy stage config's policy_files: the
// files' text is appended to policies, and the key removed. A config
// without the key is returned as it is.
func inlinePolicyFiles(raw json.RawMessage, rel func(string) string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
		return raw, nil // not an object: the gate's config schema says why
	}
	v, ok := cfg[policyFilesKey]
	if !ok {
		return raw, nil
	}
	files, ok := v.([]any)
	if !ok {
		return nil, &PolicyFileError{Err: errors.New("want a list of file paths")}
	}
	policies, _ := cfg["policies"].([]any)
	if cfg["policies"] != nil && policies == nil {
		return raw, nil // the gate's config schema refuses it
	}
	for _, f := range files {
		path, ok := f.(string)
		if !ok || path == "" {
			return nil, &PolicyFileError{Err: errors.New("want a list of file paths")}
		}
		b, err := safefile.ReadFile(rel(path), MaxPolicyFileBytes)
		if err != nil {
			return nil, &PolicyFileError{File: path, Err: withoutPath(err)}
		}
		policies = append(policies, map[string]any{"file": path, "text": string(b)})
	}
	delete(cfg, policyFilesKey)
	cfg["policies"] = policies
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, &PolicyFileError{Err: err}
	}
	return out, nil
}

// validatePolicyStages checks every stage of the built-in policy gate:
// its config as the gate reads it, every window it declares counted by
// the host, and its policies type-checked against the schema generated
// from the config's file catalog (catalog.sources), as gatehost policy
// validate does, so that a policy naming a tool, argument, attribute or
// claim the catalog does not have refuses the config. The type check is
// CheckToolReferences': not against a store serving a published catalog,
// nor in the mcp: section's pipeline, whose catalog the gateway learns
// from its upstreams at run time and checks the policies against itself
// (mcpgateway: every call refused, policy_invalid, until they type-check).
func validatePolicyStages(cfg *host.Config, l *Loaded) error {
	var tools []abi.Tool
	if l.fileCatalog() && cfg.Catalog != nil && cfg.Catalog.Snapshot().Len() > 0 {
		tools = abiTools(cfg.Catalog.Snapshot())
	}
	gateway := strings.ToLower(l.MCP.Pipeline)
	for _, name := range slices.Sorted(maps.Keys(cfg.Pipelines)) {
		for i, st := range cfg.Pipelines[name].Stages {
			if l.Builtins[st.Plugin] != PolicyGate {
				continue
			}
			against := tools
			if strings.ToLower(name) == gateway {
				against = nil
			}
			if err := checkPolicyStage(fmt.Sprintf("pipelines.%s.stages[%d].config", name, i), st.Config, against, cfg.CounterWindows); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPolicyGates checks what validatePolicyStages could not tell apart
// before the host loaded the modules: the stages of a policy gate given by
// path (its descriptor names it policy), as validatePolicyStages checks
// the built-in's, against the host's catalog.
func (l *Loaded) checkPolicyGates(h *host.Host) error {
	gateway := strings.ToLower(l.MCP.Pipeline)
	var tools []abi.Tool
	for _, p := range h.Pipelines() {
		for i, st := range h.Stages(p.Name) {
			if st.Gate != PolicyGate || l.Builtins[st.Plugin] == PolicyGate {
				continue
			}
			var against []abi.Tool
			if l.fileCatalog() && p.Name != gateway {
				if tools == nil {
					tools = abiTools(h.Catalog().Snapshot())
				}
				against = tools
			}
			if err := checkPolicyStage(fmt.Sprintf("pipelines.%s.stages[%d].config", p.Name, i), st.Config, against, l.Host.CounterWindows); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileCatalog reports whether the config's catalog is a file catalog
// (catalog.sources) known at load, which policies and tool names are
// checked against; not a published one, nor the MCP gateway's.
func (l *Loaded) fileCatalog() bool {
	return l.FileCatalog && l.Store.Catalog != CatalogPublished
}

func abiTools(snap *catalog.Snapshot) []abi.Tool {
	tools := []abi.Tool{}
	for _, t := range snap.List() {
		tools = append(tools, t.ABI())
	}
	return tools
}

// checkPolicyStage reads a policy stage's config as the gate does
// (policy.ParseStageConfig), checks that the host counts every window it
// declares, and type-checks its policies against tools (none: no
// catalog to check them against). The error is
// prefixed with what it is about: the stage config key (".windows",
// ".policies") or none.
func checkPolicyStage(prefix string, raw json.RawMessage, tools []abi.Tool, counted []time.Duration) error {
	set, o, err := policy.ParseStageConfig(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	if err := policyWindows(counted, o.Windows); err != nil {
		return fmt.Errorf("%s.windows: %w", prefix, err)
	}
	if tools == nil {
		return nil
	}
	s, err := policy.NewSchema(tools, o)
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	if ps := s.Validate(set); len(ps) > 0 {
		return fmt.Errorf("%s.policies: against the catalog: %w", prefix, &policy.ValidationError{Problems: ps})
	}
	return nil
}

// policyWindows checks that the host counts every window a policy stage
// declares: one it does not would make every call whose policies read it
// inconclusive.
func policyWindows(counted []time.Duration, declared []string) error {
	for _, w := range declared {
		d, err := abi.ParseWindow(w)
		if err != nil {
			return err
		}
		if !slices.Contains(counted, d) {
			return fmt.Errorf("window %s is not one the host counts (counters.windows)", abi.WindowName(d))
		}
	}
	return nil
}
