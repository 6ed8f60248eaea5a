package mcpgateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	upstreamDesc = prometheus.NewDesc("gatehost_mcp_upstream_state",
		"1 for each upstream's current state: unknown (not started yet), up or failing.", []string{"upstream", "state"}, nil)
	sessionsDesc = prometheus.NewDesc("gatehost_mcp_sessions_open",
		"MCP sessions open (each has its own upstream connections).", nil, nil)
	mcpReadyDesc = prometheus.NewDesc("gatehost_mcp_ready", "1 when /readyz answers ready.", nil, nil)
	policyDesc   = prometheus.NewDesc("gatehost_mcp_policy_invalid",
		"1 while a policy of the gateway's pipeline does not type-check against its catalog (every call is refused, policy_invalid).", nil, nil)
)

// Collector reports the gateway's upstream health and open sessions at
// scrape time, for a Prometheus registry (gatehost mcp --listen's
// /metrics). The decisions are the host's (host.Config.Hooks).
func (g *Gateway) Collector() prometheus.Collector { return gatewayCollector{g} }

type gatewayCollector struct{ g *Gateway }

func (c gatewayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upstreamDesc
	ch <- sessionsDesc
	ch <- mcpReadyDesc
	ch <- policyDesc
}

func (c gatewayCollector) Collect(ch chan<- prometheus.Metric) {
	for _, u := range c.g.Upstreams() {
		for _, st := range []string{"unknown", "up", "failing"} {
			v := 0.0
			if u.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upstreamDesc, prometheus.GaugeValue, v, u.Upstream, st)
		}
	}
	c.g.table.mu.Lock()
	open := c.g.table.total
	c.g.table.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(open))
	ready := 0.0
	if c.g.Readiness().Ready {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(mcpReadyDesc, prometheus.GaugeValue, ready)
	invalid := 0.0
	if c.g.policyError() != nil {
		invalid = 1
	}
	ch <- prometheus.MustNewConstMetric(policyDesc, prometheus.GaugeValue, invalid)
}
