package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
)

// stopTracing flushes the spans still queued, within tracing.timeout. A
// collector that does not take them costs those spans, logged, never the
// exit status.
func (s *Server) stopTracing() {
	if err := s.tracer.Shutdown(context.Background()); err != nil {
		s.logger.Warn("gatehost serve: tracing: spans dropped at exit", "err", err)
	}
}

// serviceVersion is the binary's module version, as service.version.
func serviceVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// tracerProvider is the provider of l's host: the one started with the
// server, whatever l's tracing: section says (a change needs a restart).
func (s *Server) tracerProvider(l *config.Loaded) trace.TracerProvider {
	started := config.Tracing{Exporter: config.TracingNone}
	if s.tracer != nil {
		started = s.tracer.Config()
	}
	if !started.Equal(l.Tracing) {
		s.logger.Warn("gatehost serve: tracing: changed in the config; a reload keeps the tracing the server started with (restart to change it)", "config", l.File)
	}
	return s.tracer.Provider()
}

// traceContext is the W3C Trace Context propagator (traceparent,
// tracestate).
var traceContext = propagation.TraceContext{}

// withTraceContext continues a caller's trace: with tracing on, the
// traceparent and tracestate headers (W3C Trace Context) become the parent
// of the decision's span. Without them, or malformed, the decision starts
// a trace of its own.
func (s *Server) withTraceContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.tracer != nil && r.Header.Get("Traceparent") != "" {
			r = r.WithContext(traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
}

// headerTraceResponse names the decision's span to the caller, in
// traceparent's format (W3C Trace Context Level 2's traceresponse).
const headerTraceResponse = "Traceresponse"

// setTraceResponse answers with the decision's span, when traced.
func setTraceResponse(w http.ResponseWriter, d *host.Decision) {
	sc := d.SpanContext()
	if !sc.IsValid() {
		return
	}
	w.Header().Set(headerTraceResponse, fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags()))
}
