package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
)

// metrics are serve's Prometheus metrics, on a registry of their own (no
// global state). Labels come from the config (pipeline, stage, plugin) or
// from closed sets (verdict, reason, route, code): a caller cannot create
// a series.
type metrics struct {
	reg              *prometheus.Registry
	decisions        *prometheus.CounterVec
	stageSeconds     *prometheus.HistogramVec
	pluginFailures   *prometheus.CounterVec
	quarantines      *prometheus.CounterVec
	quarantined      *prometheus.GaugeVec
	logRecords       prometheus.Counter
	logCommits       prometheus.Counter
	logFailures      prometheus.Counter
	fsyncSeconds     prometheus.Histogram
	reloads          *prometheus.CounterVec
	configGeneration prometheus.Gauge
	lastReload       prometheus.Gauge
	requests         *prometheus.CounterVec
	store            storeMetrics // registered only with a PostgreSQL store
}

// latencyBuckets span 50µs to 10s: a warm gate call is about 0.1–2 ms, a
// deadline is about 1 s.
var latencyBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_decisions_total",
		Help: "Decisions, by pipeline and verdict."}, []string{"pipeline", "verdict"})
	m.stageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehost_stage_duration_seconds",
		Help: "Wall time of a stage, waiting for an instance included.", Buckets: latencyBuckets},
		[]string{"pipeline", "stage"})
	m.pluginFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_plugin_failures_total",
		Help: "Stages the host decided inconclusive, by plugin and reason code (plugin_trap, plugin_timeout, host_overloaded, ...)."},
		[]string{"plugin", "reason"})
	m.quarantines = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_quarantines_total",
		Help: "Times a plugin entered quarantine."}, []string{"plugin"})
	m.quarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehost_plugin_quarantined",
		Help: "1 while a plugin is quarantined."}, []string{"plugin"})
	m.logRecords = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_appended_records_total",
		Help: "Records appended to the event log (stage, decision, quarantine, repair)."})
	m.logCommits = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_commits_total",
		Help: "Group commits of the event log: one write and one fsync each."})
	m.logFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_failures_total",
		Help: "Failed event log commits; after one the log refuses appends and every run is inconclusive."})
	m.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gatehost_eventlog_fsync_seconds",
		Help: "Time of the event log file's fsync per commit.", Buckets: latencyBuckets})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_config_reloads_total",
		Help: "Config reloads, by result (success, failure). A failed reload keeps the previous config serving."},
		[]string{"result"})
	m.configGeneration = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehost_config_generation",
		Help: "The serving config: 1 at start, one more per successful reload."})
	m.lastReload = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehost_config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful reload."})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_http_requests_total",
		Help: "HTTP requests, by route and status code."}, []string{"route", "code"})
	for _, c := range []prometheus.Collector{m.decisions, m.stageSeconds, m.pluginFailures, m.quarantines, m.quarantined,
		m.logRecords, m.logCommits, m.logFailures, m.fsyncSeconds, m.reloads, m.configGeneration, m.lastReload, m.requests,
		&runtimeCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// hooks feeds decisions and quarantines from a host into the metrics.
func (m *metrics) hooks() *host.Hooks {
	return &host.Hooks{
		Decided: func(d *host.Decision, _ error) {
			m.decisions.WithLabelValues(d.Pipeline, string(d.Verdict)).Inc()
			for _, st := range d.Stages {
				if st.Skipped {
					continue
				}
				m.stageSeconds.WithLabelValues(d.Pipeline, st.Name).Observe(float64(st.DurationMicros) / 1e6)
				var pe *host.PluginError
				if err := st.Err(); err != nil {
					reason := st.Reason
					if errors.As(err, &pe) {
						reason = pe.Code
					}
					m.pluginFailures.WithLabelValues(st.Plugin, reason).Inc()
				}
			}
		},
		Quarantine: func(plugin string, on bool) {
			if on {
				m.quarantines.WithLabelValues(plugin).Inc()
				m.quarantined.WithLabelValues(plugin).Set(1)
				return
			}
			m.quarantined.WithLabelValues(plugin).Set(0)
		},
	}
}

func (m *metrics) onCommit(c eventlog.Commit) {
	m.logCommits.Inc()
	if c.Err != nil {
		m.logFailures.Inc()
		return
	}
	m.logRecords.Add(float64(c.Records))
	if c.Fsync > 0 {
		m.fsyncSeconds.Observe(c.Fsync.Seconds())
	}
}

// runtimeCollector reports the serving runtime's pools and catalog at
// scrape time.
type runtimeCollector struct{ s *Server }

var (
	poolDesc = prometheus.NewDesc("gatehost_pool_instances",
		"Instances of a plugin's pool, by state: size (capacity), live (idle or in use), idle.",
		[]string{"plugin", "memory_pages", "state"}, nil)
	poolDiscardedDesc = prometheus.NewDesc("gatehost_pool_discarded_instances",
		"Instances discarded after a failure by the serving config's pools.", []string{"plugin", "memory_pages"}, nil)
	catalogGenDesc = prometheus.NewDesc("gatehost_catalog_generation",
		"Generation of the serving catalog snapshot.", nil, nil)
	readyDesc = prometheus.NewDesc("gatehost_ready", "1 when /readyz answers ready.", nil, nil)
	runsDesc  = prometheus.NewDesc("gatehost_runs", "Runs of the serving config, by state: running (holding a run slot) or queued.",
		[]string{"state"}, nil)
)

func (c *runtimeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolDesc
	ch <- poolDiscardedDesc
	ch <- catalogGenDesc
	ch <- readyDesc
	ch <- runsDesc
}

func (c *runtimeCollector) Collect(ch chan<- prometheus.Metric) {
	ready := 0.0
	if c.s.ready.Load() {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, ready)
	rt := c.s.acquire()
	if rt == nil {
		return
	}
	defer rt.release()
	running, queued := rt.h.Runs()
	ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(running), "running")
	ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(queued), "queued")
	ch <- prometheus.MustNewConstMetric(catalogGenDesc, prometheus.GaugeValue, float64(rt.h.Catalog().Snapshot().Generation()))
	for _, p := range rt.h.PoolStats() {
		pages := strconv.FormatUint(uint64(p.MemoryPages), 10)
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(p.Size), p.Plugin, pages, "size")
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(p.Live), p.Plugin, pages, "live")
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(p.Idle), p.Plugin, pages, "idle")
		ch <- prometheus.MustNewConstMetric(poolDiscardedDesc, prometheus.CounterValue, float64(p.Discarded), p.Plugin, pages)
	}
}
