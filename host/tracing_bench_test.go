package host_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// discardExporter drops every batch: the benchmark measures the host's
// spans, not an exporter.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []trace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                          { return nil }

// BenchmarkAdmissionTracing is the admission decision of
// BenchmarkAdmission10Actions (wasm, one at a time) with tracing off (no
// TracerProvider), with the OpenTelemetry no-op provider, and with the SDK
// recording every span into a batch processor whose exporter drops them
// (docs/PERFORMANCE.md "Tracing overhead").
func BenchmarkAdmissionTracing(b *testing.B) {
	r := newAdmissionRig(b)
	sdk := trace.NewTracerProvider(trace.WithBatcher(discardExporter{}))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, tc := range []struct {
		name string
		tp   func() host.Config
	}{
		{"off", func() host.Config { return r.cfg }},
		{"noop", func() host.Config { c := r.cfg; c.TracerProvider = noop.NewTracerProvider(); return c }},
		{"sdk", func() host.Config { c := r.cfg; c.TracerProvider = sdk; return c }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.tp()
			cfg.PoolSize = 1
			h := hosttest.New(b, cfg)
			r.check(b, h) // warm: the first run instantiates
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r.check(b, h)
			}
		})
	}
}
