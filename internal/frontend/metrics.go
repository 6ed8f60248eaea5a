package frontend

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehost/gatehost/host"
)

// Metrics are a front end's Prometheus metrics, on a registry of their own
// (no global state): the decisions of its hosts (Hooks), its config
// reloads (Reloader), and the Go and process collectors. A front end
// registers its own besides (Register). Labels come from the config
// (pipeline, stage, plugin) or from closed sets (verdict, reason, result):
// a caller cannot create a series.
type Metrics struct {
	reg              *prometheus.Registry
	decisions        *prometheus.CounterVec
	stageSeconds     *prometheus.HistogramVec
	pluginFailures   *prometheus.CounterVec
	quarantines      *prometheus.CounterVec
	quarantined      *prometheus.GaugeVec
	reloads          *prometheus.CounterVec
	configGeneration prometheus.Gauge
	lastReload       prometheus.Gauge
}

// LatencyBuckets span 50µs to 10s: a warm gate call is about 0.1–2 ms, a
// deadline is about 1 s.
var LatencyBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewMetrics returns the metrics every front end has, registered.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_decisions_total",
		Help: "Decisions, by pipeline and verdict."}, []string{"pipeline", "verdict"})
	m.stageSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehost_stage_duration_seconds",
		Help: "Wall time of a stage, waiting for an instance included.", Buckets: LatencyBuckets},
		[]string{"pipeline", "stage"})
	m.pluginFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_plugin_failures_total",
		Help: "Stages the host decided inconclusive, by plugin and reason code (plugin_trap, plugin_timeout, host_overloaded, ...)."},
		[]string{"plugin", "reason"})
	m.quarantines = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_quarantines_total",
		Help: "Times a plugin entered quarantine."}, []string{"plugin"})
	m.quarantined = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehost_plugin_quarantined",
		Help: "1 while a plugin is quarantined."}, []string{"plugin"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_config_reloads_total",
		Help: "Config reloads, by result (success, failure). A failed reload keeps the previous config serving."},
		[]string{"result"})
	m.configGeneration = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehost_config_generation",
		Help: "The serving config: 1 at start, one more per successful reload."})
	m.lastReload = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehost_config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful reload."})
	m.Register(m.decisions, m.stageSeconds, m.pluginFailures, m.quarantines, m.quarantined,
		m.reloads, m.configGeneration, m.lastReload,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

// Register adds a front end's own collectors; it panics on a clash, as a
// programming error.
func (m *Metrics) Register(cs ...prometheus.Collector) {
	for _, c := range cs {
		m.reg.MustRegister(c)
	}
}

// Handler serves the registry in the Prometheus text exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Hooks feeds decisions and quarantines from a host into the metrics
// (host.Config.Hooks).
func (m *Metrics) Hooks() *host.Hooks {
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

// generation records the serving config's generation; success adds a
// successful reload at the current time.
func (m *Metrics) generation(gen uint64, success bool) {
	m.configGeneration.Set(float64(gen))
	if success {
		m.reloads.WithLabelValues("success").Inc()
		m.lastReload.SetToCurrentTime()
	}
}

func (m *Metrics) reloadFailed() { m.reloads.WithLabelValues("failure").Inc() }
