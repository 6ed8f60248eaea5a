package decisionlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// OTLPOptions configure an OTLPSink.
type OTLPOptions struct {
	// Endpoint is the collector: a URL (https://collector:4318/v1/logs;
	// the path defaults to /v1/logs) or host:port (https unless Insecure).
	Endpoint string
	// Insecure sends plain HTTP to a host:port Endpoint; with a URL the
	// scheme decides, and Insecure with https:// is refused.
	Insecure bool
	// Headers are sent with every export (such as an API key; never
	// logged).
	Headers map[string]string
	// ServiceInstance is the resource's service.instance.id (the node).
	ServiceInstance string
}

// OTLPSink sends each event as an OpenTelemetry log record over OTLP/HTTP:
// the body is the event's JSON (masked), the attributes run_id, pipeline,
// verdict, seq and hash, the timestamp the record's. It drives the OTLP
// exporter itself, one synchronous export per batch with the exporter's
// own retries off, so the Exporter's guarantees hold: no batch processor
// sits in between to drop records when its queue is full.
type OTLPSink struct {
	mu       sync.Mutex
	exporter sdklog.Exporter
	provider *sdklog.LoggerProvider
	logger   log.Logger
	taken    *takeProcessor
}

// NewOTLPSink returns a sink exporting to o.Endpoint. It connects lazily.
func NewOTLPSink(ctx context.Context, o OTLPOptions) (*OTLPSink, error) {
	opts := []otlploghttp.Option{otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
	switch {
	case o.Endpoint == "":
		return nil, errors.New("decisionlog: otlp endpoint is required")
	case strings.Contains(o.Endpoint, "://"):
		if o.Insecure && strings.HasPrefix(o.Endpoint, "https://") {
			return nil, fmt.Errorf("decisionlog: otlp endpoint %q is https: insecure applies to host:port endpoints only", o.Endpoint)
		}
		if !strings.HasPrefix(o.Endpoint, "http://") && !strings.HasPrefix(o.Endpoint, "https://") {
			return nil, fmt.Errorf("decisionlog: otlp endpoint %q: want http://, https:// or host:port", o.Endpoint)
		}
		opts = append(opts, otlploghttp.WithEndpointURL(o.Endpoint))
	default:
		opts = append(opts, otlploghttp.WithEndpoint(o.Endpoint))
		if o.Insecure {
			opts = append(opts, otlploghttp.WithInsecure())
		}
	}
	if len(o.Headers) > 0 {
		opts = append(opts, otlploghttp.WithHeaders(o.Headers))
	}
	exp, err := otlploghttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("decisionlog: otlp: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "gatehost")}
	if o.ServiceInstance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.ServiceInstance))
	}
	taken := &takeProcessor{}
	provider := sdklog.NewLoggerProvider(
		sdklog.WithResource(resource.NewSchemaless(attrs...)),
		sdklog.WithProcessor(taken))
	return &OTLPSink{exporter: exp, provider: provider, logger: provider.Logger("github.com/gatehost/gatehost/decisionlog"), taken: taken}, nil
}

// Send implements Sink: one OTLP export of all events. Every error is
// retried: the OTLP exporter does not say which failures are permanent.
func (s *OTLPSink) Send(ctx context.Context, events []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken.recs = s.taken.recs[:0]
	for _, ev := range events {
		var r log.Record
		r.SetTimestamp(ev.Time)
		r.SetEventName("gatehost.decision")
		r.SetSeverity(log.SeverityInfo)
		r.SetBody(attribute.StringValue(string(ev.JSON)))
		r.AddAttributes(
			attribute.String("run_id", ev.RunID),
			attribute.String("pipeline", ev.Pipeline),
			attribute.String("verdict", ev.Verdict),
			attribute.Int64("seq", int64(ev.Seq)),
			attribute.String("hash", ev.Hash))
		s.logger.Emit(ctx, r)
	}
	if len(s.taken.recs) != len(events) {
		return fmt.Errorf("decisionlog: otlp: %d of %d records emitted", len(s.taken.recs), len(events))
	}
	if err := s.exporter.Export(ctx, s.taken.recs); err != nil {
		return fmt.Errorf("decisionlog: otlp: %w", err)
	}
	return nil
}

// Close implements Sink.
func (s *OTLPSink) Close(ctx context.Context) error {
	return errors.Join(s.provider.Shutdown(ctx), s.exporter.Shutdown(ctx))
}

// takeProcessor hands the SDK's records back to Send instead of queueing
// them: the export is Send's, synchronous.
type takeProcessor struct{ recs []sdklog.Record }

func (*takeProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (p *takeProcessor) OnEmit(_ context.Context, r *sdklog.Record) error {
	p.recs = append(p.recs, r.Clone())
	return nil
}
func (*takeProcessor) Shutdown(context.Context) error   { return nil }
func (*takeProcessor) ForceFlush(context.Context) error { return nil }
