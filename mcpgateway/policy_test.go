package mcpgateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway"
)

// policyStage is a policy gate stage holding one policy file's text.
func policyStage(t *testing.T, file, text string) host.StageConfig {
	t.Helper()
	cfg, err := json.Marshal(map[string]any{"policies": []map[string]string{{"file": file, "text": text}}})
	require.NoError(t, err)
	return host.StageConfig{Plugin: "policy", Capabilities: []string{"catalog"}, Config: cfg}
}

// notesPolicy reads anything, and writes notes whose name starts "pub".
const notesPolicy = `@id("read")
permit (principal, action in Action::"read_only", resource);

@id("write-pub")
permit (principal, action == Action::"mcp.notes:write_note", resource)
when { context.arguments.name like "pub*" };
`

// TestPolicyNamesUnlistedTool: a policy naming a tool the upstream does
// not list does not type-check against the gateway's catalog; every call
// is refused (policy_invalid, naming FILE:LINE:COLUMN), the verdict is
// recorded, and /readyz and the metrics report it.
func TestPolicyNamesUnlistedTool(t *testing.T) {
	f := newFixture(t, []host.StageConfig{policyStage(t, "notes.cedar", notesPolicy+`
@id("erase")
permit (principal, action == Action::"mcp.notes:erase_note", resource);
`)}, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, Baseline: openBaseline(t, fileBaseline(t))})
	cs := connect(t, g, nil)
	toolNames(t, cs) // activates them
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	require.True(t, r.IsError)
	assert.Equal(t, []string{"policy_invalid"}, findingCodes(t, r))
	assert.Contains(t, text(r), "notes.cedar:9:39")
	assert.Contains(t, text(r), "erase_note")
	recs := logRecords(t, f.logPath, "mcp_policy_invalid")
	require.Len(t, recs, 1)
	assert.Contains(t, string(recs[0].Data), "notes.cedar:9:39")
	rd := g.Readiness()
	assert.False(t, rd.Ready)
	assert.Contains(t, rd.PolicyError, "erase_note")
}

// TestPolicyInvalidAfterRelist: a policy that type-checks against the
// catalog decides calls; once the upstream drops an argument the policy
// reads and the new definition is approved into the baseline, the catalog
// rebuilt from it no longer holds the argument and every call is refused
// (policy_invalid), never decided by what is left of the policies.
func TestPolicyInvalidAfterRelist(t *testing.T) {
	path := fileBaseline(t)
	f := newFixture(t, []host.StageConfig{policyStage(t, "notes.cedar", notesPolicy)}, nil)
	g1 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, Baseline: openBaseline(t, path)})
	cs1 := connect(t, g1, nil)
	toolNames(t, cs1)
	require.False(t, call(t, cs1, "write_note", map[string]any{"name": "pub1", "text": "v1"}).IsError)
	r := call(t, cs1, "write_note", map[string]any{"name": "secret", "text": "v1"})
	require.True(t, r.IsError)
	assert.NotContains(t, findingCodes(t, r), "policy_invalid")
	assert.True(t, g1.Readiness().Ready)

	g2 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{variantUpstream(t, "notes", "drop_name")},
		ActivateOnList: []string{"*"}, Baseline: openBaseline(t, path)})
	cs2 := connect(t, g2, nil)
	toolNames(t, cs2)
	assert.Contains(t, findingCodes(t, call(t, cs2, "write_note", map[string]any{"text": "v2"})), "tool_drifted")
	reviews, failed, err := g2.ReviewBaseline(context.Background())
	require.NoError(t, err)
	require.Empty(t, failed)
	_, err = g2.ApproveBaseline(context.Background(), reviews, []string{"notes:write_note"}, "operator:test")
	require.NoError(t, err)

	r = call(t, cs2, "read_note", map[string]any{"name": "pub1"})
	require.True(t, r.IsError)
	assert.Equal(t, []string{"policy_invalid"}, findingCodes(t, r))
	assert.Contains(t, text(r), "notes.cedar:6:26")
	assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_policy_invalid"))
	assert.False(t, g2.Readiness().Ready)

	// The first definition approved again (its upstream still lists it):
	// the policies type-check and calls are decided.
	assert.Contains(t, findingCodes(t, call(t, cs1, "write_note", map[string]any{"name": "pub2", "text": "v2"})), "policy_invalid")
	reviews, failed, err = g1.ReviewBaseline(context.Background())
	require.NoError(t, err)
	require.Empty(t, failed)
	_, err = g1.ApproveBaseline(context.Background(), reviews, []string{"notes:write_note"}, "operator:test")
	require.NoError(t, err)
	require.False(t, call(t, cs1, "write_note", map[string]any{"name": "pub2", "text": "v2"}).IsError)
	assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_policy_valid"))
	assert.True(t, g1.Readiness().Ready)
}

// TestPolicyHidesToolsNoPolicyPermits: with a policy stage, tools/list
// shows a principal only the tools some policy could permit it to call,
// decided without arguments (a permit whose condition reads the arguments
// keeps its tools listed). Hiding is not the enforcement: a call to a
// hidden tool is still decided, and refused, by the gate.
func TestPolicyHidesToolsNoPolicyPermits(t *testing.T) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixtureWith(t, json.RawMessage(`{"confirm_effects":[]}`), []host.StageConfig{policyStage(t, "notes.cedar", `
@id("read")
permit (principal, action in Action::"read_only", resource);

@id("ci-writes")
permit (principal == Caller::"ci-bot", action in [Action::"mcp.notes:write_note", Action::"mcp.notes:delete_note"], resource)
when { principal.issuer == "ops" && context.arguments.name like "*" };
`)}, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	authed, open := tokenServers(t, g)
	ci := connectVia(t, authed.URL, withHeader{"Authorization", "Bearer ci-token-0123456789"})
	assert.Contains(t, toolNames(t, ci), "write_note", "a permit on the arguments keeps the tool listed")
	assert.Contains(t, toolNames(t, ci), "delete_note")
	w := call(t, ci, "write_note", map[string]any{"name": "a", "text": "by ci"})
	assert.False(t, w.IsError, text(w))

	anon := connectVia(t, open.URL, nil)
	names := toolNames(t, anon)
	assert.Contains(t, names, "read_note")
	assert.NotContains(t, names, "write_note", "no policy permits an anonymous caller to write")
	assert.NotContains(t, names, "delete_note")
	r := call(t, anon, "read_note", map[string]any{"name": "a"})
	assert.False(t, r.IsError, text(r))
	w = call(t, anon, "write_note", map[string]any{"name": "a", "text": "by anyone"})
	require.True(t, w.IsError)
	assert.Equal(t, []string{"policy_no_permit"}, findingCodes(t, w))
	assert.Equal(t, "note: by ci", text(call(t, ci, "read_note", map[string]any{"name": "a"})))
}

// TestPolicyCheckedAtReload: a reload's policy stages are checked against
// the catalog the gateway keeps at once: /readyz and the gauge
// gatehost_mcp_policy_invalid report an invalid one before any call, every
// call is refused, and a reload that fixes it lets calls be decided.
func TestPolicyCheckedAtReload(t *testing.T) {
	valid := policyStage(t, "notes.cedar", notesPolicy)
	f := newFixture(t, []host.StageConfig{valid}, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(g.Collector())
	gauge := func() float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "gatehost_mcp_policy_invalid" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no gatehost_mcp_policy_invalid")
		return 0
	}
	cs := connect(t, g, nil)
	toolNames(t, cs)
	require.False(t, call(t, cs, "write_note", map[string]any{"name": "pub1", "text": "v1"}).IsError)
	assert.Zero(t, gauge())

	with := func(st host.StageConfig) host.Config {
		cfg := f.cfg
		p := cfg.Pipelines["exec"]
		p.Stages = append(append([]host.StageConfig{}, p.Stages[0]), st)
		cfg.Pipelines = map[string]host.PipelineConfig{"exec": p}
		return cfg
	}
	require.NoError(t, g.Reload(context.Background(), with(policyStage(t, "notes.cedar", notesPolicy+`
@id("typo")
permit (principal, action == Action::"mcp.notes:write_nte", resource);
`)), nil))
	rd := g.Readiness()
	assert.False(t, rd.Ready)
	assert.Contains(t, rd.PolicyError, `did you mean "mcp.notes:write_note"`)
	assert.Equal(t, 1.0, gauge())
	r := call(t, cs, "read_note", map[string]any{"name": "pub1"})
	assert.Equal(t, []string{"policy_invalid"}, findingCodes(t, r))

	require.NoError(t, g.Reload(context.Background(), with(valid), nil))
	assert.True(t, g.Readiness().Ready)
	assert.Zero(t, gauge())
	assert.Equal(t, "note: v1", text(call(t, cs, "read_note", map[string]any{"name": "pub1"})))
	assert.Len(t, logRecords(t, f.logPath, "mcp_policy_valid"), 1)
}

// TestPolicyPendingUpstream: a policy naming a tool of an upstream none of
// whose tools is in the trust baseline yet is not called invalid for want
// of its listing (as the config's names are not); the other upstream's
// calls are decided.
func TestPolicyPendingUpstream(t *testing.T) {
	f := newFixture(t, []host.StageConfig{policyStage(t, "notes.cedar", notesPolicy+`
@id("other-erase")
permit (principal, action == Action::"mcp.other:erase_note", resource)
when { context.arguments.name == "x" && context.session.calls["mcp.other:erase_note"] < 3 };

@id("other-paths")
forbid (principal, action == Action::"mcp.other:erase_note", resource == Server::"mcp.other")
when { context.paths has path };
`)}, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes"), stdioUpstream(t, "other")},
		RequireApproval: false, ActivateOnList: []string{"mcp.notes:read_note", "mcp.notes:write_note"}, Baseline: openBaseline(t, fileBaseline(t))})
	cs := connect(t, g, nil)
	toolNames(t, cs)
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.False(t, r.IsError, text(r))
	assert.True(t, g.Readiness().Ready)
	assert.Empty(t, logRecords(t, f.logPath, "mcp_policy_invalid"))
}

// TestSessionlessRateLimit: a limit on a session's calls holds for a
// 2026-07-28 client over HTTP, where every request is a gatehost session
// of its own: such a caller's session counters are its principal's, so
// the limit is not reset by every request.
func TestSessionlessRateLimit(t *testing.T) {
	stage := policyStage(t, "limit.cedar", `@id("read")
permit (principal, action in Action::"read_only", resource);

@id("reads-per-session")
@message("at most 3 reads per session")
forbid (principal, action == Action::"mcp.notes:read_note", resource)
when { context.session.calls["mcp.notes:read_note"] >= 3 };
`)
	stage.Capabilities = append(stage.Capabilities, "counters")
	f := newFixture(t, []host.StageConfig{stage}, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := sessionlessClient(t, g, "http", nil)
	toolNames(t, cs)
	for i := range 3 {
		r := call(t, cs, "read_note", map[string]any{"name": "a"})
		require.False(t, r.IsError, "read %d: %s", i+1, text(r))
	}
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	require.True(t, r.IsError, "the fourth read, in the fourth request: %s", text(r))
	assert.Equal(t, []string{"policy_forbid"}, findingCodes(t, r))
	assert.Contains(t, text(r), "at most 3 reads per session")
}

// TestPolicyWindowsChecked: the gateway reads a policy stage's config as
// the gate does, windows included: a rate limit over a declared window
// type-checks and decides calls (the third write in the hour is refused),
// and never refuses every call as invalid.
func TestPolicyWindowsChecked(t *testing.T) {
	cfg, err := json.Marshal(map[string]any{"windows": []string{"1h"}, "policies": []map[string]string{{"file": "rate.cedar", "text": notesPolicy + `
@id("writes-per-hour")
forbid (principal, action == Action::"mcp.notes:write_note", resource)
when { context.session.window["1h"].calls["mcp.notes:write_note"] >= 2 };
`}}})
	require.NoError(t, err)
	f := newFixtureWith(t, confirmNonIdempotent, []host.StageConfig{{Plugin: "policy", Capabilities: []string{"catalog", "counters"}, Config: cfg}}, nil,
		func(c *host.Config) { c.CounterWindows = []time.Duration{time.Hour} })
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, Baseline: openBaseline(t, fileBaseline(t))})
	cs := connect(t, g, nil)
	toolNames(t, cs)
	for i, want := range []bool{false, false, true} {
		r := call(t, cs, "write_note", map[string]any{"name": fmt.Sprintf("pub%d", i), "text": "x"})
		assert.NotContains(t, findingCodes(t, r), "policy_invalid", text(r))
		assert.Equal(t, want, r.IsError, "write %d: %s", i, text(r))
	}
	assert.True(t, g.Readiness().Ready)

	// A window the host does not count: every call refused as invalid,
	// and the gateway not ready, rather than each call inconclusive while
	// it reports ready.
	cfg, err = json.Marshal(map[string]any{"windows": []string{"2h"}, "policies": []map[string]string{{"file": "rate.cedar", "text": notesPolicy}}})
	require.NoError(t, err)
	f = newFixtureWith(t, confirmNonIdempotent, []host.StageConfig{{Plugin: "policy", Capabilities: []string{"catalog", "counters"}, Config: cfg}}, nil,
		func(c *host.Config) { c.CounterWindows = []time.Duration{time.Hour} })
	g = f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, Baseline: openBaseline(t, fileBaseline(t))})
	cs = connect(t, g, nil)
	toolNames(t, cs)
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	require.True(t, r.IsError)
	assert.Equal(t, []string{"policy_invalid"}, findingCodes(t, r))
	assert.Contains(t, text(r), "window 2h is not one the host counts")
	assert.False(t, g.Readiness().Ready)
}
