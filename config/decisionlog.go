package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gatehost/gatehost/decisionlog/mask"
)

// decisionLogConfig is the decision_log: section as written.
type decisionLogConfig struct {
	HTTP struct {
		URL            string            `mapstructure:"url"`
		Headers        map[string]string `mapstructure:"headers"`
		Timeout        time.Duration     `mapstructure:"timeout"`
		MaxBatchBytes  byteSize          `mapstructure:"max_batch_bytes"`
		MaxBatchEvents int               `mapstructure:"max_batch_events"`
		FlushInterval  time.Duration     `mapstructure:"flush_interval"`
		BufferEvents   int               `mapstructure:"buffer_events"`
		MinBackoff     time.Duration     `mapstructure:"min_backoff"`
		MaxBackoff     time.Duration     `mapstructure:"max_backoff"`
	} `mapstructure:"http"`
	OTLP struct {
		Endpoint string            `mapstructure:"endpoint"`
		Insecure bool              `mapstructure:"insecure"`
		Headers  map[string]string `mapstructure:"headers"`
	} `mapstructure:"otlp"`
	Mask   []string `mapstructure:"mask"`
	Cursor string   `mapstructure:"cursor"`
}

// DecisionLog is the resolved decision_log: section (docs/HTTP-API.md "Decision-log
// export"): where decision records are exported besides the local log.
// Load opens nothing of it; gatehost serve starts the exporters.
type DecisionLog struct {
	// HTTP is the OPA decision-log service export; nil when not set.
	HTTP *DecisionLogHTTP
	// OTLP is the OpenTelemetry logs export; nil when not set.
	OTLP *DecisionLogOTLP
	// Mask lists JSON Pointers (RFC 6901) into each event whose values
	// are replaced before export (mask.ParsePointer).
	Mask []string
	// Cursor is the HTTP export's cursor file (decision_log.cursor,
	// resolved; default <event_log.path>.export-cursor); the OTLP
	// export's is Cursor + ".otlp".
	Cursor string
}

// Enabled reports whether any export is configured.
func (d DecisionLog) Enabled() bool { return d.HTTP != nil || d.OTLP != nil }

// OTLPCursor is the OTLP export's cursor file.
func (d DecisionLog) OTLPCursor() string { return d.Cursor + ".otlp" }

// DecisionLogHTTP is decision_log.http. Zero durations and sizes take the
// decisionlog package's defaults.
type DecisionLogHTTP struct {
	URL            string
	Headers        map[string]string // secrets, such as Authorization: never logged
	Timeout        time.Duration
	MaxBatchBytes  int
	MaxBatchEvents int
	FlushInterval  time.Duration
	BufferEvents   int
	MinBackoff     time.Duration
	MaxBackoff     time.Duration
}

// DecisionLogOTLP is decision_log.otlp.
type DecisionLogOTLP struct {
	Endpoint string
	Insecure bool
	Headers  map[string]string
}

// resolveDecisionLog checks the decision_log: section, naming the key at
// fault. The export resumes by reading the local log, so it needs
// event_log.path.
func resolveDecisionLog(dc decisionLogConfig, logPath string, rel func(string) string) (DecisionLog, error) {
	h, o := dc.HTTP, dc.OTLP
	httpSet := h.URL != "" || len(h.Headers) > 0 || h.Timeout != 0 || h.MaxBatchBytes != 0 || h.MaxBatchEvents != 0 ||
		h.FlushInterval != 0 || h.BufferEvents != 0 || h.MinBackoff != 0 || h.MaxBackoff != 0
	otlpSet := o.Endpoint != "" || o.Insecure || len(o.Headers) > 0
	if !httpSet && !otlpSet {
		if len(dc.Mask) > 0 || dc.Cursor != "" {
			return DecisionLog{}, fmt.Errorf("decision_log: set decision_log.http.url or decision_log.otlp.endpoint")
		}
		return DecisionLog{}, nil
	}
	if strings.TrimSpace(logPath) == "" {
		return DecisionLog{}, fmt.Errorf("decision_log: needs event_log.path: the export reads the local log back after a restart or a full buffer")
	}
	d := DecisionLog{Mask: dc.Mask, Cursor: rel(dc.Cursor)}
	if d.Cursor == "" {
		d.Cursor = logPath + ".export-cursor"
	}
	for i, m := range dc.Mask {
		if _, err := mask.ParsePointer(m); err != nil {
			return DecisionLog{}, fmt.Errorf("decision_log.mask[%d]: %w", i, err)
		}
	}
	if httpSet {
		u, err := url.Parse(h.URL)
		switch {
		case h.URL == "":
			return DecisionLog{}, fmt.Errorf("decision_log.http.url: required with the other decision_log.http keys")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return DecisionLog{}, fmt.Errorf("decision_log.http.url: %q: want an http:// or https:// URL", h.URL)
		}
		checks := []struct {
			key      string
			v, lo, h int64
			unit     string
		}{
			{"timeout", int64(h.Timeout), int64(time.Millisecond), int64(5 * time.Minute), "1ms to 5m"},
			{"max_batch_bytes", int64(min(h.MaxBatchBytes, 1<<40)), 1 << 10, 64 << 20, "1KiB to 64MiB"},
			{"max_batch_events", int64(h.MaxBatchEvents), 1, 100_000, "1 to 100000"},
			{"flush_interval", int64(h.FlushInterval), int64(time.Millisecond), int64(time.Hour), "1ms to 1h"},
			{"buffer_events", int64(h.BufferEvents), 1, 10_000_000, "1 to 10000000"},
			{"min_backoff", int64(h.MinBackoff), int64(time.Millisecond), int64(time.Hour), "1ms to 1h"},
			{"max_backoff", int64(h.MaxBackoff), int64(time.Millisecond), int64(time.Hour), "1ms to 1h"},
		}
		for _, c := range checks {
			if c.v != 0 && (c.v < c.lo || c.v > c.h) {
				return DecisionLog{}, fmt.Errorf("decision_log.http.%s: out of range: want %s (or unset for the default)", c.key, c.unit)
			}
		}
		if h.MinBackoff != 0 && h.MaxBackoff != 0 && h.MinBackoff > h.MaxBackoff {
			return DecisionLog{}, fmt.Errorf("decision_log.http.min_backoff: %s is above max_backoff %s", h.MinBackoff, h.MaxBackoff)
		}
		d.HTTP = &DecisionLogHTTP{URL: h.URL, Headers: h.Headers, Timeout: h.Timeout, MaxBatchBytes: int(h.MaxBatchBytes),
			MaxBatchEvents: h.MaxBatchEvents, FlushInterval: h.FlushInterval, BufferEvents: h.BufferEvents,
			MinBackoff: h.MinBackoff, MaxBackoff: h.MaxBackoff}
	}
	if otlpSet {
		ep := strings.TrimSpace(o.Endpoint)
		switch {
		case ep == "":
			return DecisionLog{}, fmt.Errorf("decision_log.otlp.endpoint: required with the other decision_log.otlp keys")
		case strings.Contains(ep, "://") && !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://"):
			return DecisionLog{}, fmt.Errorf("decision_log.otlp.endpoint: %q: want an http:// or https:// URL, or host:port", ep)
		case o.Insecure && strings.Contains(ep, "://"):
			return DecisionLog{}, fmt.Errorf("decision_log.otlp.insecure: applies to a host:port endpoint; with a URL its scheme decides")
		}
		d.OTLP = &DecisionLogOTLP{Endpoint: ep, Insecure: o.Insecure, Headers: o.Headers}
	}
	return d, nil
}
