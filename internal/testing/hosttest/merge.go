package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// The merge gate, with a policy and build/test checks.

var mergeWasm = sync.OnceValues(func() (string, error) { return testwasm.Go("plugins/merge/wasm") })

// prefixPolicy is an embedder's Policy with mergetest.Host's behaviour: a
// file under deny/ is denied, one under error/ makes the policy fail.
type prefixPolicy struct{}

func (prefixPolicy) Merge(_ context.Context, req abi.PolicyMergeRequest) (abi.PolicyMergeAnswer, error) {
	a := abi.PolicyMergeAnswer{Decision: abi.PolicyAllow, Policy: "fake"}
	for _, f := range req.Files {
		if strings.HasPrefix(f.Path, "error/") {
			return a, fmt.Errorf("policy engine down")
		}
		if strings.HasPrefix(f.Path, "deny/") {
			a.Decision = abi.PolicyDeny
			a.Denials = append(a.Denials, abi.PolicyDenial{Path: f.Path, Rule: "deny-dir"})
		}
	}
	return a, nil
}

// MergeHost is a host running the merge gate on merge subjects, with an
// event log at logPath ("" for none), a policy that denies files under deny/
// and fails on files under error/, and one pipeline per check outcome:
// none (no check configured), pass, fail, broken (the command cannot
// start), missing (a check the host does not configure) and no-policy (the
// policy capability withheld). opts change the config before the host is
// made.
func MergeHost(t testing.TB, logPath string, opts ...func(host.Config) host.Config) *host.Host {
	wasm, err := mergeWasm()
	require.NoError(t, err)
	stage := func(cfg string, caps ...string) host.PipelineConfig {
		var raw json.RawMessage
		if cfg != "" {
			raw = json.RawMessage(cfg)
		}
		return host.PipelineConfig{Subject: abi.SubjectMerge, Stages: []host.StageConfig{{
			Name: "merge", Plugin: "merge", Capabilities: caps, Config: raw, MemoryLimit: 256 << 20}}}
	}
	cfg := host.Config{
		Plugins: map[string]host.PluginConfig{"merge": {Path: wasm}},
		Pipelines: map[string]host.PipelineConfig{
			"none":      stage("", "policy", "check"),
			"pass":      stage(`{"check":"pass"}`, "policy", "check"),
			"fail":      stage(`{"check":"fail"}`, "policy", "check"),
			"broken":    stage(`{"check":"broken"}`, "policy", "check"),
			"missing":   stage(`{"check":"missing"}`, "policy", "check"),
			"no-policy": stage(`{"check":"pass"}`, "check"),
		},
		Policy: prefixPolicy{},
		Checks: map[string]host.CheckCommand{
			"pass":   {Argv: []string{"true"}},
			"fail":   {Argv: []string{"sh", "-c", "echo boom; exit 3"}},
			"broken": {Argv: []string{"/nonexistent/gatehost-check"}},
		},
		EventLogPath: logPath,
	}
	for _, o := range opts {
		cfg = o(cfg)
	}
	return NewPartial(t, cfg) // no-policy withholds policy
}
