package mcpgateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// TestUpstreamRequestFlood: an upstream that asks the client for its roots
// again and again gets its budget (MaxUpstreamRequestsPerMinute) and then
// refusals, which never reach the client; the event log holds a record of
// each request relayed or answered and few records of the refusals, which
// together count every one.
func TestUpstreamRequestFlood(t *testing.T) {
	const budget, flood = 5, 200
	for _, tc := range []struct {
		name    string
		scoped  bool
		outcome string // of a request within the budget
	}{
		{"session-scoped", true, "relayed"},
		{"shared", false, "answered: no roots (shared upstream)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = tc.scoped
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
				MaxUpstreamRequestsPerMinute: budget})
			cs := connect(t, g, nil)
			toolNames(t, cs)
			start := time.Now()
			r := call(t, cs, "ask", map[string]any{"via": "roots_flood", "n": flood})
			elapsed := time.Since(start)
			require.False(t, r.IsError, text(r))
			var ok, refused int
			_, err := fmt.Sscanf(text(r), "ok %d refused %d", &ok, &refused)
			require.NoError(t, err, text(r))
			assert.Equal(t, flood, ok+refused)
			// The bucket refills one request every 60/budget seconds.
			assert.GreaterOrEqual(t, ok, budget)
			assert.LessOrEqual(t, ok, budget+1+int(elapsed/(time.Minute/budget)), "within the budget")

			require.NoError(t, g.Close()) // records the refusals not yet recorded
			var within, refusalRecords, counted int
			for _, rec := range logRecords(t, f.logPath, "mcp_upstream_request") {
				var d struct {
					Method, Outcome string
					Refused         int
				}
				require.NoError(t, json.Unmarshal(rec.Data, &d))
				switch {
				case d.Outcome == tc.outcome:
					assert.Equal(t, "roots/list", d.Method)
					within++
				case d.Refused > 0:
					assert.Contains(t, d.Outcome, "over the upstream's request budget")
					refusalRecords++
					counted += d.Refused
				default:
					t.Errorf("unexpected record %s", rec.Data)
				}
			}
			assert.Equal(t, ok, within, "each request within the budget recorded")
			assert.Equal(t, refused, counted, "every refusal counted")
			// One record a second at most, and the one at close.
			assert.LessOrEqual(t, refusalRecords, 2+int(elapsed/time.Second))
		})
	}
}

// TestUpstreamAnnouncementFlood: an upstream that announces a change of
// its tools thousands of times costs a few listings, not one each, and a
// call after it is decided on a listing read after the last announcement.
func TestUpstreamAnnouncementFlood(t *testing.T) {
	const flood = 2000
	for _, scoped := range []bool{true, false} {
		t.Run(fmt.Sprintf("session-scoped=%v", scoped), func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = scoped
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
			cs := connect(t, g, nil)
			toolNames(t, cs)
			lists := func() int {
				var n int
				_, err := fmt.Sscanf(text(call(t, cs, "ask", map[string]any{"via": "lists"})), "lists %d", &n)
				require.NoError(t, err)
				return n
			}
			before := lists()
			assert.Equal(t, "announced", text(call(t, cs, "ask", map[string]any{"via": "announce", "n": flood})))
			r := call(t, cs, "read_note", map[string]any{"name": "a"})
			assert.False(t, r.IsError, text(r))
			// Listings run one at a time, and the announcements that come
			// during one cost one more; without that, one listing each.
			assert.Less(t, lists()-before, flood/20)
		})
	}
}

// TestUpstreamRequestsNotCarried: a request an upstream makes of the
// client that the gateway does not carry is refused at once, unrecorded.
// The SDK's client would answer completion/complete by asking the upstream
// back and waiting, without bound: 500 of them held 500 goroutines and
// kept the gateway from closing. Imitations of gatehost's approval prompt
// spend the budget first, so a flood of them is recorded a budget's worth
// of times, not once each.
func TestUpstreamRequestsNotCarried(t *testing.T) {
	for _, tc := range []struct {
		name, method, params string
	}{
		{"completion/complete", "completion/complete", `{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}`},
		{"tasks/get", "tasks/get", `{"taskId":"t"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, g, cs := scopedUpstream(t, 5)
			assert.Equal(t, "sent", text(call(t, cs, "ask", map[string]any{"via": "raw_requests", "n": 500, "m": tc.method, "p": tc.params})))
			// Answered before the call's own answer was read: nothing
			// was asked back of the upstream.
			assert.Equal(t, "received 0", text(call(t, cs, "ask", map[string]any{"via": "received", "m": tc.method})))
			_ = cs.Close()
			closed := make(chan error, 1)
			go func() { closed <- g.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(time.Minute):
				t.Fatal("the gateway did not close: requests of the upstream are still waiting")
			}
			assert.Empty(t, logRecords(t, f.logPath, "mcp_upstream_request"))
		})
	}

	// An imitation of gatehost's approval prompt cuts the upstream off,
	// and the next call connects it again: each call's flood is met by
	// the same budget, spent before the imitation is looked at.
	t.Run("imitations", func(t *testing.T) {
		f, g, cs := scopedUpstream(t, 5)
		start := time.Now()
		for range 4 {
			call(t, cs, "ask", map[string]any{"via": "raw_requests", "n": 300, "m": "elicitation/create",
				"p": `{"message":"gatehost approval request","requestedSchema":{"type":"object","properties":{"approve":{"type":"boolean"}}}}`})
		}
		require.NoError(t, g.Close())
		imitations := 0
		for _, rec := range logRecords(t, f.logPath, "mcp_upstream_request") {
			if strings.Contains(string(rec.Data), "imitates gatehost's approval prompt") {
				imitations++
			}
		}
		assert.Positive(t, imitations)
		assert.LessOrEqual(t, imitations, 5+1+int(time.Since(start)/(time.Minute/5)))
	})
}

// scopedUpstream is a gateway in front of a session-scoped test upstream
// with a budget of perMinute requests of the client, and a client that
// has listed its tools.
func scopedUpstream(t *testing.T, perMinute int) (*fixture, *mcpgateway.Gateway, *mcp.ClientSession) {
	t.Helper()
	f := newFixture(t, nil, nil)
	up := stdioUpstream(t, "notes")
	up.SessionScoped = true
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
		MaxUpstreamRequestsPerMinute: perMinute})
	cs := connect(t, g, nil)
	toolNames(t, cs)
	return f, g, cs
}

// TestUpstreamInputInAnswerBudget: a 2026-07-28 upstream's input requests,
// which come in its answers, spend the same budget: past it the answer is
// refused and the person is not asked.
func TestUpstreamInputInAnswerBudget(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "greet", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in := mcp.InputRequestMap{}
			for i := range 4 {
				in[fmt.Sprint("q", i)] = &mcp.ElicitParams{Message: "Your name?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}
			}
			return &mcp.CallToolResult{RequestState: "s", InputRequests: in}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{ActivateOnList: []string{"*"}, MaxUpstreamRequestsPerMinute: 5,
		Upstreams: []mcpgateway.Upstream{{Name: "asking", URL: srv.URL, ProtocolVersion: sessionlessRevision}}})
	var asked atomic.Int64
	cs := connectAt(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "x"}}, nil
	}}, "2025-11-25")
	toolNames(t, cs)
	start := time.Now()
	var last *mcp.CallToolResult
	for range 3 {
		last = call(t, cs, "greet", map[string]any{})
	}
	assert.True(t, last.IsError, "past the budget the call is refused")
	assert.Contains(t, text(last), "over its budget")
	assert.LessOrEqual(t, asked.Load(), int64(5+1+int(time.Since(start)/(time.Minute/5))), "the budget bounds what reaches the person")
}

// TestSessionlessRequestsShareBudget: sessionless requests, each of which
// connects its upstream anew, spend one budget: their caller's.
func TestSessionlessRequestsShareBudget(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: revisionUpstream(t)}}, ActivateOnList: []string{"*"},
		MaxUpstreamRequestsPerMinute: 5})
	cs := sessionlessClient(t, g, "http", nil)
	toolNames(t, cs)
	start := time.Now()
	for range 4 {
		r := call(t, cs, "ask", map[string]any{"via": "roots_flood", "n": 20})
		require.False(t, r.IsError, text(r))
	}
	require.NoError(t, g.Close())
	answered := 0
	for _, rec := range logRecords(t, f.logPath, "mcp_upstream_request") {
		if strings.Contains(string(rec.Data), "answered: no roots") {
			answered++
		}
	}
	assert.GreaterOrEqual(t, answered, 5)
	assert.LessOrEqual(t, answered, 5+1+int(time.Since(start)/(time.Minute/5)), "one budget for the caller")
}

// TestAnonymousSessionsBudgets: anonymous callers are one principal, but
// each of their sessions has a budget of its own: what one session's
// upstream asks does not spend another's.
func TestAnonymousSessionsBudgets(t *testing.T) {
	f := newFixture(t, nil, nil)
	up := stdioUpstream(t, "notes")
	up.SessionScoped = true
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
		MaxUpstreamRequestsPerMinute: 5})
	a, b := connect(t, g, nil), connect(t, g, nil)
	toolNames(t, a)
	toolNames(t, b)
	var ok, refused int
	_, err := fmt.Sscanf(text(call(t, a, "ask", map[string]any{"via": "roots_flood", "n": 50})), "ok %d refused %d", &ok, &refused)
	require.NoError(t, err)
	require.Positive(t, refused, "a's budget is spent")
	assert.Equal(t, "ok 1 refused 0", text(call(t, b, "ask", map[string]any{"via": "roots_flood", "n": 1})))
}
