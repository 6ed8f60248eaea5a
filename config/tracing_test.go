package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTracingSection(t *testing.T) {
	const base = "event_log: {path: e.jsonl}\n"
	tests := []struct {
		name    string
		body    string
		want    Tracing
		wantErr string
	}{
		{name: "absent", body: base, want: Tracing{Exporter: TracingNone}},
		{name: "none ignores the rest", body: base + "tracing: {exporter: none, endpoint: 'x:1', sample_ratio: 7}\n",
			want: Tracing{Exporter: TracingNone}},
		{name: "otlp-http defaults", body: base + "tracing: {exporter: otlp-http}\n",
			want: Tracing{Exporter: TracingOTLPHTTP, Endpoint: DefaultTracingHTTPEndpoint, SampleRatio: 1,
				ServiceName: DefaultTracingServiceName, Timeout: DefaultTracingTimeout}},
		{name: "otlp-grpc defaults", body: base + "tracing: {exporter: otlp-grpc, insecure: true}\n",
			want: Tracing{Exporter: TracingOTLPGRPC, Endpoint: DefaultTracingGRPCEndpoint, Insecure: true, SampleRatio: 1,
				ServiceName: DefaultTracingServiceName, Timeout: DefaultTracingTimeout}},
		{name: "all set", body: base + "tracing:\n  exporter: otlp-http\n  endpoint: collector:4318\n  insecure: true\n" +
			"  headers: {Authorization: 'Bearer s3cret', X-Tenant: a}\n  sample_ratio: 0\n  service_name: gh-prod\n  timeout: 2s\n",
			want: Tracing{Exporter: TracingOTLPHTTP, Endpoint: "collector:4318", Insecure: true,
				Headers: map[string]string{"authorization": "Bearer s3cret", "x-tenant": "a"}, SampleRatio: 0,
				ServiceName: "gh-prod", Timeout: 2 * time.Second}},
		{name: "http URL is insecure", body: base + "tracing: {exporter: otlp-http, endpoint: 'http://c:4318/otlp/v1/traces'}\n",
			want: Tracing{Exporter: TracingOTLPHTTP, Endpoint: "http://c:4318/otlp/v1/traces", Insecure: true, SampleRatio: 1,
				ServiceName: DefaultTracingServiceName, Timeout: DefaultTracingTimeout}},
		{name: "unknown exporter", body: base + "tracing: {exporter: jaeger}\n", wantErr: `tracing.exporter: "jaeger": want none, otlp-http or otlp-grpc`},
		{name: "unknown top-level key", body: base + "colour: red\n", wantErr: `config F: unknown key "colour"`},
		{name: "unknown key", body: base + "tracing: {exporter: otlp-http, url: x}\n", wantErr: `unknown key "tracing.url"`},
		{name: "endpoint without port", body: base + "tracing: {exporter: otlp-http, endpoint: collector}\n", wantErr: "tracing.endpoint"},
		{name: "endpoint URL with credentials", body: base + "tracing: {exporter: otlp-http, endpoint: 'https://u:p@c:4318'}\n", wantErr: "tracing.endpoint"},
		{name: "endpoint URL of another scheme", body: base + "tracing: {exporter: otlp-grpc, endpoint: 'grpc://c:4317'}\n", wantErr: "tracing.endpoint"},
		{name: "https and insecure", body: base + "tracing: {exporter: otlp-http, endpoint: 'https://c:4318', insecure: true}\n", wantErr: "tracing.insecure"},
		{name: "ratio over 1", body: base + "tracing: {exporter: otlp-http, sample_ratio: 1.5}\n", wantErr: "tracing.sample_ratio: 1.5: want 0 to 1"},
		{name: "ratio negative", body: base + "tracing: {exporter: otlp-http, sample_ratio: -0.1}\n", wantErr: "tracing.sample_ratio"},
		{name: "ratio not a number", body: base + "tracing: {exporter: otlp-http, sample_ratio: most}\n", wantErr: "tracing.sample_ratio"},
		{name: "timeout too long", body: base + "tracing: {exporter: otlp-http, timeout: 2m}\n", wantErr: "tracing.timeout: 2m0s: want 1ms to 1m0s"},
		{name: "timeout not a duration", body: base + "tracing: {exporter: otlp-http, timeout: soon}\n", wantErr: "tracing.timeout"},
		{name: "header name", body: base + "tracing: {exporter: otlp-http, headers: {'a b': x}}\n", wantErr: `tracing.headers: "a b" is not a header name`},
		{name: "header value with a newline", body: base + "tracing: {exporter: otlp-http, headers: {x-key: \"s3cret\\nX-Evil: 1\"}}\n",
			wantErr: "tracing.headers.x-key: the value holds control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, "gatehost.yaml", tt.body)
			l, err := Load(p)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, strings.ReplaceAll(err.Error(), "config "+p+":", "config F:"), tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cret", "a header value is a secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, l.Tracing)
			assert.Equal(t, tt.want.Exporter != TracingNone, l.Tracing.Enabled())
			assert.True(t, l.Tracing.Equal(tt.want))
		})
	}
}

func TestTracingLogValueHidesHeaderValues(t *testing.T) {
	tr := Tracing{Exporter: TracingOTLPHTTP, Endpoint: "c:4318", Headers: map[string]string{"authorization": "Bearer s3cret"}}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("tracing", "tracing", tr)
	assert.Contains(t, b.String(), "authorization")
	assert.NotContains(t, b.String(), "s3cret")
	assert.False(t, tr.Equal(Tracing{Exporter: TracingOTLPHTTP, Endpoint: "c:4318", Headers: map[string]string{"authorization": "other"}}))
}
