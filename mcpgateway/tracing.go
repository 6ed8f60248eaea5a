package mcpgateway

import (
	"context"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/host"
)

// Tracing (docs/IDENTITY-AND-TRACING.md "Tracing"), with the host's
// Config.TracerProvider set: a tools/call's decision continues the client's
// trace — W3C Trace Context in the call's _meta (traceparent, tracestate:
// MCP's SEP-414), else, over Streamable HTTP, in the request's headers — and
// an accepted call's forwarding upstream is a span (SpanForward) under the
// decision's, whose traceparent replaces the client's in the _meta sent
// upstream.
const (
	// SpanForward is the span of an accepted tools/call sent upstream.
	SpanForward = "gatehost.mcp.forward"
	// TracerName is the instrumentation scope of the gateway's spans.
	TracerName = "github.com/gatehost/gatehost/mcpgateway"
)

// Attribute keys of SpanForward; never the call's arguments.
const (
	AttrUpstream = attribute.Key("gatehost.mcp.upstream")
	AttrTool     = attribute.Key("gatehost.mcp.tool")
)

var traceContext = propagation.TraceContext{}

// metaCarrier reads and writes trace context in an MCP _meta.
type metaCarrier mcp.Meta

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string { return slices.Collect(maps.Keys(m)) }

// continueTrace is ctx with the client's span as the parent of the
// decision's, when tracing is on and the client sent one: _meta first,
// then the HTTP request's headers. A malformed traceparent is ignored.
func (d *downstream) continueTrace(ctx context.Context, req mcp.Request, meta mcp.Meta) context.Context {
	if d.g.Host().TracerProvider() == nil {
		return ctx
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(extra.Header))
	}
	if _, ok := meta["traceparent"].(string); ok {
		ctx = traceContext.Extract(ctx, metaCarrier(meta))
	}
	return ctx
}

// tracedForward is forwardCall inside a SpanForward span under the
// decision's, which the upstream receives as its parent.
func (d *downstream) tracedForward(ctx context.Context, up *upconn, name string, p *mcp.CallToolParamsRaw, dec *host.Decision, seen *listing) (mcp.Result, error) {
	tp := d.g.Host().TracerProvider()
	if tp == nil {
		return d.forwardCall(ctx, up, name, p, dec.RunID, seen)
	}
	ctx, span := tp.Tracer(TracerName).Start(trace.ContextWithSpanContext(ctx, dec.SpanContext()), SpanForward,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrUpstream.String(up.u.Name), AttrTool.String(name), host.AttrRunID.String(dec.RunID)))
	defer span.End()
	pc := *p
	pc.Meta = mcp.Meta{}
	maps.Copy(pc.Meta, p.Meta)
	delete(pc.Meta, "tracestate") // the client's, for its own span: ours replaces both
	traceContext.Inject(ctx, metaCarrier(pc.Meta))
	res, err := d.forwardCall(ctx, up, name, &pc, dec.RunID, seen)
	switch r, _ := res.(*mcp.CallToolResult); {
	case err != nil:
		span.SetAttributes(host.AttrErrorType.String("protocol_error"))
		span.SetStatus(codes.Error, "protocol_error")
	case r != nil && r.IsError:
		// The tool's own error or the gateway's (a timeout, a closed
		// connection): either way the call did not succeed.
		span.SetAttributes(host.AttrErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
	return res, err
}
