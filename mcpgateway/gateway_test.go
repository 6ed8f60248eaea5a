package mcpgateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/mcpgateway"
)

func TestOptionsRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	up := mcpgateway.Upstream{Name: "a", URL: "http://127.0.0.1:1/mcp"}
	for _, tc := range []struct {
		name  string
		opts  mcpgateway.Options
		field string
	}{
		{"no pipeline", mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}}, "pipeline"},
		{"no upstream", mcpgateway.Options{Pipeline: "exec"}, "upstreams"},
		{"bad name", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "A.b", URL: "u"}}}, "upstreams[0].name"},
		{"twice", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{up, up}}, "upstreams[1].name"},
		{"both", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", URL: "u", Command: []string{"x"}}}}, "upstreams[0]"},
		{"neither", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a"}}}, "upstreams[0]"},
		{"empty program", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", Command: []string{""}}}}, "upstreams[0].command[0]"},
		{"trust", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", URL: "u", Trust: "yes"}}}, "upstreams[0].trust"},
		{"processes of a url", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", URL: "u", Processes: 2}}}, "upstreams[0].processes"},
		{"too many processes", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", Command: []string{"x"}, Processes: mcpgateway.MaxProcesses + 1}}}, "upstreams[0].processes"},
		{"processes and session scoped", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", Command: []string{"x"}, Processes: 2, SessionScoped: true}}}, "upstreams[0].processes"},
		{"session scoped url", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", URL: "u", SessionScoped: true}}}, "upstreams[0].session_scoped"},
		{"unknown revision", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{{Name: "a", URL: "u", ProtocolVersion: "2026-07-29"}}}, "upstreams[0].protocol_version"},
		{"negative timeout", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{up}, CallTimeout: -1}, "call_timeout"},
		{"negative size", mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{up}, MaxResultBytes: -1}, "max_result_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcpgateway.New(context.Background(), f.cfg, tc.opts)
			var oe *mcpgateway.OptionsError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.ErrorIs(t, err, mcpgateway.ErrOptions)
		})
	}
	_, err := mcpgateway.New(context.Background(), f.cfg, mcpgateway.Options{Pipeline: "nope", Upstreams: []mcpgateway.Upstream{up}})
	assert.ErrorIs(t, err, mcpgateway.ErrPipeline)

	// The gateway's approvals are the host's Confirmer: it takes no other.
	cfg := f.cfg
	cfg.Confirmer = otherConfirmer{}
	_, err = mcpgateway.New(context.Background(), cfg, mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{up}})
	var oe *mcpgateway.OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "host.Confirmer", oe.Field)
}

// otherConfirmer confirms whatever it is asked.
type otherConfirmer struct{}

func (otherConfirmer) Confirm(_ context.Context, req host.ConfirmationRequest) (*abi.Confirmation, error) {
	return &abi.Confirmation{Tool: req.ToolName, Token: req.Token}, nil
}

// TestGatedCalls: through a stdio upstream, every tools/call is decided
// first; accepted calls are forwarded unchanged with the run id in _meta,
// denied ones never reach the server.
func TestGatedCalls(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)

	names := toolNames(t, cs)
	assert.Contains(t, names, "read_note")
	assert.Contains(t, names, "delete_note")

	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "hello"})
	assert.False(t, w.IsError, text(w))
	assert.Equal(t, "written", text(w))
	assert.Regexp(t, `^[0-9a-f]{32}$`, w.Meta[mcpgateway.MetaRunID])

	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.Equal(t, "note: hello", text(r))

	// delete_note is non_idempotent: confirmation required, and this
	// client cannot be asked (no elicitation capability).
	d := call(t, cs, "delete_note", map[string]any{"name": "a", "text": "secret-argument"})
	assert.True(t, d.IsError)
	assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
	assert.Contains(t, text(d), abi.CodeConfirmationRequired)
	assert.NotContains(t, text(d), "secret-argument", "a denial never echoes arguments")
	assert.Regexp(t, `^[0-9a-f]{32}$`, d.Meta[mcpgateway.MetaRunID])
	assert.Equal(t, "note: hello", text(call(t, cs, "read_note", map[string]any{"name": "a"})), "the denied delete was not sent")

	u := call(t, cs, "no_such_tool", map[string]any{})
	assert.True(t, u.IsError)
	assert.Equal(t, []string{"unknown_tool"}, findingCodes(t, u))

	// Arguments that are not an object are refused by the pipeline.
	b := call(t, cs, "write_note", []int{1})
	assert.True(t, b.IsError)

	rep, err := eventlog.Verify(f.logPath)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rep.Records, uint64(8))
}

// TestNotActivatedWithoutListing: a tool that neither the options nor an
// operator put in the trust baseline is denied (tool_not_approved); core
// pins from the options authorize a new session's calls at once.
func TestNotActivatedWithoutListing(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}})
	cs := connect(t, g, nil)
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.True(t, r.IsError)
	assert.Equal(t, []string{"unknown_tool", "tool_not_approved"}, findingCodes(t, r))

	// Core pins from the options authorize a new session at once.
	g2 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, CoreTools: []string{"read_note"}})
	cs2 := connect(t, g2, nil)
	r = call(t, cs2, "read_note", map[string]any{"name": "a"})
	assert.False(t, r.IsError, text(r))
	r = call(t, cs2, "write_note", map[string]any{"name": "a"})
	assert.Equal(t, []string{"unknown_tool", "tool_not_approved"}, findingCodes(t, r))
}

// TestUntrustedUpstream: an upstream configured as unverified has its
// tools denied: they never enter the trust baseline by being listed,
// whatever the options say.
func TestUntrustedUpstream(t *testing.T) {
	f := newFixture(t, nil, nil)
	up := stdioUpstream(t, "notes")
	up.Trust = mcpgateway.TrustUnverified
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, CoreTools: []string{"read_note"}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.True(t, r.IsError)
	assert.Equal(t, []string{"unknown_tool", "tool_not_approved"}, findingCodes(t, r))
}

// TestEventLogFailureForwardsNothing: a decision that cannot be recorded
// is inconclusive, and the call is not sent.
func TestEventLogFailureForwardsNothing(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NoError(t, f.evlog.Close())
	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "unaudited"})
	assert.True(t, w.IsError)
	assert.Contains(t, text(w), "inconclusive")
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.True(t, r.IsError, "reads are not forwarded either")
}

// TestHTTPBothWays: Streamable HTTP downstream (Mcp-Session-Id) in front
// of a Streamable HTTP upstream.
func TestHTTPBothWays(t *testing.T) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: gw.URL}, sessionful)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	assert.NotEmpty(t, cs.ID(), "Mcp-Session-Id")
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "over http"})
	assert.False(t, w.IsError, text(w))
	assert.Equal(t, "note: over http", text(call(t, cs, "read_note", map[string]any{"name": "a"})))
}

// TestCancellationReachesUpstream: the client cancelling a call in flight
// cancels the forwarded request.
func TestCancellationReachesUpstream(t *testing.T) {
	hk := &hooks{started: make(chan struct{}), cancelled: make(chan struct{})}
	up := newTestUpstream(hk)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
		errc <- err
	}()
	<-hk.started // the call is in flight upstream
	cancel()
	<-hk.cancelled // and the cancellation reached the upstream
	assert.True(t, errors.Is(<-errc, context.Canceled))
}
