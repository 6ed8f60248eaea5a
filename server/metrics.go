package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/frontend"
)

// metrics are serve's Prometheus metrics: every front end's
// (frontend.Metrics: decisions, stages, plugin failures, quarantines,
// reloads) and the decision API's own — the event log's commits, the HTTP
// requests, the serving runtime, and with a PostgreSQL store the store's.
// Labels come from the config (pipeline, stage, plugin) or from closed
// sets (verdict, reason, route, code): a caller cannot create a series.
type metrics struct {
	*frontend.Metrics
	logRecords   prometheus.Counter
	logCommits   prometheus.Counter
	logFailures  prometheus.Counter
	fsyncSeconds prometheus.Histogram
	requests     *prometheus.CounterVec
	store        storeMetrics // registered only with a PostgreSQL store
}

// latencyBuckets are every front end's (frontend.LatencyBuckets).
var latencyBuckets = frontend.LatencyBuckets

func newMetrics(s *Server) *metrics {
	m := &metrics{Metrics: frontend.NewMetrics()}
	m.logRecords = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_appended_records_total",
		Help: "Records appended to the event log (stage, decision, quarantine, repair)."})
	m.logCommits = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_commits_total",
		Help: "Group commits of the event log: one write and one fsync each."})
	m.logFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehost_eventlog_failures_total",
		Help: "Failed event log commits; after one the log refuses appends and every run is inconclusive."})
	m.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gatehost_eventlog_fsync_seconds",
		Help: "Time of the event log file's fsync per commit.", Buckets: latencyBuckets})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_http_requests_total",
		Help: "HTTP requests, by route and status code."}, []string{"route", "code"})
	m.Register(m.logRecords, m.logCommits, m.logFailures, m.fsyncSeconds, m.requests, &runtimeCollector{s: s})
	return m
}

func (m *metrics) onCommit(c eventlog.Commit) {
	if c.Records == 0 && c.Err == nil {
		return // a background checkpoint of the head alone: no records
	}
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
