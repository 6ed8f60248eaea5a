package compose

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/decisionlog"
	"github.com/gatehost/gatehost/host/eventlog"
)

// DecisionLogs are the decision-log exporters of a config's decision_log:
// section (docs/HTTP-API.md "Decision-log export"): started once the event log is
// open, fed by every append through Tee, closed before the event log. A
// nil *DecisionLogs exports nothing.
type DecisionLogs struct {
	cfg    config.DecisionLog
	names  []string // of exps: "http", "otlp"
	exps   []*decisionlog.Exporter
	logger *slog.Logger
}

// OpenDecisionLogs starts the exporters l configures, reading the event
// log at l.LogPath from their cursors; nil when the section exports
// nothing. Errors name the section.
func OpenDecisionLogs(l *config.Loaded, logger *slog.Logger) (_ *DecisionLogs, err error) {
	d := l.DecisionLog
	if !d.Enabled() {
		return nil, nil
	}
	dl := &DecisionLogs{cfg: d, logger: logger}
	defer func() {
		if err != nil {
			_ = dl.Close(context.Background())
			err = fmt.Errorf("config %s: decision_log: %w", l.File, err)
		}
	}()
	node := l.Store.NodeID
	if node == "" {
		node, _ = os.Hostname()
	}
	base := decisionlog.Options{LogPath: l.LogPath, Mask: d.Mask, Labels: map[string]string{"id": node}, Logger: logger}
	if h := d.HTTP; h != nil {
		sink, err := decisionlog.NewHTTPSink(h.URL, h.Headers, nil)
		if err != nil {
			return nil, err
		}
		o := base
		o.Sink, o.CursorPath, o.Name = sink, d.Cursor, "http"
		o.Timeout, o.MaxBatchBytes, o.MaxBatchEvents, o.FlushInterval = h.Timeout, h.MaxBatchBytes, h.MaxBatchEvents, h.FlushInterval
		o.BufferRecords, o.MinBackoff, o.MaxBackoff = h.BufferEvents, h.MinBackoff, h.MaxBackoff
		if err := dl.start(o); err != nil {
			return nil, err
		}
	}
	if ot := d.OTLP; ot != nil {
		sink, err := decisionlog.NewOTLPSink(context.Background(), decisionlog.OTLPOptions{
			Endpoint: ot.Endpoint, Insecure: ot.Insecure, Headers: ot.Headers, ServiceInstance: node})
		if err != nil {
			return nil, err
		}
		o := base
		o.Sink, o.CursorPath, o.Name = sink, d.OTLPCursor(), "otlp"
		if err := dl.start(o); err != nil {
			return nil, err
		}
	}
	logger.Info("gatehost: exporting decisions", "http", d.HTTP != nil, "otlp", d.OTLP != nil, "cursor", d.Cursor)
	return dl, nil
}

func (d *DecisionLogs) start(o decisionlog.Options) error {
	e, err := decisionlog.New(o)
	if err != nil {
		_ = o.Sink.Close(context.Background())
		return fmt.Errorf("%s: %w", o.Name, err)
	}
	d.names, d.exps = append(d.names, o.Name), append(d.exps, e)
	return nil
}

// Config is the section the exporters were started with.
func (d *DecisionLogs) Config() config.DecisionLog {
	if d == nil {
		return config.DecisionLog{}
	}
	return d.cfg
}

// Tee is a, with every record appended also offered to each exporter.
func (d *DecisionLogs) Tee(a eventlog.Appender) eventlog.Appender {
	if d == nil {
		return a
	}
	for _, e := range d.exps {
		a = decisionlog.Tee(a, e)
	}
	return a
}

// Close sends what the exporters hold until ctx ends: a receiver that is
// down must not hold a shutdown, and what is left is exported after the
// next start, from the cursor. The exporters stay for the metrics;
// closing them again is a no-op.
func (d *DecisionLogs) Close(ctx context.Context) error {
	if d == nil {
		return nil
	}
	var errs []error
	for _, e := range d.exps {
		errs = append(errs, e.Close(ctx))
		st := e.Stats()
		d.logger.Info("gatehost: decision export stopped", "cursor_seq", st.Cursor.Seq, "exported", st.Exported)
	}
	return errors.Join(errs...)
}

// Collector reports the exporters' counters at scrape time.
func (d *DecisionLogs) Collector() prometheus.Collector { return decisionLogCollector{d} }

// decisionLogCollector reports the exporters' counters at scrape time.
type decisionLogCollector struct{ d *DecisionLogs }

var (
	dlExportedDesc = prometheus.NewDesc("gatehost_decision_log_exported_total",
		"Decision events the receiver acknowledged, by sink (http, otlp); at-least-once, so retries after a lost answer count again.",
		[]string{"sink"}, nil)
	dlDroppedDesc = prometheus.NewDesc("gatehost_decision_log_dropped_total",
		"Records not exported when offered, by sink and reason: buffer_full (read back from the event log later), rejected (refused by the receiver for good), no_log, stopped.",
		[]string{"sink", "reason"}, nil)
	dlFailuresDesc = prometheus.NewDesc("gatehost_decision_log_failures_total",
		"Failed attempts to send a batch, by sink; each is retried.", []string{"sink"}, nil)
	dlBufferedDesc = prometheus.NewDesc("gatehost_decision_log_buffered",
		"Records waiting in the export buffer, by sink.", []string{"sink"}, nil)
	dlCursorDesc = prometheus.NewDesc("gatehost_decision_log_cursor_seq",
		"Seq of the last record the receiver acknowledged, by sink.", []string{"sink"}, nil)
	dlStoppedDesc = prometheus.NewDesc("gatehost_decision_log_stopped",
		"1 when the export stopped on an error (the log shows it); decisions are still recorded.", []string{"sink"}, nil)
)

func (decisionLogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dlExportedDesc, dlDroppedDesc, dlFailuresDesc, dlBufferedDesc, dlCursorDesc, dlStoppedDesc} {
		ch <- d
	}
}

func (c decisionLogCollector) Collect(ch chan<- prometheus.Metric) {
	if c.d == nil {
		return
	}
	for i, e := range c.d.exps {
		name, st := c.d.names[i], e.Stats()
		ch <- prometheus.MustNewConstMetric(dlExportedDesc, prometheus.CounterValue, float64(st.Exported), name)
		for reason, n := range st.Dropped {
			ch <- prometheus.MustNewConstMetric(dlDroppedDesc, prometheus.CounterValue, float64(n), name, reason)
		}
		ch <- prometheus.MustNewConstMetric(dlFailuresDesc, prometheus.CounterValue, float64(st.Failures), name)
		ch <- prometheus.MustNewConstMetric(dlBufferedDesc, prometheus.GaugeValue, float64(st.Buffered), name)
		ch <- prometheus.MustNewConstMetric(dlCursorDesc, prometheus.GaugeValue, float64(st.Cursor.Seq), name)
		stopped := 0.0
		if e.Err() != nil {
			stopped = 1
		}
		ch <- prometheus.MustNewConstMetric(dlStoppedDesc, prometheus.GaugeValue, stopped, name)
	}
}
