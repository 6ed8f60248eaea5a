package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
)

// Tracer is the span pipeline a tracing: section describes (README
// "Tracing"): an OpenTelemetry SDK provider that samples, batches and
// exports spans over OTLP. Spans are queued and exported in the background:
// a decision never waits for the collector, and when the queue is full
// (the collector is down or slow) spans are dropped, not decisions
// delayed. A nil *Tracer is tracing off.
type Tracer struct {
	tp      *sdktrace.TracerProvider
	conf    config.Tracing
	timeout time.Duration
}

// NewTracer builds the provider of t, or returns nil for a section whose
// exporter is none. version is the service.version resource attribute.
// Nothing is dialled yet: an unreachable collector is reported, through
// logger (nil: OpenTelemetry's default, stderr), when an export fails. It
// sets OpenTelemetry's global error handler to logger.
func NewTracer(ctx context.Context, t config.Tracing, version string, logger *slog.Logger) (*Tracer, error) {
	if !t.Enabled() {
		return nil, nil
	}
	exp, err := newExporter(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", t.ServiceName), attribute.String("service.version", version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	if logger != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("tracing: spans not exported", "exporter", t.Exporter, "endpoint", t.Endpoint, "err", err)
		}))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
		sdktrace.WithBatcher(exp, sdktrace.WithExportTimeout(t.Timeout)),
	)
	return &Tracer{tp: tp, conf: t, timeout: t.Timeout}, nil
}

// newExporter is t's OTLP exporter. Retries of a failed export stop within
// t.Timeout, so that the flush at exit is bounded.
func newExporter(ctx context.Context, t config.Tracing) (*otlptrace.Exporter, error) {
	switch t.Exporter {
	case config.TracingOTLPHTTP:
		return otlptracehttp.New(ctx, exporterOptions(t, otlpOptions[otlptracehttp.Option]{
			timeout: otlptracehttp.WithTimeout, endpoint: otlptracehttp.WithEndpoint, endpointURL: otlptracehttp.WithEndpointURL,
			insecure: otlptracehttp.WithInsecure, headers: otlptracehttp.WithHeaders,
			retry: func(r retry) otlptracehttp.Option { return otlptracehttp.WithRetry(otlptracehttp.RetryConfig(r)) },
		})...)
	case config.TracingOTLPGRPC:
		return otlptracegrpc.New(ctx, exporterOptions(t, otlpOptions[otlptracegrpc.Option]{
			timeout: otlptracegrpc.WithTimeout, endpoint: otlptracegrpc.WithEndpoint, endpointURL: otlptracegrpc.WithEndpointURL,
			insecure: otlptracegrpc.WithInsecure, headers: otlptracegrpc.WithHeaders,
			retry: func(r retry) otlptracegrpc.Option { return otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(r)) },
		})...)
	}
	return nil, fmt.Errorf("exporter %q: want %s or %s", t.Exporter, config.TracingOTLPHTTP, config.TracingOTLPGRPC)
}

// retry is the retry policy both OTLP exporters take.
type retry = otlptracehttp.RetryConfig

// otlpOptions are one OTLP exporter's option constructors.
type otlpOptions[O any] struct {
	timeout     func(time.Duration) O
	endpoint    func(string) O
	endpointURL func(string) O
	insecure    func() O
	headers     func(map[string]string) O
	retry       func(retry) O
}

// exporterOptions are the options of t for either exporter.
func exporterOptions[O any](t config.Tracing, c otlpOptions[O]) []O {
	opts := []O{c.timeout(t.Timeout),
		c.retry(retry{Enabled: true, InitialInterval: min(time.Second, t.Timeout), MaxInterval: t.Timeout, MaxElapsedTime: t.Timeout})}
	if u, isURL := endpointURL(t); isURL {
		opts = append(opts, c.endpointURL(u.String()))
	} else {
		opts = append(opts, c.endpoint(t.Endpoint))
		if t.Insecure {
			opts = append(opts, c.insecure())
		}
	}
	if len(t.Headers) > 0 {
		opts = append(opts, c.headers(t.Headers))
	}
	return opts
}

// endpointURL parses a URL endpoint; an OTLP/HTTP one without a path
// gets /v1/traces, the collector's.
func endpointURL(t config.Tracing) (*url.URL, bool) {
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, false
	}
	if t.Exporter == config.TracingOTLPHTTP && (u.Path == "" || u.Path == "/") {
		u.Path = "/v1/traces"
	}
	return u, true
}

// StartTracing builds the tracer of l's tracing: section into
// l.Host.TracerProvider, for a command that runs a host of its own
// (gatehost mcp, gatehost check). Call stop once the host is closed: it
// flushes the spans within tracing.timeout, logging those it lost.
func StartTracing(ctx context.Context, l *config.Loaded, version string, logger *slog.Logger) (stop func(), err error) {
	tr, err := NewTracer(ctx, l.Tracing, version, logger)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", l.File, err)
	}
	l.Host.TracerProvider = tr.Provider()
	return func() {
		if err := tr.Shutdown(context.WithoutCancel(ctx)); err != nil && logger != nil {
			logger.Warn("tracing: spans dropped at exit", "err", err)
		}
	}, nil
}

// Provider is the provider to give host.Config.TracerProvider: nil (no
// tracing) for a nil Tracer.
func (t *Tracer) Provider() trace.TracerProvider {
	if t == nil {
		return nil // an untyped nil: host.Config's "tracing off"
	}
	return t.tp
}

// Shutdown flushes the spans still queued and stops the exporter, within
// the section's timeout (or ctx's earlier deadline): spans not exported by
// then are dropped. Safe on a nil Tracer and more than once.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return nil
}

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

// startTracing builds the tracer of the config read at start; a reload
// keeps it (tracerProvider).
func (s *Server) startTracing(l *config.Loaded) error {
	tr, err := NewTracer(context.Background(), l.Tracing, serviceVersion(), s.logger)
	if err != nil {
		return fmt.Errorf("config %s: %w", l.File, err)
	}
	s.tracer = tr
	if tr != nil {
		s.logger.Info("gatehost serve: tracing", "tracing", l.Tracing)
	}
	return nil
}

// tracerProvider is the provider of l's host: the one started with the
// server, whatever l's tracing: section says (a change needs a restart).
func (s *Server) tracerProvider(l *config.Loaded) trace.TracerProvider {
	started := config.Tracing{Exporter: config.TracingNone}
	if s.tracer != nil {
		started = s.tracer.conf
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
