package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

const okProposal = `{"id":"ok","actions":[{"id":"a","tool":"get_me"}]}`

func TestLoadRefusals(t *testing.T) {
	wat := func(name string) host.PluginConfig {
		b, err := testwasm.WAT("testdata/hostile/" + name)
		require.NoError(t, err)
		return host.PluginConfig{Module: b}
	}
	sv := host.PluginConfig{Path: staticVerifyWasm}
	svCaps := []string{"catalog", "schema"}
	tests := []struct {
		name    string
		plugin  host.PluginConfig
		stage   host.StageConfig
		subject abi.SubjectKind
		wantIs  error
		wantCfg string // ConfigError field
	}{
		{name: "missing export", plugin: wat("missing-export.wat"), wantIs: host.ErrMissingExport},
		{name: "no ABI major", plugin: wat("no-abi-version.wat"), wantIs: host.ErrMissingExport},
		{name: "wrong ABI major", plugin: wat("wrong-abi.wat"), wantIs: host.ErrABIVersion},
		{name: "forbidden import", plugin: wat("bad-import.wat"), wantIs: host.ErrForbiddenImport},
		{name: "not wasm", plugin: host.PluginConfig{Module: []byte("not a module")}, wantIs: host.ErrCompile},
		{name: "missing file", plugin: host.PluginConfig{Path: "/nonexistent.wasm"}, wantIs: host.ErrReadModule},
		{name: "sha256 mismatch", plugin: host.PluginConfig{Path: staticVerifyWasm, SHA256: strings.Repeat("0", 64)}, wantIs: host.ErrSHA256Mismatch},
		{name: "sha256 malformed", plugin: host.PluginConfig{Path: staticVerifyWasm, SHA256: "abc"}, wantCfg: "plugins.x.sha256"},
		{name: "config fails schema", plugin: sv, stage: host.StageConfig{Capabilities: svCaps, Config: json.RawMessage(`{"max_actions":"many"}`)}, wantIs: host.ErrStageConfig, wantCfg: "pipelines.p.stages[0].config.max_actions"},
		{name: "config unknown key", plugin: sv, stage: host.StageConfig{Capabilities: svCaps, Config: json.RawMessage(`{"max_action":5}`)}, wantIs: host.ErrStageConfig, wantCfg: "pipelines.p.stages[0].config"},
		{name: "declared capability not granted", plugin: sv, wantCfg: "pipelines.p.stages[0].capabilities"},
		{name: "catalog withheld from static-verify", plugin: sv, stage: host.StageConfig{Capabilities: []string{"schema"}}, wantCfg: "pipelines.p.stages[0].capabilities"},
		{name: "subject kind not handled", plugin: sv, subject: abi.SubjectMerge, wantIs: host.ErrDescriptor},
		{name: "unknown capability", plugin: sv, stage: host.StageConfig{Capabilities: []string{"network"}}, wantCfg: "pipelines.p.stages[0].capabilities"},
		{name: "bad mode", plugin: sv, stage: host.StageConfig{Mode: "audit"}, wantCfg: "pipelines.p.stages[0].mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.stage
			st.Plugin = "x"
			subj := tt.subject
			if subj == "" {
				subj = abi.SubjectProposal
			}
			_, err := host.New(context.Background(), host.Config{
				CacheDir:  testwasm.CacheDir(),
				Plugins:   map[string]host.PluginConfig{"x": tt.plugin},
				Pipelines: map[string]host.PipelineConfig{"p": {Subject: subj, Stages: []host.StageConfig{st}}},
			})
			require.Error(t, err)
			if tt.wantCfg != "" {
				var ce *host.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.wantCfg, ce.Field)
				if tt.wantIs != nil {
					assert.ErrorIs(t, err, tt.wantIs)
				}
				return
			}
			assert.ErrorIs(t, err, tt.wantIs)
			var le *host.LoadError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "x", le.Plugin)
			assert.Contains(t, err.Error(), abi.ReasonLoadError)
		})
	}
}

func TestConfigErrors(t *testing.T) {
	sv := map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}}
	tests := []struct {
		name  string
		cfg   host.Config
		field string
	}{
		{"unknown plugin", host.Config{Pipelines: hosttest.OnePipeline("nope")}, "pipelines.p.stages[0].plugin"},
		{"no stages", host.Config{Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal"}}}, "pipelines.p.stages"},
		{"bad subject", host.Config{Pipelines: map[string]host.PipelineConfig{"p": {Subject: "email", Stages: []host.StageConfig{{Plugin: "sv"}}}}}, "pipelines.p.subject"},
		{"duplicate stage", host.Config{Plugins: sv, Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "sv"}, {Plugin: "sv"}}}}}, "pipelines.p.stages[1].name"},
		{"bad plugin name", host.Config{Plugins: map[string]host.PluginConfig{"a b": {Path: "x"}}}, "plugins.a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.New(context.Background(), tt.cfg)
			var ce *host.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
		})
	}
}

// TestTrapThenServed: a stage whose guest crashes is inconclusive with
// plugin_trap, and the next run on the same host is served by a fresh
// instance.
func TestTrapThenServed(t *testing.T) {
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"flaky": {Path: flakyWasm}},
		Pipelines: hosttest.OnePipeline("flaky"),
		PoolSize:  1,
	})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		d, err := h.Check(ctx, "p", []byte(`{"id":"crash","actions":[]}`), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict)
		assert.Equal(t, abi.ReasonPluginTrap, d.Stages[0].Reason)
		assert.Contains(t, d.Stages[0].Evidence["stderr"], "flaky: crash requested")

		d, err = h.Check(ctx, "p", []byte(`{"id":"fine","actions":[]}`), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Accepted, d.Verdict, "run after a trap must be served")
	}
}

func TestWATTrap(t *testing.T) {
	b, err := testwasm.WAT("testdata/hostile/trap.wat")
	require.NoError(t, err)
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"trap": {Module: b}, "flaky": {Path: flakyWasm}},
		Pipelines: map[string]host.PipelineConfig{
			"trap": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "trap"}}},
			"ok":   {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "flaky"}}},
		},
	})
	for i := 0; i < 2; i++ {
		d, err := h.Check(context.Background(), "trap", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict)
		assert.Equal(t, abi.ReasonPluginTrap, d.Stages[0].Reason)
		d, err = h.Check(context.Background(), "ok", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Accepted, d.Verdict)
	}
}

func TestCheckErrors(t *testing.T) {
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"flaky": {Path: flakyWasm}},
		Pipelines: hosttest.OnePipeline("flaky"),
	})
	ctx := context.Background()
	_, err := h.Check(ctx, "nope", []byte(okProposal), host.RunOptions{})
	assert.ErrorIs(t, err, host.ErrUnknownPipeline)
	for _, subj := range []string{``, `[]`, `{"actions":{}}`, `{"actions":[{"type":"launch"}]}`, `{"actions":[]} trailing`,
		`{"id":1,"actions":[]}`, `{"actions":[]}}`, `{"actions":[{"tool":"delete_repository","TOOL":"get_me"}]}`,
		`{"actions":[{"tool":"delete_file","tool":"get_me"}]}`, `{"actions":[{"tool":"x"}],"actions":[]}`,
		"{\"actions\":[{\"tool\":\"\xff\"}]}"} {
		_, err := h.Check(ctx, "p", []byte(subj), host.RunOptions{})
		var se *host.SubjectError
		assert.ErrorAs(t, err, &se, "subject %q", subj)
		assert.ErrorIs(t, err, host.ErrBadSubject)
	}
	_, err = h.Check(ctx, "p", make([]byte, host.MaxSubjectBytes+1), host.RunOptions{})
	assert.ErrorIs(t, err, host.ErrBadSubject)
}

// TestCapabilityDenied: a stage without the catalog grant gets a typed
// refusal, the gate fails, and the stage is inconclusive — never accepted.
// New refuses such a stage (TestStageMustGrantDeclaredCapabilities); the
// partial grants of the conformance kit reach the run, which stays
// fail-closed.
func TestCapabilityDenied(t *testing.T) {
	h := hosttest.NewPartial(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"probe": {Path: probeWasm}, "sv": {Path: staticVerifyWasm}},
		Catalog:   hosttest.GitHubCatalog(t),
		Pipelines: map[string]host.PipelineConfig{"probe": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "probe"}}}, "sv": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "sv"}}}},
	})
	for _, p := range []string{"probe", "sv"} {
		d, err := h.Check(context.Background(), p, []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict, p)
		assert.Equal(t, "gate_error", d.Stages[0].Reason, p)
		denied, _ := d.Stages[0].Evidence["capability_denied"].([]string)
		require.Len(t, denied, 1, p)
		assert.Contains(t, []string{abi.OpCatalogGet, abi.OpCatalogList}, denied[0], p)
	}
}

// TestSnapshotPinned: while another goroutine keeps changing the catalog,
// every stage of a run sees the run's one snapshot (run with -race).
func TestSnapshotPinned(t *testing.T) {
	store := hosttest.GitHubCatalog(t)
	stage := func(name string) host.StageConfig {
		return host.StageConfig{Name: name, Plugin: "probe", Capabilities: []string{"catalog"}}
	}
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"probe": {Path: probeWasm}},
		Catalog:   store,
		Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{stage("one"), stage("two")}}},
	})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			_, err := store.Update(func(b *catalog.Builder) error {
				if i%2 == 0 {
					return b.Add(catalog.Tool{ID: "mcp.test:churn", Name: "churn", InputSchema: json.RawMessage(`{"type":"object"}`), Provenance: catalog.ProvenanceUnverified})
				}
				return b.Remove("mcp.test:churn")
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[uint64]bool{}
	for i := 0; i < 40; i++ {
		d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, abi.Accepted, d.Verdict)
		want := json.Number(strconv.FormatUint(d.CatalogGeneration, 10))
		tools := d.Stages[0].Evidence["first_tools"]
		for _, s := range d.Stages {
			for _, k := range []string{"context_generation", "first_generation", "second_generation"} {
				assert.Equal(t, want, s.Evidence[k], "stage %s %s", s.Name, k)
			}
			assert.Equal(t, tools, s.Evidence["first_tools"])
			assert.Equal(t, tools, s.Evidence["second_tools"])
		}
		seen[d.CatalogGeneration] = true
	}
	stop.Store(true)
	wg.Wait()
	assert.Greater(t, len(seen), 1, "the catalog should have changed between runs")
}

// TestStopOnReject runs a rejecting enforcing stage before an accepting one
// in both stop modes.
func TestStopOnReject(t *testing.T) {
	subj := hosttest.ReadFile(t, "testdata/proposals/bad-args-and-unknown-tool.json")
	for _, stop := range []bool{true, false} {
		h := hosttest.New(t, host.Config{
			Plugins: map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}, "flaky": {Path: flakyWasm}},
			Catalog: hosttest.GitHubCatalog(t),
			Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal", StopOnReject: stop, Stages: []host.StageConfig{
				{Plugin: "sv", Capabilities: []string{"catalog", "schema"}},
				{Plugin: "flaky"},
			}}},
		})
		d, err := h.Check(context.Background(), "p", subj, host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Rejected, d.Verdict)
		require.Len(t, d.Stages, 2)
		assert.Equal(t, abi.Rejected, d.Stages[0].Verdict)
		if stop {
			assert.True(t, d.Stages[1].Skipped)
			assert.Empty(t, d.Stages[1].Verdict)
		} else {
			assert.False(t, d.Stages[1].Skipped)
			assert.Equal(t, abi.Accepted, d.Stages[1].Verdict)
		}
	}
}

func TestEventLogRecordsEveryRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	h := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:      hosttest.GitHubCatalog(t),
		EventLogPath: path,
		Pipelines:    hosttest.OnePipeline("sv", "catalog", "schema"),
	})
	var ids []string
	for _, f := range []string{"read-then-write.json", "bad-args-and-unknown-tool.json"} {
		subj := hosttest.ReadFile(t, "testdata/proposals/"+f)
		d, err := h.Check(context.Background(), "p", subj, host.RunOptions{RequestID: f})
		require.NoError(t, err)
		ids = append(ids, d.RunID)
	}
	rep, err := eventlog.Verify(path, eventlog.VerifyOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 4, rep.Records) // a stage record and a decision record per run
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	var stageRec, decRec eventlog.Record
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &stageRec))
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &decRec))
	assert.Equal(t, "stage", stageRec.Kind)
	assert.Equal(t, ids[1], stageRec.RunID)
	assert.Len(t, stageRec.ModuleSHA256, 64)
	assert.Len(t, stageRec.ConfigDigest, 64) // of the validated config, {} here
	assert.Equal(t, "rejected", stageRec.Verdict)
	assert.Equal(t, "decision", decRec.Kind)
	assert.Equal(t, "bad-args-and-unknown-tool.json", decRec.RequestID)
	assert.Contains(t, string(decRec.Data), "unknown_tool")
}

func TestClosedHostRefuses(t *testing.T) {
	h, err := host.New(context.Background(), host.Config{
		CacheDir: testwasm.CacheDir(), Plugins: map[string]host.PluginConfig{"flaky": {Path: flakyWasm}}, Pipelines: hosttest.OnePipeline("flaky"),
	})
	require.NoError(t, err)
	require.NoError(t, h.Close(context.Background()))
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	if err == nil {
		assert.NotEqual(t, abi.Accepted, d.Verdict)
	} else {
		assert.True(t, errors.Is(err, host.ErrClosed))
	}
}

// TestCatalogGrantImpliesSchema: a stage written before the schema
// capability existed (capabilities: [catalog]) still loads static-verify,
// which then validates parameters as with both granted (abi/SPEC.md
// §7.13).
func TestCatalogGrantImpliesSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "testdata/static-verify/cases/021_schema_type.json"))
	require.NoError(t, err)
	var c struct {
		Subject json.RawMessage `json:"subject"`
	}
	require.NoError(t, json.Unmarshal(b, &c))
	for _, caps := range [][]string{{"catalog"}, {"catalog", "schema"}} {
		t.Run(strings.Join(caps, "+"), func(t *testing.T) {
			h := hosttest.New(t, host.Config{
				Plugins:   map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
				Catalog:   hosttest.GitHubCatalog(t),
				Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "sv", Capabilities: caps}}}},
			})
			d, err := h.Check(context.Background(), "p", c.Subject, host.RunOptions{})
			require.NoError(t, err)
			require.Equal(t, abi.Rejected, d.Verdict, "%+v", d.Stages[0])
			require.NotEmpty(t, d.Stages[0].Findings)
			assert.Equal(t, "schema_violation", d.Stages[0].Findings[0].Code)
		})
	}
}
