package mcpgateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/mcpgateway"
)

const (
	traceMarker   = "TRACE-MARKER-9b2d"
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// metaUpstream is an upstream whose read-only tool "probe" records the
// _meta of each call; "erase" (no annotations) needs a confirmation.
type metaUpstream struct {
	mu    sync.Mutex
	metas []mcp.Meta
}

func (u *metaUpstream) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	handler := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.metas = append(u.metas, req.Params.Meta)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "probe", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, handler)
	s.AddTool(&mcp.Tool{Name: "erase", InputSchema: schema}, handler)
	return s
}

func (u *metaUpstream) received() []mcp.Meta {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]mcp.Meta(nil), u.metas...)
}

// tracedGateway is a gateway whose host traces into the returned
// recorder, in front of a metaUpstream over Streamable HTTP.
func tracedGateway(t *testing.T) (*mcpgateway.Gateway, *metaUpstream, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	mu := &metaUpstream{}
	up := mu.server()
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixtureWith(t, confirmNonIdempotent, nil, nil, func(c *host.Config) { c.TracerProvider = tp })
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "probe-up", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	return g, mu, rec
}

func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrMap(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func assertNoMarker(t *testing.T, rec *tracetest.SpanRecorder) {
	t.Helper()
	for _, s := range rec.Ended() {
		assert.NotContains(t, s.Status().Description, traceMarker)
		for k, v := range attrMap(s) {
			assert.NotContains(t, v, traceMarker, "%s: %s", s.Name(), k)
		}
	}
}

// TestTracingForwardSpan: the client's traceparent in _meta parents the
// decision; the forwarded call is a span under the decision, and the
// upstream gets that span as its traceparent in _meta, other _meta kept.
func TestTracingForwardSpan(t *testing.T) {
	g, up, rec := tracedGateway(t)
	cs := connect(t, g, nil)
	toolNames(t, cs)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"q": traceMarker},
		Meta: mcp.Meta{"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01", "tracestate": "client=1", "progressToken": "p1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))

	decisions, forwards := spansNamed(rec, host.SpanDecision), spansNamed(rec, mcpgateway.SpanForward)
	require.Len(t, decisions, 1)
	require.Len(t, forwards, 1)
	ds, fs := decisions[0], forwards[0]
	assert.Equal(t, clientTraceID, ds.SpanContext().TraceID().String())
	assert.Equal(t, clientSpanID, ds.Parent().SpanID().String(), "the client's span parents the decision")
	assert.Equal(t, ds.SpanContext().SpanID(), fs.Parent().SpanID(), "the forward is a child of the decision")
	assert.Equal(t, clientTraceID, fs.SpanContext().TraceID().String())
	assert.Equal(t, trace.SpanKindClient, fs.SpanKind())
	a := attrMap(fs)
	assert.Equal(t, "probe-up", a[string(mcpgateway.AttrUpstream)])
	assert.Equal(t, "probe", a[string(mcpgateway.AttrTool)])
	assert.Equal(t, res.Meta[mcpgateway.MetaRunID], a[string(host.AttrRunID)])
	assert.Len(t, spansNamed(rec, host.SpanStage), 1)

	metas := up.received()
	require.Len(t, metas, 1)
	assert.Equal(t, "00-"+clientTraceID+"-"+fs.SpanContext().SpanID().String()+"-01", metas[0]["traceparent"],
		"the upstream continues the trace under the forward span")
	assert.Equal(t, "client=1", metas[0]["tracestate"], "the trace's state goes along")
	assert.NotEmpty(t, metas[0]["progressToken"], "a progress token goes along (the gateway's, mapped back to the client's)")
	assertNoMarker(t, rec)
}

// TestTracingDeniedNotForwarded: a denied call has its decision span and
// no forward span; nothing reaches the upstream.
func TestTracingDeniedNotForwarded(t *testing.T) {
	g, up, rec := tracedGateway(t)
	cs := connect(t, g, nil)
	toolNames(t, cs)
	res := call(t, cs, "erase", map[string]any{"q": traceMarker})
	require.True(t, res.IsError)
	assert.Len(t, spansNamed(rec, host.SpanDecision), 1)
	assert.Empty(t, spansNamed(rec, mcpgateway.SpanForward))
	assert.Empty(t, up.received())
	assertNoMarker(t, rec)
}

// headerTransport adds a traceparent header to every request.
type headerTransport struct{ traceparent string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(r)
}

// TestTracingHTTPHeader: over Streamable HTTP, a traceparent header
// parents the decision when _meta has none.
func TestTracingHTTPHeader(t *testing.T) {
	g, up, rec := tracedGateway(t)
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(gw.Close)
	hc := &http.Client{Transport: headerTransport{"00-" + clientTraceID + "-" + clientSpanID + "-01"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: gw.URL, HTTPClient: hc}, sessionful)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	toolNames(t, cs)
	res := call(t, cs, "probe", map[string]any{"q": traceMarker})
	require.False(t, res.IsError, text(res))
	decisions := spansNamed(rec, host.SpanDecision)
	require.Len(t, decisions, 1)
	assert.Equal(t, clientTraceID, decisions[0].SpanContext().TraceID().String())
	assert.Equal(t, clientSpanID, decisions[0].Parent().SpanID().String())
	require.Len(t, up.received(), 1)
	assert.Contains(t, up.received()[0]["traceparent"], clientTraceID)
	assertNoMarker(t, rec)
}

// TestTracingOffForwardsMetaAsIs: without tracing the client's _meta
// reaches the upstream unchanged, its traceparent included.
func TestTracingOffForwardsMetaAsIs(t *testing.T) {
	mu := &metaUpstream{}
	up := mu.server()
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "probe-up", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	toolNames(t, cs)
	tp := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{}, Meta: mcp.Meta{"traceparent": tp}})
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	require.Len(t, mu.received(), 1)
	assert.Equal(t, tp, mu.received()[0]["traceparent"])
}
