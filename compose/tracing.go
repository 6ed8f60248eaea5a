package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehost/gatehost/config"
)

// Tracer is the span pipeline a tracing: section describes
// (docs/IDENTITY-AND-TRACING.md "Tracing"): an OpenTelemetry SDK provider
// that samples, batches and exports spans over OTLP. Spans are queued and
// exported in the background: a decision never waits for the collector, and
// when the queue is full (the collector is down or slow) spans are dropped,
// not decisions delayed. A nil *Tracer is tracing off.
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

// Config is the tracing: section the tracer was built from.
func (t *Tracer) Config() config.Tracing {
	if t == nil {
		return config.Tracing{Exporter: config.TracingNone}
	}
	return t.conf
}
