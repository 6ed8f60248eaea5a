package mcpgateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
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

// TestSessionlessApprovalNotElicited: a 2026-07-28 client is never sent
// an elicitation during a call (the revision forbids it): a call that
// needs a person's approval is refused with the approval page's URL, and
// nothing is sent upstream.
func TestSessionlessApprovalNotElicited(t *testing.T) {
	for _, mode := range []string{mcpgateway.ElicitURL, mcpgateway.ElicitForm} {
		t.Run(mode, func(t *testing.T) {
			_, g := pageGateway(t, mode, pageURL)
			asked := 0
			cs := connectAt(t, g, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}, Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}}, sessionlessRevision)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			d := call(t, cs, "delete_note", map[string]any{"name": "a"})
			require.True(t, d.IsError)
			assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
			assert.Zero(t, asked)
			if mode != mcpgateway.ElicitURL {
				return
			}
			// Over stdio the connection is the session: once a person
			// approves on the page, the identical call runs, once.
			id, _ := approvalView(t, d)["request_id"].(string)
			require.True(t, approval.ValidRequestID(id))
			_, err = g.Desk().Decide(context.Background(), id, alice, true, "")
			require.NoError(t, err)
			r := call(t, cs, "delete_note", map[string]any{"name": "a"})
			assert.False(t, r.IsError, text(r))
			r = call(t, cs, "delete_note", map[string]any{"name": "a"})
			require.True(t, r.IsError, "once")
			assert.NotEqual(t, id, approvalView(t, r)["request_id"])
			assert.Zero(t, asked)
		})
	}
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
