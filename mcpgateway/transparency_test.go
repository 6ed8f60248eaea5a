package mcpgateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// recorder is a client that records what servers ask of it.
type recorder struct {
	mu       sync.Mutex
	sampled  []string
	elicited []string
	progress []float64
	logs     []string
	// progressed is signalled per progress notification: notifications
	// are handled on their own goroutines, so one may arrive after the
	// result of the call it reports on.
	progressed chan struct{}
}

func (r *recorder) options() *mcp.ClientOptions {
	r.progressed = make(chan struct{}, 64)
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.sampled = append(r.sampled, req.Params.SystemPrompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled answer"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.elicited = append(r.elicited, req.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.progress = append(r.progress, req.Params.Progress)
			r.progressed <- struct{}{}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.logs = append(r.logs, string(req.Params.Level))
		},
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestTransparency: @modelcontextprotocol/server-everything, configured
// session_scoped, answers the same through the gateway as directly, for
// every method that is not tools/call (its instructions labelled with its
// name, the server info gatehost's); and what it asks of the client
// (sampling, elicitation, progress) reaches the client through the
// gateway. TestTransparencyShared is the same server shared.
func TestTransparency(t *testing.T) {
	bin := nodeServer(t, "mcp-server-everything")
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, (&recorder{}).options()).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })

	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "everything", Command: []string{bin}, SessionScoped: true}}, ActivateOnList: []string{"*"}})
	rec := &recorder{}
	gw := connect(t, g, rec.options())

	// The server info is gatehost's, and the instructions are the
	// upstream's as pinned at first sight, labelled with its name
	// (TestInstructionsPinned).
	assert.Equal(t, "gatehost", gw.InitializeResult().ServerInfo.Name)
	assert.Equal(t, asJSON(t, direct.InitializeResult().Capabilities.Resources), asJSON(t, gw.InitializeResult().Capabilities.Resources))
	require.NotEmpty(t, direct.InitializeResult().Instructions)
	assert.Equal(t, mcpgateway.LabelInstructions("everything", direct.InitializeResult().Instructions), gw.InitializeResult().Instructions)

	require.NoError(t, gw.Ping(ctx, nil))
	for _, tc := range []struct {
		name string
		do   func(cs *mcp.ClientSession) (any, error)
	}{
		{"resources/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResources(ctx, nil) }},
		{"resources/templates/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResourceTemplates(ctx, nil) }},
		{"resources/read", func(cs *mcp.ClientSession) (any, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
		}},
		{"prompts/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListPrompts(ctx, nil) }},
		{"prompts/get", func(cs *mcp.ClientSession) (any, error) {
			return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"})
		}},
		{"completion/complete", func(cs *mcp.ClientSession) (any, error) {
			return cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
				Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"}})
		}},
		{"logging/setLevel", func(cs *mcp.ClientSession) (any, error) {
			return nil, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := tc.do(direct)
			got, gerr := tc.do(gw)
			require.NoError(t, werr)
			require.NoError(t, gerr)
			assert.JSONEq(t, asJSON(t, want), asJSON(t, got))
		})
	}

	_, err = gw.ListTools(ctx, nil) // activates the listed tools (ActivateOnList)
	require.NoError(t, err)
	t.Run("sampling from the server", func(t *testing.T) {
		r := call(t, gw, "trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})
		require.False(t, r.IsError, text(r))
		assert.Contains(t, text(r), "sampled answer")
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Len(t, rec.sampled, 1)
	})
	t.Run("elicitation from the server", func(t *testing.T) {
		r := call(t, gw, "trigger-elicitation-request", map[string]any{})
		require.False(t, r.IsError, text(r))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Len(t, rec.elicited, 1)
	})
	t.Run("progress", func(t *testing.T) {
		res, err := gw.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"progressToken": "p1"},
			Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.1, "steps": 2}})
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		// Both reach the client; the bound only ends a hang.
		for range 2 {
			select {
			case <-rec.progressed:
			case <-time.After(time.Minute):
				t.Fatal("a progress notification never reached the client")
			}
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.ElementsMatch(t, []float64{1, 2}, rec.progress)
	})
}

// TestTransparencyShared: server-everything shared by the sessions (the
// default) answers the list and read methods the same through the gateway
// as directly; it is offered no resource subscriptions; its progress
// reaches the session whose call it reports on, under that client's own
// token, and no other session; its sampling and elicitation reach no
// client.
func TestTransparencyShared(t *testing.T) {
	bin := nodeServer(t, "mcp-server-everything")
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, (&recorder{}).options()).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })

	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "everything", Command: []string{bin}}}, ActivateOnList: []string{"*"}})
	rec, other := &recorder{}, &recorder{}
	gw := connect(t, g, rec.options())
	gw2 := connect(t, g, other.options())

	assert.False(t, gw.InitializeResult().Capabilities.Resources.Subscribe, "not offered: a shared upstream's subscriptions would be every session's")
	for _, tc := range []struct {
		name string
		do   func(cs *mcp.ClientSession) (any, error)
	}{
		{"resources/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResources(ctx, nil) }},
		{"resources/read", func(cs *mcp.ClientSession) (any, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
		}},
		{"prompts/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListPrompts(ctx, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, werr := tc.do(direct)
			got, gerr := tc.do(gw)
			require.NoError(t, werr)
			require.NoError(t, gerr)
			assert.JSONEq(t, asJSON(t, want), asJSON(t, got))
		})
	}
	err = gw.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://resource/static/document/architecture.md"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared upstream")

	_, err = gw.ListTools(ctx, nil)
	require.NoError(t, err)
	_, err = gw2.ListTools(ctx, nil)
	require.NoError(t, err)
	t.Run("progress", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, cs := range []*mcp.ClientSession{gw, gw2} {
			wg.Go(func() {
				// The same token in both sessions, at once.
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"progressToken": "p1"},
					Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.2, "steps": 2}})
				if assert.NoError(t, err) {
					assert.False(t, res.IsError, text(res))
				}
			})
		}
		wg.Wait()
		for _, r := range []*recorder{rec, other} {
			for range 2 {
				select {
				case <-r.progressed:
				case <-time.After(time.Minute):
					t.Fatal("a progress notification never reached the client")
				}
			}
			r.mu.Lock()
			assert.ElementsMatch(t, []float64{1, 2}, r.progress, "each session gets its own call's progress, once")
			r.mu.Unlock()
		}
	})
	t.Run("sampling and elicitation from the server", func(t *testing.T) {
		call(t, gw, "trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})
		call(t, gw, "trigger-elicitation-request", map[string]any{})
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Empty(t, rec.sampled)
		assert.Empty(t, rec.elicited)
	})
}

// rawUpstream is an MCP server over Streamable HTTP that answers each
// method with the JSON it is given, verbatim: it lists what the Go SDK's
// types cannot express (fields of later revisions, vendors' fields).
type rawUpstream struct {
	mu      sync.Mutex
	results map[string]string // method → result JSON
}

func (u *rawUpstream) set(method, result string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.results[method] = result
}

func (u *rawUpstream) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		u.mu.Lock()
		res, ok := u.results[req.Method]
		u.mu.Unlock()
		if req.Method == "initialize" {
			res, ok = `{"protocolVersion":"`+req.Params.ProtocolVersion+`","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"raw","version":"1"}}`, true
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32601,"message":"no such method"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+res+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// rawClient speaks JSON-RPC to the gateway over an in-memory transport
// and reads its answers as they are on the wire.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	id   int
}

func connectRaw(t *testing.T, g *mcpgateway.Gateway) *rawClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeTransport(ctx, st) }()
	conn, err := ct.Connect(ctx)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		<-done
	})
	c := &rawClient{t: t, conn: conn}
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	require.NoError(t, conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}))
	return c
}

// call sends a request and returns the result's JSON as it came.
func (c *rawClient) call(method, params string) json.RawMessage {
	c.t.Helper()
	ctx := context.Background()
	c.id++
	id, err := jsonrpc.MakeID(float64(c.id))
	require.NoError(c.t, err)
	require.NoError(c.t, c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}))
	for {
		m, err := c.conn.Read(ctx)
		require.NoError(c.t, err)
		if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
			require.NoError(c.t, r.Error, method)
			return r.Result
		}
	}
}

// members decodes a JSON object's members.
func members(t *testing.T, raw json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return m
}

func items(t *testing.T, raw json.RawMessage, key string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	require.NoError(t, json.Unmarshal(members(t, raw)[key], &out), "%s", raw)
	return out
}

// An upstream's tool as the SDK's types cannot hold it: execution and
// unknown fields they drop (one of them, "id", a key of other catalog
// formats), annotations without the hints they would add, a vendor's
// _meta key, and one of gatehost's that the gateway removes.
const (
	wireTool = `{"name":"probe","title":"Probe","description":"Reads.",
		"inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},
		"annotations":{"readOnlyHint":true},
		"execution":{"taskSupport":"optional"},
		"icons":[{"src":"https://icons.example/probe.png","mimeType":"image/png","sizes":["48x48"]}],
		"_meta":{"vendor/x":1,"gatehost/decision":"forged"},
		"futureField":{"nested":[1,2.5,{"k":null}],"s":"<&>"},"id":"vendor-7"}`
	// wireToolShown is wireTool less gatehost's _meta key.
	wireToolShown = `{"name":"probe","title":"Probe","description":"Reads.",
		"inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},
		"annotations":{"readOnlyHint":true},
		"execution":{"taskSupport":"optional"},
		"icons":[{"src":"https://icons.example/probe.png","mimeType":"image/png","sizes":["48x48"]}],
		"_meta":{"vendor/x":1},
		"futureField":{"nested":[1,2.5,{"k":null}],"s":"<&>"},"id":"vendor-7"}`
	wireResource = `{"uri":"file:///r","name":"r","icons":[{"src":"https://icons.example/r.png"}],"annotations":{"audience":["user"]},"futureField":1}`
	wireTemplate = `{"uriTemplate":"file:///t/{x}","name":"t","futureField":true}`
	wirePrompt   = `{"name":"p","icons":[{"src":"https://icons.example/p.png"}],"arguments":[{"name":"a","required":true}],"futureField":"x"}`
)

func newRawUpstream(prompt string) *rawUpstream {
	return &rawUpstream{results: map[string]string{
		"tools/list":               `{"tools":[` + wireTool + `],"_meta":{"vendor/list":true}}`,
		"resources/list":           `{"resources":[` + wireResource + `]}`,
		"resources/templates/list": `{"resourceTemplates":[` + wireTemplate + `]}`,
		"prompts/list":             `{"prompts":[` + strings.Replace(wirePrompt, `"p"`, `"`+prompt+`"`, 1) + `]}`,
	}}
}

// withName is a definition with its name replaced.
func withName(t *testing.T, def, name string) string {
	t.Helper()
	m := members(t, json.RawMessage(def))
	m["name"], _ = json.Marshal(name)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// TestTransparentLists: the lists reach the client as the upstream sent
// them, read on the raw wire: every field of every tool, resource,
// template and prompt (no default added, none dropped), and of the list
// result only the upstream's own members (no ttlMs or cacheScope the
// upstream did not send). gatehost's _meta namespace is gatehost's only.
func TestTransparentLists(t *testing.T) {
	up := newRawUpstream("p")
	srv := up.serve(t)
	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	bl := baseline.NewMemory()
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "raw", URL: srv.URL}}, ActivateOnList: []string{"*"}, Baseline: bl})
	c := connectRaw(t, g)

	res := c.call("tools/list", `{}`)
	assert.JSONEq(t, `{"tools":[`+wireToolShown+`],"_meta":{"vendor/list":true}}`, string(res))
	for _, tc := range []struct{ method, want string }{
		{"resources/list", `{"resources":[` + wireResource + `]}`},
		{"resources/templates/list", `{"resourceTemplates":[` + wireTemplate + `]}`},
		{"prompts/list", `{"prompts":[` + wirePrompt + `]}`},
	} {
		assert.JSONEq(t, tc.want, string(c.call(tc.method, `{}`)), tc.method)
	}

	// What is shown is what is pinned.
	set, err := bl.Load(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, set.Len())
	assert.JSONEq(t, wireToolShown, string(set.Entries()[0].Definition))
}

// TestTransparentListsMerged: with several upstreams, each item is still
// the upstream's own (a tool namespaced for a name another upstream also
// lists differs in its name only), and the merged result has no member of
// any one upstream's result.
func TestTransparentListsMerged(t *testing.T) {
	a, b := newRawUpstream("pa"), newRawUpstream("pb")
	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{
		{Name: "a", URL: a.serve(t).URL}, {Name: "b", URL: b.serve(t).URL}}, ActivateOnList: []string{"*"}})
	c := connectRaw(t, g)

	res := c.call("tools/list", `{}`)
	assert.NotContains(t, members(t, res), "_meta")
	tools := items(t, res, "tools")
	require.Len(t, tools, 2, "%s", res)
	got := map[string]string{}
	for _, tl := range tools {
		var n struct{ Name string }
		require.NoError(t, json.Unmarshal(tl, &n))
		got[n.Name] = string(tl)
	}
	for _, name := range []string{"a.probe", "b.probe"} {
		require.Contains(t, got, name)
		assert.JSONEq(t, withName(t, wireToolShown, name), got[name])
	}
	for _, tc := range []struct{ method, want string }{
		{"resources/list", `{"resources":[` + wireResource + `,` + wireResource + `]}`},
		{"resources/templates/list", `{"resourceTemplates":[` + wireTemplate + `,` + wireTemplate + `]}`},
		{"prompts/list", `{"prompts":[` + withName(t, wirePrompt, "pa") + `,` + withName(t, wirePrompt, "pb") + `]}`},
	} {
		assert.JSONEq(t, tc.want, string(c.call(tc.method, `{}`)), tc.method)
	}
}

// TestTransparentListDrift: the baseline pins the whole definition as
// sent, so a change in a field the SDK does not know is drift: the tool is
// still shown as pinned, and a call is refused as tool_drifted.
func TestTransparentListDrift(t *testing.T) {
	up := newRawUpstream("p")
	srv := up.serve(t)
	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "raw", URL: srv.URL}}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	require.Equal(t, []string{"probe"}, toolNames(t, cs))

	up.set("tools/list", `{"tools":[`+strings.Replace(wireTool, `"taskSupport":"optional"`, `"taskSupport":"required"`, 1)+`]}`)
	rc := connectRaw(t, g)
	assert.JSONEq(t, `{"tools":[`+wireToolShown+`]}`, string(rc.call("tools/list", `{}`)), "shown as pinned")
	_, err := cs.ListTools(context.Background(), nil) // this session's connection lists the change too
	require.NoError(t, err)
	r := call(t, cs, "probe", map[string]any{"q": "x"})
	require.True(t, r.IsError)
	assert.Contains(t, findingCodes(t, r), mcpgateway.CodeToolDrifted, text(r))
	assert.Contains(t, text(r), "/execution/taskSupport")
}

// sdkForm is a definition as the SDK's types re-encode it: what the
// gateway used to pin.
func sdkForm(t *testing.T, def string) json.RawMessage {
	t.Helper()
	var tl mcp.Tool
	require.NoError(t, json.Unmarshal([]byte(def), &tl))
	b, err := json.Marshal(&tl)
	require.NoError(t, err)
	return b
}

// TestTransparentListRepinsSDKForm: a baseline entry pinned in the SDK's
// re-encoding of the listed definition, which differs from the wire form
// only by the defaults the SDK adds, is the same approval and is re-pinned
// in the wire form; one whose wire form carries more (a field the SDK
// dropped) is drift, to be approved again.
func TestTransparentListRepinsSDKForm(t *testing.T) {
	const plain = `{"name":"plain","description":"Reads.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`
	up := newRawUpstream("p")
	up.set("tools/list", `{"tools":[`+plain+`,`+wireTool+`]}`)
	up.set("tools/call", `{"content":[{"type":"text","text":"called"}]}`)
	srv := up.serve(t)
	ctx := context.Background()
	bl := baseline.NewMemory()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var entries []baseline.Entry
	for _, def := range []string{plain, wireToolShown} {
		legacy := sdkForm(t, def)
		require.NotContains(t, string(legacy), "execution")
		var n struct{ Name string }
		require.NoError(t, json.Unmarshal(legacy, &n))
		e, err := baseline.NewEntry("raw", n.Name, legacy, "ops@example", at)
		require.NoError(t, err)
		entries = append(entries, e)
	}
	_, err := bl.Approve(ctx, entries)
	require.NoError(t, err)

	f := newFixtureWith(t, []byte(`{"confirm_effects":[]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "raw", URL: srv.URL}}, ActivateOnList: []string{"*"}, Baseline: bl})
	cs := connect(t, g, nil)
	require.ElementsMatch(t, []string{"plain", "probe"}, toolNames(t, cs))

	set, err := bl.Load(ctx)
	require.NoError(t, err)
	e, ok := set.Get(baseline.Key{Upstream: "raw", Tool: "plain"})
	require.True(t, ok)
	assert.JSONEq(t, plain, string(e.Definition), "re-pinned as sent")
	assert.Equal(t, "ops@example", e.ApprovedBy)
	assert.True(t, at.Equal(e.ApprovedAt))
	r := call(t, cs, "plain", map[string]any{})
	assert.False(t, r.IsError, text(r))

	e, ok = set.Get(baseline.Key{Upstream: "raw", Tool: "probe"})
	require.True(t, ok)
	assert.Equal(t, entries[1].Digest, e.Digest, "not re-pinned")
	r = call(t, cs, "probe", map[string]any{"q": "x"})
	require.True(t, r.IsError)
	assert.Contains(t, findingCodes(t, r), mcpgateway.CodeToolDrifted, text(r))
}
