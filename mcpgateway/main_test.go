package mcpgateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/mcpgateway"
)

var execWasm, preconditionsWasm, policyWasm string

func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) == "1" {
		serveTestUpstream()
	}
	testwasm.Main(stopPostgres{m}, func() (err error) {
		if execWasm, err = testwasm.Go("plugins/exec/wasm"); err != nil {
			return err
		}
		if preconditionsWasm, err = testwasm.Go("plugins/preconditions/wasm"); err != nil {
			return err
		}
		policyWasm, err = testwasm.Go("plugins/policy/wasm")
		return err
	})
}

// stopPostgres stops the shared PostgreSQL cluster the tests started, if
// any, once the tests have run.
type stopPostgres struct{ m *testing.M }

func (s stopPostgres) Run() int {
	defer pgtest.StopShared()
	return s.m.Run()
}

// confirmNonIdempotent is the exec policy of the fixtures: non_idempotent
// tools (no annotations, or destructive) need a person's confirmation.
var confirmNonIdempotent = json.RawMessage(`{"confirm_effects":["non_idempotent"]}`)

// fixture is the config of a host with an exec pipeline, and its event
// log. Each gateway builds its own host from cfg; h is the host of the
// latest gateway newGateway built.
type fixture struct {
	cfg     host.Config
	h       *host.Host
	evlog   *eventlog.Log
	logPath string
}

// newFixture configures a host whose pipeline "exec" runs the exec gate
// (policy confirmNonIdempotent), plus any further stages (such as
// preconditions) with their domains.
func newFixture(t *testing.T, extra []host.StageConfig, domains map[string]host.Domain) *fixture {
	t.Helper()
	return newFixtureWith(t, confirmNonIdempotent, extra, domains)
}

// newFixtureWith is newFixture with the exec gate's config; tweaks change
// the host config.
func newFixtureWith(t testing.TB, execConfig json.RawMessage, extra []host.StageConfig, domains map[string]host.Domain, tweaks ...func(*host.Config)) *fixture {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	evlog, err := eventlog.Open(logPath, eventlog.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = evlog.Close() })
	stages := append([]host.StageConfig{{Plugin: "exec", Capabilities: []string{"catalog", "session"}, Config: execConfig}}, extra...)
	cfg := host.Config{
		Plugins: map[string]host.PluginConfig{
			"exec": {Path: execWasm}, "preconditions": {Path: preconditionsWasm}, "policy": {Path: policyWasm}},
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: stages}},
		EventLog:  evlog,
		CacheDir:  testwasm.CacheDir(),
		Domains:   domains,
	}
	for _, tw := range tweaks {
		tw(&cfg)
	}
	return &fixture{cfg: cfg, evlog: evlog, logPath: logPath}
}

// stdioUpstream is the test upstream as a process the gateway starts.
func stdioUpstream(t *testing.T, name string) mcpgateway.Upstream {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return mcpgateway.Upstream{Name: name, Command: []string{exe, "-test.run=^$"}, Env: []string{upstreamEnv + "=1", nameEnv + "=" + name}}
}

// newGateway returns a gateway with the "exec" pipeline over a host built
// from f's config, which becomes f.h.
func (f *fixture) newGateway(t testing.TB, opts mcpgateway.Options) *mcpgateway.Gateway {
	t.Helper()
	if opts.Pipeline == "" {
		opts.Pipeline = "exec"
	}
	if opts.Elicitation == "" {
		// Most tests here exercise the client's form answer; the approval
		// page's flow (the default) is tested with ElicitURL set.
		opts.Elicitation = mcpgateway.ElicitForm
	}
	g, err := mcpgateway.New(context.Background(), f.cfg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	f.h = g.Host()
	return g
}

// sessionful has a client ask for the newest revision with sessions
// (2025-11-25), which most tests here exercise (elicitation during a call);
// the sessionless 2026-07-28 is tested with connectAt and its own tests.
var sessionful = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// connect opens a client session to g over an in-memory stdio-like
// transport (the gateway's ServeTransport, as `gatehost mcp` runs it).
func connect(t *testing.T, g *mcpgateway.Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts).Connect(ctx, ct, sessionful)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// call calls a tool and returns the result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(r *mcp.CallToolResult) string {
	var s string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// findingCodes are the codes of a denied result's Decision: in _meta
// always, and as structured content when the tool declares no output
// schema (then both must be the same).
func findingCodes(t *testing.T, r *mcp.CallToolResult) []string {
	t.Helper()
	b, err := json.Marshal(r.Meta[mcpgateway.MetaDecision])
	require.NoError(t, err)
	if r.StructuredContent != nil {
		sc, err := json.Marshal(r.StructuredContent)
		require.NoError(t, err)
		require.JSONEq(t, string(sc), string(b), "structuredContent and _meta carry one Decision")
	}
	require.NoError(t, err)
	var d struct {
		Verdict  string `json:"verdict"`
		Findings []struct {
			Code string `json:"code"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(b, &d), "structuredContent: %s", b)
	var codes []string
	for _, f := range d.Findings {
		codes = append(codes, f.Code)
	}
	return codes
}

// toolNames lists the session's tools (which activates them, with
// ActivateOnList) and returns their names.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	lr, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range lr.Tools {
		names = append(names, tl.Name)
	}
	return names
}
