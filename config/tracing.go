package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Exporters of the tracing: section (tracing.exporter).
const (
	TracingNone     = "none"      // no tracing (the default)
	TracingOTLPHTTP = "otlp-http" // OTLP over HTTP/protobuf, to /v1/traces
	TracingOTLPGRPC = "otlp-grpc" // OTLP over gRPC
)

// Defaults of the tracing: section.
const (
	DefaultTracingHTTPEndpoint = "127.0.0.1:4318"
	DefaultTracingGRPCEndpoint = "127.0.0.1:4317"
	DefaultTracingServiceName  = "gatehost"
	// DefaultTracingTimeout bounds one export, and the flush at exit.
	DefaultTracingTimeout = 10 * time.Second
	// MaxTracingTimeout caps tracing.timeout.
	MaxTracingTimeout = time.Minute
)

// tracingConfig is the tracing: section as written.
type tracingConfig struct {
	Exporter    string            `mapstructure:"exporter"`
	Endpoint    string            `mapstructure:"endpoint"`
	Insecure    bool              `mapstructure:"insecure"`
	Headers     map[string]string `mapstructure:"headers"`
	SampleRatio *float64          `mapstructure:"sample_ratio"`
	ServiceName string            `mapstructure:"service_name"`
	Timeout     time.Duration     `mapstructure:"timeout"`
}

// Tracing is the resolved tracing: section (docs/IDENTITY-AND-TRACING.md
// "Tracing"): where the spans of decisions go. server.NewTracer builds the
// provider it describes.
type Tracing struct {
	// Exporter is TracingNone (the default: no spans at all),
	// TracingOTLPHTTP or TracingOTLPGRPC. With TracingNone the other
	// fields are ignored.
	Exporter string
	// Endpoint is host:port (default DefaultTracingHTTPEndpoint or
	// DefaultTracingGRPCEndpoint), or a URL: http:// or https://, whose
	// path, for OTLP/HTTP, replaces /v1/traces.
	Endpoint string
	// Insecure sends spans without TLS to a host:port endpoint; a URL's
	// scheme says it instead.
	Insecure bool
	// Headers are sent with every export (HTTP headers, gRPC metadata);
	// names are lower case. Values are secrets, such as an API key: never
	// logged (LogValue names the keys only). None here leaves the
	// exporter's $OTEL_EXPORTER_OTLP_HEADERS in effect.
	Headers map[string]string
	// SampleRatio is the share of new traces recorded, 0 to 1 (default
	// 1); a caller's traceparent decides for the traces it continues.
	SampleRatio float64
	// ServiceName is the service.name resource attribute; default
	// DefaultTracingServiceName.
	ServiceName string
	// Timeout bounds one export and the flush at exit; default
	// DefaultTracingTimeout, at most MaxTracingTimeout.
	Timeout time.Duration
}

// Enabled reports whether spans are exported.
func (t Tracing) Enabled() bool { return t.Exporter != "" && t.Exporter != TracingNone }

// Equal reports whether t and o describe the same exporter.
func (t Tracing) Equal(o Tracing) bool {
	return t.Exporter == o.Exporter && t.Endpoint == o.Endpoint && t.Insecure == o.Insecure && maps.Equal(t.Headers, o.Headers) &&
		t.SampleRatio == o.SampleRatio && t.ServiceName == o.ServiceName && t.Timeout == o.Timeout
}

// LogValue is the section without the header values.
func (t Tracing) LogValue() slog.Value {
	if !t.Enabled() {
		return slog.GroupValue(slog.String("exporter", TracingNone))
	}
	return slog.GroupValue(slog.String("exporter", t.Exporter), slog.String("endpoint", t.Endpoint),
		slog.Bool("insecure", t.Insecure), slog.Any("headers", slices.Sorted(maps.Keys(t.Headers))),
		slog.Float64("sample_ratio", t.SampleRatio), slog.String("service_name", t.ServiceName), slog.Duration("timeout", t.Timeout))
}

var headerNameRE = regexp.MustCompile("^[a-z0-9!#$%&'*+.^_`|~-]{1,256}$")

// headerValueOK: at most 8 KiB, no control character but tab (RFC 9110
// §5.5), so a value cannot smuggle in another header.
func headerValueOK(v string) bool {
	if len(v) > 8192 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// resolveTracing checks the tracing: section and fills its defaults.
func resolveTracing(tc tracingConfig) (Tracing, error) {
	t := Tracing{Exporter: cmp.Or(strings.TrimSpace(tc.Exporter), TracingNone)}
	var def string
	switch t.Exporter {
	case TracingNone:
		return t, nil
	case TracingOTLPHTTP:
		def = DefaultTracingHTTPEndpoint
	case TracingOTLPGRPC:
		def = DefaultTracingGRPCEndpoint
	default:
		return Tracing{}, fmt.Errorf("tracing.exporter: %q: want %s, %s or %s", tc.Exporter, TracingNone, TracingOTLPHTTP, TracingOTLPGRPC)
	}
	t.Endpoint, t.Insecure = cmp.Or(strings.TrimSpace(tc.Endpoint), def), tc.Insecure
	if strings.Contains(t.Endpoint, "://") {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return Tracing{}, fmt.Errorf("tracing.endpoint: %q: want host:port or an http:// or https:// URL without credentials, query or fragment", t.Endpoint)
		}
		if u.Scheme == "https" && tc.Insecure {
			return Tracing{}, fmt.Errorf("tracing.insecure: true contradicts the https:// endpoint %s", t.Endpoint)
		}
		t.Insecure = u.Scheme == "http"
	} else if h, p, err := net.SplitHostPort(t.Endpoint); err != nil || h == "" || p == "" {
		return Tracing{}, fmt.Errorf("tracing.endpoint: %q: want host:port or an http:// or https:// URL", t.Endpoint)
	}
	for k, v := range tc.Headers {
		if !headerNameRE.MatchString(k) {
			return Tracing{}, fmt.Errorf("tracing.headers: %q is not a header name", k)
		}
		if !headerValueOK(v) {
			// The value is a secret: name the header only.
			return Tracing{}, fmt.Errorf("tracing.headers.%s: the value holds control characters or is over 8192 bytes", k)
		}
	}
	if len(tc.Headers) > 0 {
		t.Headers = maps.Clone(tc.Headers)
	}
	t.SampleRatio = 1
	if tc.SampleRatio != nil {
		t.SampleRatio = *tc.SampleRatio
	}
	if !(t.SampleRatio >= 0 && t.SampleRatio <= 1) { // NaN too
		return Tracing{}, fmt.Errorf("tracing.sample_ratio: %v: want 0 to 1", t.SampleRatio)
	}
	t.ServiceName = cmp.Or(strings.TrimSpace(tc.ServiceName), DefaultTracingServiceName)
	if len(t.ServiceName) > 256 {
		return Tracing{}, fmt.Errorf("tracing.service_name: over 256 bytes")
	}
	t.Timeout = cmp.Or(tc.Timeout, DefaultTracingTimeout)
	if t.Timeout < time.Millisecond || t.Timeout > MaxTracingTimeout {
		return Tracing{}, fmt.Errorf("tracing.timeout: %s: want 1ms to %s", t.Timeout, MaxTracingTimeout)
	}
	return t, nil
}
