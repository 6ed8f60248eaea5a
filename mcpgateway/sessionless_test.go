package mcpgateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/mcpgateway"
)

const sessionlessRevision = "2026-07-28"

// revisionUpstream is the test upstream with a read-only tool, revision,
// that answers the revision the upstream's session speaks and the _meta
// keys of the call it received.
func revisionUpstream(t *testing.T) string {
	up := newTestUpstream(nil)
	up.AddTool(&mcp.Tool{Name: "revision", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var keys []string
			for k := range req.Params.Meta {
				keys = append(keys, k)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: req.Session.InitializeParams().ProtocolVersion + " " + strings.Join(keys, ",")}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSessionlessRevision: a client at 2026-07-28 is served over HTTP
// (each request alone, no session id) and over stdio; older clients keep
// their sessions. The upstream is spoken to at 2025-11-25 whatever the
// client's revision, and gets none of the sessionless revision's _meta.
func TestSessionlessRevision(t *testing.T) {
	for _, tc := range []struct {
		name, transport, version, want string
	}{
		{"http 2026-07-28", "http", sessionlessRevision, sessionlessRevision},
		{"http 2025-11-25", "http", "2025-11-25", "2025-11-25"},
		{"http 2025-06-18", "http", "2025-06-18", "2025-06-18"},
		{"stdio 2026-07-28", "stdio", sessionlessRevision, sessionlessRevision},
		{"stdio 2025-11-25", "stdio", "2025-11-25", "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: revisionUpstream(t)}}, ActivateOnList: []string{"*"}})
			ctx := context.Background()
			var cs *mcp.ClientSession
			if tc.transport == "http" {
				gw := httptest.NewServer(g.Handler())
				t.Cleanup(gw.Close)
				var err error
				cs, err = mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: gw.URL}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
				require.NoError(t, err)
				t.Cleanup(func() { _ = cs.Close() })
				assert.Equal(t, !strings.HasPrefix(tc.version, "2026"), cs.ID() != "", "a session id only for a revision with sessions")
			} else {
				cs = connectAt(t, g, nil, tc.version)
			}
			assert.Equal(t, tc.want, cs.InitializeResult().ProtocolVersion)
			assert.NotNil(t, cs.InitializeResult().Capabilities.Tools)
			_, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			r := call(t, cs, "revision", map[string]any{})
			require.False(t, r.IsError, text(r))
			rev, keys, _ := strings.Cut(text(r), " ")
			assert.Equal(t, min(tc.version, "2025-11-25"), rev, "the upstream speaks the client's revision, or the newest with sessions")
			assert.NotContains(t, keys, "io.modelcontextprotocol/", "the client's revision fields stay with the gateway")
			w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "at " + tc.version})
			require.False(t, w.IsError, text(w))
			assert.Equal(t, "note: at "+tc.version, text(call(t, cs, "read_note", map[string]any{"name": "a"})))
		})
	}
}

// sessionlessClient connects a 2026-07-28 client to g, over stdio or
// over HTTP (every request alone), with opts.
func sessionlessClient(t *testing.T, g *mcpgateway.Gateway, transport string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return clientAt(t, g, transport, sessionlessRevision, opts)
}

// clientAt connects a client at revision version to g, over stdio or over
// Streamable HTTP, with opts.
func clientAt(t *testing.T, g *mcpgateway.Gateway, transport, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if transport == "stdio" {
		return connectAt(t, g, opts, version)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: gw.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestSessionlessApprovalInputRequired: a 2026-07-28 client is never sent
// a request during a call (the revision forbids it); a call that needs a
// person's approval is answered input_required (multi round-trip) and
// decided when the client calls again with its answer. With the page, the
// input request is the page's URL and the client's answer approves
// nothing: the call runs once an approver decided on the page, once. With
// the form (the operator's choice), the client's answer is the approval.
// A "no" is not asked again; a client that cannot show the input request
// gets the refusal with the page's URL. Over HTTP every request is a
// session of its own: the call made again resumes the approval's.
func TestSessionlessApprovalInputRequired(t *testing.T) {
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}, Form: &mcp.FormElicitationCapabilities{}}}
	for _, tc := range []struct {
		name, mode string
		caps       *mcp.ClientCapabilities
		answer     string // the client's (the person's) answer
		approve    bool   // the approver's decision on the page
		asked      int
		runs       bool
		wantState  string // the refusal's approval request state
	}{
		{name: "page approved", mode: mcpgateway.ElicitURL, caps: caps, answer: "accept", approve: true, asked: 1, runs: true},
		{name: "page denied", mode: mcpgateway.ElicitURL, caps: caps, answer: "accept", approve: false, asked: 1, wantState: string(approval.StateDenied)},
		{name: "page declined by the person", mode: mcpgateway.ElicitURL, caps: caps, answer: "decline", asked: 1, wantState: string(approval.StatePending)},
		{name: "page, client without URL mode", mode: mcpgateway.ElicitURL, caps: &mcp.ClientCapabilities{}, answer: "accept", wantState: string(approval.StatePending)},
		{name: "form approved", mode: mcpgateway.ElicitForm, caps: caps, answer: "accept", approve: true, asked: 1, runs: true},
		{name: "form declined", mode: mcpgateway.ElicitForm, caps: caps, answer: "decline", asked: 1},
	} {
		for _, transport := range []string{"http", "stdio"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				f, g := pageGateway(t, tc.mode, pageURL)
				ctx := context.Background()
				var asked []*mcp.ElicitParams
				answer := tc.answer
				cs := sessionlessClient(t, g, transport, &mcp.ClientOptions{Capabilities: tc.caps,
					ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = append(asked, r.Params)
						if tc.mode == mcpgateway.ElicitURL && answer == "accept" {
							// The person opens the page the client shows, and
							// decides there (the agent's answer decides nothing).
							_, err := g.Desk().Decide(ctx, r.Params.ElicitationID, alice, tc.approve, "")
							require.NoError(t, err)
						}
						return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": tc.approve}}, nil
					}})
				_, err := cs.ListTools(ctx, nil)
				require.NoError(t, err)
				w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "keep"})
				require.False(t, w.IsError, text(w))

				d := call(t, cs, "delete_note", map[string]any{"name": "a"})
				require.Len(t, asked, tc.asked, "asked once, in the call's answer, never during the call")
				if tc.asked > 0 {
					assert.Equal(t, true, asked[0].Meta[mcpgateway.MetaApproval])
					assert.Contains(t, asked[0].Message, "gatehost approval request")
				}
				if tc.mode == mcpgateway.ElicitURL && tc.asked > 0 {
					assert.Equal(t, "url", asked[0].Mode)
					assert.Equal(t, pageURL+"/requests/"+asked[0].ElicitationID, asked[0].URL)
				}
				if tc.mode == mcpgateway.ElicitForm {
					assert.Contains(t, asked[0].Message, `"name": "a"`, "the form shows every argument")
				}
				read := text(call(t, cs, "read_note", map[string]any{"name": "a"}))
				if tc.runs {
					require.False(t, d.IsError, text(d))
					assert.NotEqual(t, "note: keep", read, "the approved call ran")
					// Once: the identical call asks anew.
					asked = nil
					answer = "decline"
					again := call(t, cs, "delete_note", map[string]any{"name": "a"})
					assert.True(t, again.IsError, "an approval runs its call once")
					assert.Len(t, asked, 1)
					return
				}
				require.True(t, d.IsError, text(d))
				assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
				assert.Equal(t, "note: keep", read, "nothing was sent")
				if tc.mode == mcpgateway.ElicitForm {
					require.NotEmpty(t, logRecords(t, f.logPath, "approval_refused"), "the person's no is recorded")
					return
				}
				v := approvalView(t, d)
				assert.Equal(t, tc.wantState, v["state"])
				id, _ := v["request_id"].(string)
				if tc.asked > 0 {
					assert.Equal(t, asked[0].ElicitationID, id, "the refusal names the request the client was shown")
				}
				if tc.wantState == string(approval.StateDenied) {
					assert.Contains(t, resultText(d), "An approver denied this call")
					return
				}
				assert.Contains(t, resultText(d), pageURL+"/requests/"+id)
			})
		}
	}
}

// sessionlessPost sends one 2026-07-28 tools/call of delete_note over
// HTTP with a bearer token, a request state and input responses, and
// returns the JSON-RPC result.
func sessionlessPost(t *testing.T, url, token, state string, responses map[string]any) map[string]any {
	t.Helper()
	params := map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "a"},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": sessionlessRevision,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}, "form": map[string]any{}}}}}
	if state != "" {
		params["requestState"], params["inputResponses"] = state, responses
	}
	return postCall(t, url, token, "delete_note", params)
}

// postCall sends one 2026-07-28 tools/call of tool with params over HTTP,
// with a bearer token unless token is "", and returns the JSON-RPC result.
func postCall(t *testing.T, url, token, tool string, params map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", sessionlessRevision)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	// An answer on an event stream: its data line.
	if i := strings.Index(string(body), "data: "); i >= 0 && !strings.HasPrefix(string(body), "{") {
		body = []byte(strings.SplitN(string(body[i+len("data: "):]), "\n", 2)[0])
	}
	var msg struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &msg), string(body))
	require.NotNil(t, msg.Result, string(body))
	return msg.Result
}

// TestSessionlessRequestStateForged: a request state is the gateway's, and
// holds only for the caller and the call it was issued for. Another
// principal presenting a caller's approved request, or a form answer under
// a state the gateway did not sign, approves nothing: it is asked anew,
// and the approved call still runs for its own caller, once.
func TestSessionlessRequestStateForged(t *testing.T) {
	tokens := identity.NewTokenSource("ops", func(tok string) (string, bool) {
		switch tok {
		case "bob-token-0123456789":
			return "bob", true
		case "eve-token-0123456789":
			return "eve", true
		}
		return "", false
	})
	accept := map[string]any{"gatehost/approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
	// asked serves a gateway in mode behind the tokens, and returns it, its
	// URL and the request state of bob's first call of delete_note.
	asked := func(t *testing.T, mode string) (*mcpgateway.Gateway, string, string) {
		_, g := pageGateway(t, mode, pageURL)
		srv := httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
		t.Cleanup(srv.Close)
		first := sessionlessPost(t, srv.URL, "bob-token-0123456789", "", nil)
		require.Equal(t, "input_required", first["resultType"], first)
		state, _ := first["requestState"].(string)
		return g, srv.URL, state
	}
	t.Run("page", func(t *testing.T) {
		g, url, state := asked(t, mcpgateway.ElicitURL)
		id := strings.TrimPrefix(state, "gatehost.page.")
		require.True(t, approval.ValidRequestID(id), state)
		_, err := g.Desk().Decide(context.Background(), id, alice, true, "")
		require.NoError(t, err)

		stolen := sessionlessPost(t, url, "eve-token-0123456789", state, accept)
		assert.Equal(t, "input_required", stolen["resultType"], "eve is asked for a request of her own: %v", stolen)
		assert.NotEqual(t, state, stolen["requestState"])
		r, err := g.Desk().Get(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, approval.StateApproved, r.State, "bob's approval is not used by eve's call")

		ran := sessionlessPost(t, url, "bob-token-0123456789", state, accept)
		assert.Equal(t, "complete", ran["resultType"], ran)
		assert.NotEqual(t, true, ran["isError"], "bob's approved call runs: %v", ran)
		again := sessionlessPost(t, url, "bob-token-0123456789", state, accept)
		assert.Equal(t, "input_required", again["resultType"], "once: %v", again)
	})
	t.Run("form", func(t *testing.T) {
		_, url, state := asked(t, mcpgateway.ElicitForm)
		require.True(t, strings.HasPrefix(state, "gatehost.form."), state)
		for _, forged := range []struct{ name, token, state string }{
			{"unsigned", "bob-token-0123456789", "gatehost.form." + strings.Repeat("0", 64)},
			{"another caller's", "eve-token-0123456789", state},
		} {
			res := sessionlessPost(t, url, forged.token, forged.state, accept)
			assert.Equal(t, "input_required", res["resultType"], "%s state approves nothing: %v", forged.name, res)
		}
		parts := strings.Split(strings.TrimPrefix(state, "gatehost.form."), ".")
		require.Len(t, parts, 3, state)
		tampered := "gatehost.form." + parts[0] + "." + parts[1] + "9." + parts[2] // a later deadline under the same MAC
		res := sessionlessPost(t, url, "bob-token-0123456789", tampered, accept)
		assert.Equal(t, "input_required", res["resultType"], "a state changed in any part approves nothing: %v", res)
		ran := sessionlessPost(t, url, "bob-token-0123456789", state, accept)
		assert.Equal(t, "complete", ran["resultType"], ran)
		assert.NotEqual(t, true, ran["isError"], "the call shown, answered by its caller, runs: %v", ran)
		replayed := sessionlessPost(t, url, "bob-token-0123456789", state, accept)
		assert.Equal(t, "input_required", replayed["resultType"], "an answer approves once; replayed, the form is asked again: %v", replayed)
	})
}

// connectAt is connect with the client asking for revision version.
func connectAt(t *testing.T, g *mcpgateway.Gateway, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// TestSessionlessSessionsEnd: over HTTP a sessionless request's session
// ends with the request, so the session caps bound the requests in
// flight, not the requests made.
func TestSessionlessSessionsEnd(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: revisionUpstream(t)}}, ActivateOnList: []string{"*"},
		MaxSessions: 2, MaxSessionsPerPrincipal: 1})
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gw.URL}, &mcp.ClientSessionOptions{ProtocolVersion: sessionlessRevision})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	for i := range 20 {
		r := call(t, cs, "read_note", map[string]any{"name": "a"})
		require.False(t, r.IsError, "request %d: %s", i, text(r))
	}
}

// TestSessionlessHeaderMismatch: at 2026-07-28 a request's Mcp-Method and
// Mcp-Name headers must say what its body does; one that does not is
// refused (400, mcp.CodeHeaderMismatch) before anything is decided or
// sent upstream, and the refusal is recorded.
func TestSessionlessHeaderMismatch(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":{"name":"a","text":"x"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tc := range []struct {
		name, method, tool string
		refused            bool
	}{
		{"name differs", "tools/call", "read_note", true},
		{"method differs", "tools/list", "write_note", true},
		{"name missing", "tools/call", "", true},
		{"method missing", "", "write_note", true},
		{"both match", "tools/call", "write_note", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: revisionUpstream(t)}}, ActivateOnList: []string{"*"}})
			gw := httptest.NewServer(g.Handler())
			t.Cleanup(gw.Close)
			req, err := http.NewRequest(http.MethodPost, gw.URL, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", sessionlessRevision)
			if tc.method != "" {
				req.Header.Set("Mcp-Method", tc.method)
			}
			if tc.tool != "" {
				req.Header.Set("Mcp-Name", tc.tool)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			refusals := logRecords(t, f.logPath, "mcp_request_refused")
			decisions := logRecords(t, f.logPath, "decision")
			if !tc.refused {
				assert.Equal(t, http.StatusOK, resp.StatusCode, string(b))
				assert.Empty(t, refusals)
				assert.Len(t, decisions, 1, "decided, once")
				assert.Contains(t, string(b), `"resultType":"complete"`, "a final answer at 2026-07-28 says so")
				assert.Contains(t, string(b), `"gatehost/run_id"`)
				return
			}
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var r struct {
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(b, &r), string(b))
			assert.Equal(t, int64(mcp.CodeHeaderMismatch), r.Error.Code)
			assert.Empty(t, decisions, "nothing decided")
			require.Len(t, refusals, 1)
			var data map[string]any
			require.NoError(t, json.Unmarshal(refusals[0].Data, &data))
			assert.Equal(t, "header_mismatch", data["reason"])
			assert.Equal(t, strconv.Quote(tc.tool), data["mcp_name"])
			assert.Equal(t, strconv.Quote(tc.method), data["mcp_method"])
		})
	}
}

// TestSessionlessSharedProcessByPrincipal: over HTTP every request of a
// 2026-07-28 client is a session of its own; with a shared upstream of
// two processes, each is given its principal's process, so what one
// request wrote to the process, the next reads back (in turn, every other
// request would meet the other process).
func TestSessionlessSharedProcessByPrincipal(t *testing.T) {
	f := newFixture(t, nil, nil)
	up := stdioUpstream(t, "notes")
	up.Processes = 2
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gw.URL}, &mcp.ClientSessionOptions{ProtocolVersion: sessionlessRevision})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for i := range 4 {
		name := "n" + strconv.Itoa(i)
		w := call(t, cs, "write_note", map[string]any{"name": name, "text": name})
		require.False(t, w.IsError, text(w))
		assert.Equal(t, "note: "+name, text(call(t, cs, "read_note", map[string]any{"name": name})), "request %d read back what it wrote", i)
	}
}

// TestSessionlessListChanged: a 2026-07-28 client over HTTP hears of list
// changes on its subscriptions/listen stream (it has no session, and no
// other stream): an upstream's tools/list_changed and prompts/list_changed
// reach it through a shared process.
func TestSessionlessListChanged(t *testing.T) {
	for _, mode := range []string{"schema", "prompt"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.Env = append(up.Env, promptsEnv+"=hello")
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
			tools, prompts := make(chan struct{}, 4), make(chan struct{}, 4)
			cs := sessionlessClient(t, g, "http", &mcp.ClientOptions{
				ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { tools <- struct{}{} },
				PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} },
			})
			toolNames(t, cs)
			r := call(t, cs, "rug_pull", map[string]any{"mode": mode})
			require.False(t, r.IsError, text(r))
			want := map[string]chan struct{}{"schema": tools, "prompt": prompts}[mode]
			select {
			case <-want:
			case <-time.After(30 * time.Second):
				t.Fatalf("no %s list_changed on the listen stream", mode)
			}
		})
	}
}

// TestSessionlessResumeInUse: while a call made again waits for the
// approver in the session it resumed, a second request resuming the same
// session is refused and removes nothing: the approved call then runs.
func TestSessionlessResumeInUse(t *testing.T) {
	tokens := identity.NewTokenSource("ops", func(tok string) (string, bool) { return "bob", tok == "bob-token-0123456789" })
	accept := map[string]any{"gatehost/approval": map[string]any{"action": "accept"}}
	_, g := pageGateway(t, mcpgateway.ElicitURL, pageURL)
	srv := httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
	t.Cleanup(srv.Close)
	first := sessionlessPost(t, srv.URL, "bob-token-0123456789", "", nil)
	state, _ := first["requestState"].(string)
	id := strings.TrimPrefix(state, "gatehost.page.")
	req, err := g.Desk().Get(context.Background(), id)
	require.NoError(t, err)

	done := make(chan map[string]any, 1)
	go func() { done <- sessionlessPost(t, srv.URL, "bob-token-0123456789", state, accept) }()
	// The call made again has resumed its session once the session exists.
	deadline := time.Now().Add(time.Minute)
	for {
		set, err := g.Host().Sessions().Load(context.Background(), req.Session)
		require.NoError(t, err)
		if set != nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the call made again never resumed its session")
		time.Sleep(10 * time.Millisecond)
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "delete_note", "arguments": map[string]any{"name": "a"}, "requestState": state, "inputResponses": accept,
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": sessionlessRevision,
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}}}})
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(b))
	require.NoError(t, err)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": sessionlessRevision, "Mcp-Method": "tools/call", "Mcp-Name": "delete_note", "Authorization": "Bearer bob-token-0123456789"} {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, string(body), `"error"`, "the second request is refused: the session is in use")
	set, err := g.Host().Sessions().Load(context.Background(), req.Session)
	require.NoError(t, err)
	require.NotNil(t, set, "the second request removed nothing")
	_, err = g.Desk().Decide(context.Background(), id, alice, true, "")
	require.NoError(t, err)
	ran := <-done
	assert.Equal(t, "complete", ran["resultType"], ran)
	assert.NotEqual(t, true, ran["isError"], "the approved call runs: %v", ran)
}
