package mcpgateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/mcpgateway"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/store/postgres"
)

// fileBaseline is a trust baseline lock file in a fresh directory, as
// several gateway processes on one host share it.
func fileBaseline(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "mcp-tools.lock.json")
}

func openBaseline(t *testing.T, path string) baseline.Store {
	t.Helper()
	f, err := baseline.OpenFile(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func variantUpstream(t *testing.T, name, mode string) mcpgateway.Upstream {
	u := stdioUpstream(t, name)
	u.Env = append(u.Env, "GATEHOST_TEST_UPSTREAM_VARIANT="+mode)
	return u
}

func toolByName(t *testing.T, cs *mcp.ClientSession, name string) *mcp.Tool {
	t.Helper()
	lt, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tl := range lt.Tools {
		if tl.Name == name {
			return tl
		}
	}
	return nil
}

// TestBaselineOutlivesSessions: the definition a tool was first trusted
// with is pinned in the baseline every gateway shares. A later gateway
// (a reconnect, a second process) whose upstream lists any model-visible
// field otherwise is shown the pinned definition and refused the call
// (tool_drifted, recorded with what changed), until an operator approves
// the new definition; after that the call runs.
func TestBaselineOutlivesSessions(t *testing.T) {
	for _, mode := range []string{"schema", "annotations", "description", "title", "output_schema", "icons", "meta"} {
		t.Run(mode, func(t *testing.T) {
			path := fileBaseline(t)
			f := newFixture(t, nil, nil)
			g1 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
				ActivateOnList: []string{"*"}, Baseline: openBaseline(t, path)})
			cs1 := connect(t, g1, nil)
			pinned := toolByName(t, cs1, "write_note")
			require.NotNil(t, pinned)
			require.False(t, call(t, cs1, "write_note", map[string]any{"name": "a", "text": "v1"}).IsError)

			// The upstream changed between sessions; another gateway
			// process, on the same baseline file.
			g2 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{variantUpstream(t, "notes", mode)},
				ActivateOnList: []string{"*"}, Baseline: openBaseline(t, path)})
			cs2 := connect(t, g2, nil)
			shown := toolByName(t, cs2, "write_note")
			require.NotNil(t, shown)
			assert.Equal(t, asJSON(t, pinned), asJSON(t, shown), "the model is shown the pinned definition")
			r := call(t, cs2, "write_note", map[string]any{"name": "a", "text": "v2"})
			assert.True(t, r.IsError)
			assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, r))
			drifts := logRecords(t, f.logPath, "mcp_tool_drifted")
			require.NotEmpty(t, drifts)
			assert.Contains(t, string(drifts[0].Data), `"changes"`)
			assert.Equal(t, "note: ", text(call(t, cs2, "read_note", map[string]any{"name": "a"})), "nothing was written")

			// An operator reviews and approves: the new definition is
			// what every session is shown and decided against.
			reviews, failed, err := g2.ReviewBaseline(context.Background())
			require.NoError(t, err)
			require.Empty(t, failed)
			var changed []string
			for _, rv := range reviews {
				if rv.Status == mcpgateway.ReviewChanged {
					changed = append(changed, rv.Tool)
					assert.NotEmpty(t, rv.Changes)
				}
			}
			assert.Equal(t, []string{"write_note"}, changed)
			_, err = g2.ApproveBaseline(context.Background(), reviews, []string{"notes:write_nte"}, "operator:test")
			assert.ErrorIs(t, err, mcpgateway.ErrNotReviewed)
			assert.ErrorContains(t, err, `did you mean "notes:write_note"`)
			_, err = g2.ApproveBaseline(context.Background(), reviews, []string{"notes:write_note"}, "operator:test")
			require.NoError(t, err)
			assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_tool_approved"))
			// The first gateway's upstream still lists the old one: now
			// that is the drifted definition.
			r = call(t, cs1, "write_note", map[string]any{"name": "a", "text": "v1 again"})
			assert.Contains(t, findingCodes(t, r), "tool_drifted")
			switch mode {
			case "output_schema":
				return // the upstream's results do not follow the new output schema
			case "annotations":
				// Approved as it now is: destructive, so it needs a
				// person's confirmation.
				r = call(t, connect(t, g2, nil), "write_note", map[string]any{"name": "a", "text": "v2"})
				assert.NotContains(t, findingCodes(t, r), "tool_drifted")
				return
			}
			cs3 := connect(t, g2, nil)
			toolByName(t, cs3, "write_note")
			r = call(t, cs3, "write_note", map[string]any{"name": "a", "text": "v2"})
			assert.False(t, r.IsError, text(r))
		})
	}
}

// TestBaselineSharedByReplicas: two gateway replicas on one PostgreSQL
// store share the trust baseline: a definition first trusted on replica a
// is pinned on replica b, whose upstream lists it changed.
func TestBaselineSharedByReplicas(t *testing.T) {
	c := pgtest.Shared(t)
	dsn := c.NewDatabase(t)
	replica := func(node string) baseline.Store {
		db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, NodeID: node})
		require.NoError(t, err)
		t.Cleanup(db.Close)
		return db.Baseline()
	}
	f := newFixture(t, nil, nil)
	ga := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, Baseline: replica("a")})
	csa := connect(t, ga, nil)
	toolNames(t, csa)
	require.False(t, call(t, csa, "write_note", map[string]any{"name": "a", "text": "on a"}).IsError)
	gb := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{variantUpstream(t, "notes", "description")},
		ActivateOnList: []string{"*"}, Baseline: replica("b")})
	csb := connect(t, gb, nil)
	toolNames(t, csb)
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, call(t, csb, "write_note", map[string]any{"name": "a", "text": "on b"})))
}

// TestBaselineInSession: a change of any model-visible field within a
// session is refused at the very next call.
func TestBaselineInSession(t *testing.T) {
	for _, mode := range []string{"description", "title", "output_schema"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
			opts, changed := listChanged()
			cs := connect(t, g, opts)
			toolByName(t, cs, "write_note")
			require.False(t, call(t, cs, "rug_pull", map[string]any{"mode": mode}).IsError)
			<-changed // announced: the server sends it after its answer
			r := call(t, cs, "write_note", map[string]any{"name": "a", "text": "x"})
			assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, r))
		})
	}
}

// TestRequireApproval: with RequireApproval nothing enters the baseline
// by being listed; the model is not shown the tools until an operator
// approves them.
func TestRequireApproval(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		ActivateOnList: []string{"*"}, RequireApproval: true})
	cs := connect(t, g, nil)
	assert.Empty(t, toolNames(t, cs))
	r := call(t, cs, "read_note", map[string]any{"name": "a"})
	assert.Contains(t, findingCodes(t, r), "tool_not_approved")
	reviews, _, err := g.ReviewBaseline(context.Background())
	require.NoError(t, err)
	_, err = g.ApproveBaseline(context.Background(), reviews, []string{"read_note"}, "operator:test")
	require.NoError(t, err)
	assert.Equal(t, []string{"read_note"}, toolNames(t, cs))
	assert.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)
}

// rawPost sends one JSON-RPC message over Streamable HTTP with a bearer
// token and a session id, and returns the status.
func rawPost(t *testing.T, url, token, sid, method string, body any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPSessionBoundToPrincipal: a session belongs to the principal
// that initialized it: another token holder who learns its id can neither
// call in it, answer for it nor delete it (404, recorded).
func TestHTTPSessionBoundToPrincipal(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	tokens := identity.NewTokenSource("ops", func(tok string) (string, bool) {
		switch tok {
		case "alice-token-0123456789":
			return "alice", true
		case "mallory-token-0123456789":
			return "mallory", true
		}
		return "", false
	})
	srv := httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
	t.Cleanup(srv.Close)
	var sid string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer alice-token-0123456789")
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		return resp, err
	})
	alice, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, sessionful)
	require.NoError(t, err)
	t.Cleanup(func() { _ = alice.Close() })
	toolNames(t, alice)
	require.NotEmpty(t, sid)

	callMsg := map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "a"}}}
	answer := map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	assert.Equal(t, http.StatusNotFound, rawPost(t, srv.URL, "mallory-token-0123456789", sid, http.MethodPost, callMsg))
	assert.Equal(t, http.StatusNotFound, rawPost(t, srv.URL, "mallory-token-0123456789", sid, http.MethodPost, answer))
	assert.Equal(t, http.StatusNotFound, rawPost(t, srv.URL, "mallory-token-0123456789", sid, http.MethodGet, nil))
	assert.Equal(t, http.StatusNotFound, rawPost(t, srv.URL, "mallory-token-0123456789", sid, http.MethodDelete, nil))
	refused := logRecords(t, f.logPath, "mcp_session_refused")
	assert.Len(t, refused, 4)
	assert.Contains(t, string(refused[0].Data), "token:mallory")

	// Alice's session is intact.
	assert.False(t, call(t, alice, "read_note", map[string]any{"name": "a"}).IsError)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSessionCaps: sessions past the total or per-principal cap are
// refused at initialize, and a slot comes back when a session ends.
func TestSessionCaps(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, MaxSessions: 2})
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	open := func() (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, sessionful)
	}
	a, err := open()
	require.NoError(t, err)
	b, err := open()
	require.NoError(t, err)
	_, err = open()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session cap reached")
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool {
		c, err := open()
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	_ = b.Close()
	assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_session_refused"))
}

// TestSecondInitializeRefused: a second initialize on a live session is
// answered with an error and the session goes on as it was.
func TestSecondInitializeRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, ActivateOnList: []string{"*"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = g.ServeTransport(ctx, st) }()
	conn, err := ct.Connect(ctx)
	require.NoError(t, err)
	defer conn.Close()
	send := func(id int64, method string, params any) *jsonrpc.Response {
		p, _ := json.Marshal(params)
		var rid jsonrpc.ID
		if id != 0 {
			rid, _ = jsonrpc.MakeID(float64(id))
		}
		require.NoError(t, conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: p}))
		if id == 0 {
			return nil
		}
		for {
			m, err := conn.Read(ctx)
			require.NoError(t, err)
			if r, ok := m.(*jsonrpc.Response); ok {
				return r
			}
		}
	}
	init := map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}
	require.NoError(t, send(1, "initialize", init).Error)
	send(0, "notifications/initialized", map[string]any{})
	r := send(2, "initialize", init)
	require.Error(t, r.Error)
	assert.Contains(t, r.Error.Error(), "already initialized")
	r = send(3, "tools/list", map[string]any{})
	require.NoError(t, r.Error)
	assert.Contains(t, string(r.Result), "read_note")
}

// TestUpstreamElicitationLabelled: what an upstream asks the person is
// labelled with the upstream and recorded; a prompt that imitates
// gatehost's approval never reaches the person.
func TestUpstreamElicitationLabelled(t *testing.T) {
	f := newFixture(t, nil, nil)
	up := stdioUpstream(t, "notes")
	up.SessionScoped = true // a shared upstream's are refused (TestSharedUpstreamRequests)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
	var asked []string
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	toolNames(t, cs)
	r := call(t, cs, "ask", map[string]any{})
	assert.Equal(t, "answer: decline", text(r))
	require.Len(t, asked, 1)
	assert.True(t, strings.HasPrefix(asked[0], `[Asked by the MCP server "notes", not by gatehost`), asked[0])
	r = call(t, cs, "ask", map[string]any{"spoof": true})
	assert.Len(t, asked, 1, "the imitation never reached the person")
	// The cut-off upstream never answers the call: it ends with the
	// connection, not at the call timeout.
	assert.True(t, r.IsError)
	assert.Contains(t, text(r), "upstream notes was disconnected during the call")
	recs := logRecords(t, f.logPath, "mcp_upstream_request")
	require.Len(t, recs, 2)
	assert.Contains(t, string(recs[1].Data), "imitates gatehost's approval prompt")
}

// TestResourcesRoutedToOwner: with several upstreams, a resource goes to
// the one upstream that lists it.
func TestResourcesRoutedToOwner(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "aaa"), stdioUpstream(t, "zzz")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	for _, name := range []string{"aaa", "zzz"} {
		rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "note://" + name + "/only"})
		require.NoError(t, err)
		assert.Equal(t, "served by "+name, rr.Contents[0].Text)
	}
}

// TestConfigNamesMatchNothing: a tool name in the config that matches no
// tool the upstreams list refuses every session, naming the key and the
// closest real name; never a protection silently off.
func TestConfigNamesMatchNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exec     string
		opts     mcpgateway.Options
		want     []string
		accepted bool
	}{
		{name: "all match", exec: `{"confirm_tools":["mcp.notes:delete_note"]}`,
			opts: mcpgateway.Options{CoreTools: []string{"read_note"}, ActivateOnList: []string{"mcp.notes:write_note", "*"}}, accepted: true},
		{name: "confirm_tools typo", exec: `{"confirm_tools":["mcp.notes:delete_not"]}`,
			want: []string{"confirm_tools[0]", `"mcp.notes:delete_not" matches no tool`, `did you mean "mcp.notes:delete_note"`}},
		{name: "confirm_tools other upstream name", exec: `{"confirm_tools":["mcp.fs:delete_note"]}`,
			want: []string{"confirm_tools[0]", `did you mean "mcp.notes:delete_note"`}},
		{name: "exempt_tools", exec: `{"exempt_tools":["mcp.notes:raed_note"]}`, want: []string{"exempt_tools[0]"}},
		{name: "principals allow_tools", exec: `{"principals":[{"when":{"anonymous":true},"allow_tools":["mcp.notes:wrte_note"]}]}`,
			want: []string{"allow_tools[0]", `did you mean "mcp.notes:write_note"`}},
		{name: "sessions.core", opts: mcpgateway.Options{CoreTools: []string{"read_nte"}}, want: []string{"mcp.sessions.core[0]", `did you mean`}},
		{name: "activate_on_list", opts: mcpgateway.Options{ActivateOnList: []string{"*", "writ_note"}}, want: []string{"mcp.sessions.activate_on_list[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, json.RawMessage(cmpOr(tc.exec, `{}`)), nil, nil)
			tc.opts.Upstreams = []mcpgateway.Upstream{stdioUpstream(t, "notes")}
			g := f.newGateway(t, tc.opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ct, st := mcp.NewInMemoryTransports()
			go func() { _ = g.ServeTransport(ctx, st) }()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, ct, sessionful)
			if tc.accepted {
				require.NoError(t, err)
				_ = cs.Close()
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotEmpty(t, logRecords(t, f.logPath, "mcp_config_refused"))
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestUpstreamFailureIsolated: an upstream that cannot start leaves out
// its own tools only; the others serve, and Readiness names it failing.
func TestUpstreamFailureIsolated(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{
		stdioUpstream(t, "notes"), {Name: "gone", Command: []string{"/nonexistent/mcp-server"}}}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	assert.Contains(t, toolNames(t, cs), "read_note")
	assert.False(t, call(t, cs, "read_note", map[string]any{"name": "a"}).IsError)
	r := g.Readiness()
	assert.False(t, r.Ready)
	require.Len(t, r.Upstreams, 2)
	assert.Equal(t, "up", r.Upstreams[0].State)
	assert.Equal(t, "failing", r.Upstreams[1].State)
	assert.NotEmpty(t, r.Upstreams[1].Error)
}

// TestDriftSeenByOneSessionDeniesAll: once any connection of an upstream
// lists a tool otherwise than the baseline, every session of the gateway
// is denied the tool, also one whose connection still lists the approved
// definition because the server did not announce the change.
func TestDriftSeenByOneSessionDeniesAll(t *testing.T) {
	var mode atomic.Value
	mode.Store("")
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		// Each upstream session meets the server as it is when it
		// connects; nothing is announced to the others.
		s := mcp.NewServer(&mcp.Implementation{Name: "quiet", Version: "1"}, nil)
		s.AddTool(upstreamVariant(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, mode.Load().(string)),
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
			})
		return s
	}, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "quiet", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	cs1 := connect(t, g, nil)
	toolNames(t, cs1)
	require.False(t, call(t, cs1, "echo", map[string]any{}).IsError)

	mode.Store("description")
	cs2 := connect(t, g, nil)
	toolNames(t, cs2)
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, call(t, cs2, "echo", map[string]any{})))
	r := call(t, cs1, "echo", map[string]any{})
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, r), "the first session's connection has not listed since")
	assert.Contains(t, text(r), "seen by another session")
}

// TestPromptLookalikes: with several upstreams, prompts whose names a
// person could take for each other (case, Unicode look-alikes, invisible
// characters) are neither listed nor served; others are, by their owner.
func TestPromptLookalikes(t *testing.T) {
	withPrompts := func(name, prompts string) mcpgateway.Upstream {
		u := stdioUpstream(t, name)
		u.Env = append(u.Env, "GATEHOST_TEST_UPSTREAM_PROMPTS="+prompts)
		return u
	}
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{
		withPrompts("aaa", "send_mail,Greet,summary"),
		withPrompts("zzz", "send_maіl,greet,delete\u200b_all,only_zzz")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	lp, err := cs.ListPrompts(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, p := range lp.Prompts {
		names = append(names, p.Name)
	}
	assert.ElementsMatch(t, []string{"summary", "only_zzz"}, names)
	for _, n := range []string{"send_mail", "send_maіl", "greet", "Greet", "delete\u200b_all"} {
		_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: n})
		assert.Error(t, err, n)
	}
	r, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "only_zzz"})
	require.NoError(t, err)
	assert.Equal(t, "prompt of zzz", r.Messages[0].Content.(*mcp.TextContent).Text)
}

// TestConfigNamesWhileAnUpstreamIsDown: with one upstream down, a name of
// the config that matches nothing among the upstreams that did list (and
// cannot be the down one's) still refuses the session: "not checked yet"
// never lets a call through.
func TestConfigNamesWhileAnUpstreamIsDown(t *testing.T) {
	f := newFixtureWith(t, json.RawMessage(`{"confirm_tools":["mcp.notes:delete_not"]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{
		stdioUpstream(t, "notes"), {Name: "gone", Command: []string{"/nonexistent/mcp-server"}}}, ActivateOnList: []string{"*"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = g.ServeTransport(ctx, st) }()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, ct, sessionful)
	require.Error(t, err, "refused at initialize, as with every upstream up")
	assert.Contains(t, err.Error(), `"mcp.notes:delete_not" matches no tool`)
}

// TestUpstreamRequestNotRecorded: what an upstream asks the person reaches
// the person only once it is recorded. With the event log refusing the
// record, an elicitation made during a call, and one made in a
// 2026-07-28 answer (asked by the gateway of an older client, or passed
// in the gateway's answer to a 2026-07-28 client), is refused unshown.
func TestUpstreamRequestNotRecorded(t *testing.T) {
	elicits := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	for _, tc := range []struct {
		name    string
		url     bool   // the asking 2026-07-28 upstream, else the notes upstream asking during a call
		version string // the client's revision
	}{
		{name: "during a call", version: "2025-11-25"},
		{name: "in an answer, asked of a 2025 client", url: true, version: "2025-11-25"},
		{name: "in an answer, passed to a 2026 client", url: true, version: sessionlessRevision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = true
			if tc.url {
				up = mcpgateway.Upstream{Name: "asking", URL: askingUpstream(t, "Your name?"), ProtocolVersion: sessionlessRevision}
			}
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
			mcpgateway.FailRecords(g, "mcp_upstream_request")
			var asked atomic.Int32
			opts := &mcp.ClientOptions{Capabilities: elicits, ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}, nil
			}}
			var cs *mcp.ClientSession
			if tc.version == sessionlessRevision {
				cs = sessionlessClient(t, g, "http", opts)
			} else {
				cs = connectAt(t, g, opts, tc.version)
			}
			toolNames(t, cs)
			var r *mcp.CallToolResult
			if tc.url {
				r = call(t, cs, "greet", map[string]any{})
				require.True(t, r.IsError, text(r))
				assert.Contains(t, text(r), "not recorded")
			} else {
				r = call(t, cs, "ask", map[string]any{})
				// The upstream's tool reports the error its request got.
				assert.NotContains(t, text(r), "answer: accept")
			}
			assert.Zero(t, asked.Load(), "never shown to the person")
			assert.NotContains(t, text(r), "hello Alice")
		})
	}
}

// TestUpstreamRequestOnCallStream: what an upstream asks during a call
// reaches an HTTP client on that call's own response stream, so a client
// without the standalone SSE stream (optional in Streamable HTTP) is asked
// too; a client with it gets the request the same way.
func TestUpstreamRequestOnCallStream(t *testing.T) {
	for _, tc := range []struct {
		name       string
		standalone bool
		url        bool // the upstream over Streamable HTTP, else a session-scoped process
	}{
		{name: "no standalone stream, process upstream"},
		{name: "no standalone stream, HTTP upstream", url: true},
		{name: "standalone stream, process upstream", standalone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = true
			if tc.url {
				s := newTestUpstream(nil)
				srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
				t.Cleanup(srv.Close)
				up = mcpgateway.Upstream{Name: "notes", URL: srv.URL}
			}
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(gw.Close)
			var asked atomic.Int32
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					return &mcp.ElicitResult{Action: "decline"}, nil
				}}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: gw.URL, DisableStandaloneSSE: !tc.standalone}, sessionful)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			toolNames(t, cs)
			assert.Equal(t, "answer: decline", text(call(t, cs, "ask", map[string]any{})))
			assert.EqualValues(t, 1, asked.Load())
		})
	}
}
