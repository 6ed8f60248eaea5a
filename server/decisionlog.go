package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/decisionlog"
	"github.com/gatehost/gatehost/host/eventlog"
)

// decisionLogs are serve's decision-log exporters (config decision_log:,
// README "Decision-log export"): started by New once the event log is
// open, fed by every append through Tee, closed before the event log.
// A reload keeps them: their cursors and buffers belong to the process.
type decisionLogs struct {
	cfg   config.DecisionLog
	names []string // of exps: "http", "otlp"
	exps  []*decisionlog.Exporter
}

// openDecisionLog starts the exporters l configures and registers their
// metrics. On error it closes what New opened (the backends and l).
func (s *Server) openDecisionLog(l *config.Loaded) (err error) {
	d := l.DecisionLog
	s.dlog = &decisionLogs{cfg: d}
	defer func() {
		if err != nil {
			_ = s.closeDecisionLog()
			_ = s.backends.Close()
			_ = l.Close()
			err = fmt.Errorf("config %s: decision_log: %w", l.File, err)
		}
	}()
	if !d.Enabled() {
		return nil
	}
	node := l.Store.NodeID
	if node == "" {
		node, _ = os.Hostname()
	}
	base := decisionlog.Options{LogPath: l.LogPath, Mask: d.Mask, Labels: map[string]string{"id": node}, Logger: s.logger}
	if h := d.HTTP; h != nil {
		sink, err := decisionlog.NewHTTPSink(h.URL, h.Headers, nil)
		if err != nil {
			return err
		}
		o := base
		o.Sink, o.CursorPath, o.Name = sink, d.Cursor, "http"
		o.Timeout, o.MaxBatchBytes, o.MaxBatchEvents, o.FlushInterval = h.Timeout, h.MaxBatchBytes, h.MaxBatchEvents, h.FlushInterval
		o.BufferRecords, o.MinBackoff, o.MaxBackoff = h.BufferEvents, h.MinBackoff, h.MaxBackoff
		if err := s.dlog.start(o); err != nil {
			return err
		}
	}
	if ot := d.OTLP; ot != nil {
		sink, err := decisionlog.NewOTLPSink(context.Background(), decisionlog.OTLPOptions{
			Endpoint: ot.Endpoint, Insecure: ot.Insecure, Headers: ot.Headers, ServiceInstance: node})
		if err != nil {
			return err
		}
		o := base
		o.Sink, o.CursorPath, o.Name = sink, d.OTLPCursor(), "otlp"
		if err := s.dlog.start(o); err != nil {
			return err
		}
	}
	s.metrics.reg.MustRegister(decisionLogCollector{s.dlog})
	s.logger.Info("gatehost serve: exporting decisions", "http", d.HTTP != nil, "otlp", d.OTLP != nil, "cursor", d.Cursor)
	return nil
}

func (d *decisionLogs) start(o decisionlog.Options) error {
	e, err := decisionlog.New(o)
	if err != nil {
		_ = o.Sink.Close(context.Background())
		return fmt.Errorf("%s: %w", o.Name, err)
	}
	d.names, d.exps = append(d.names, o.Name), append(d.exps, e)
	return nil
}

// eventLog is the appender a runtime built from l writes decisions to: the
// event log, teed to every exporter. A changed decision_log: section is
// reported, not applied.
func (s *Server) eventLog(l *config.Loaded) eventlog.Appender {
	var a eventlog.Appender = s.evlog
	if s.dlog == nil {
		return a
	}
	if !reflect.DeepEqual(l.DecisionLog, s.dlog.cfg) {
		s.logger.Warn("gatehost serve: decision_log changed; a reload keeps the running export (restart to apply it)", "config", l.File)
	}
	for _, e := range s.dlog.exps {
		a = decisionlog.Tee(a, e)
	}
	return a
}

// closeDecisionLog sends what the exporters hold, for at most 5s (within
// the shutdown timeout): a receiver that is down must not hold the
// shutdown, and what is left is exported after the next start, from the
// cursor. The exporters stay for the metrics; closing them again is a
// no-op.
func (s *Server) closeDecisionLog() error {
	if s.dlog == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(cmp.Or(s.opts.ShutdownTimeout, 5*time.Second), 5*time.Second))
	defer cancel()
	var errs []error
	for _, e := range s.dlog.exps {
		errs = append(errs, e.Close(ctx))
		st := e.Stats()
		s.logger.Info("gatehost serve: decision export stopped", "cursor_seq", st.Cursor.Seq, "exported", st.Exported)
	}
	return errors.Join(errs...)
}

// decisionLogCollector reports the exporters' counters at scrape time.
type decisionLogCollector struct{ d *decisionLogs }

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
