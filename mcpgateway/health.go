package mcpgateway

import (
	"sync"
	"time"
)

// UpstreamStatus is what the gateway last saw of one upstream, over all
// sessions: for /readyz and for operators.
type UpstreamStatus struct {
	Upstream string `json:"upstream"`
	// State is "unknown" (not started yet), "up" or "failing".
	State string `json:"state"`
	// Error is the last failure's text while failing.
	Error string `json:"error,omitempty"`
	// Since is when the state began.
	Since time.Time `json:"since,omitzero"`
}

// healthBoard keeps the latest state of each upstream.
type healthBoard struct {
	mu sync.Mutex
	m  map[string]UpstreamStatus
	up map[string]bool // upstreams that were ever up
}

func (h *healthBoard) set(name, state, errText string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]UpstreamStatus{}
	}
	if state == "up" {
		if h.up == nil {
			h.up = map[string]bool{}
		}
		h.up[name] = true
	}
	cur := h.m[name]
	if cur.State == state && cur.Error == errText {
		return
	}
	h.m[name] = UpstreamStatus{Upstream: name, State: state, Error: errText, Since: time.Now().UTC()}
}

func (h *healthBoard) ok(name string)                { h.set(name, "up", "") }
func (h *healthBoard) failed(name string, err error) { h.set(name, "failing", err.Error()) }

// Upstreams reports each configured upstream's latest state, in config
// order. An upstream whose latest start or connection failed is
// "failing": its tools are unavailable, and only its own.
func (g *Gateway) Upstreams() []UpstreamStatus {
	g.health.mu.Lock()
	defer g.health.mu.Unlock()
	out := make([]UpstreamStatus, 0, len(g.opts.Upstreams))
	for _, u := range g.opts.Upstreams {
		st, ok := g.health.m[u.Name]
		if !ok {
			st = UpstreamStatus{Upstream: u.Name, State: "unknown"}
		}
		out = append(out, st)
	}
	return out
}

// NoUpstreamEverUp reports whether every configured upstream is failing
// and none was ever up: the gateway never had a server to front (a
// command that does not exist, say), which gatehost mcp over stdio reports
// with its exit code.
func (g *Gateway) NoUpstreamEverUp() bool {
	g.health.mu.Lock()
	defer g.health.mu.Unlock()
	if len(g.opts.Upstreams) == 0 {
		return false
	}
	for _, u := range g.opts.Upstreams {
		if g.health.up[u.Name] || g.health.m[u.Name].State != "failing" {
			return false
		}
	}
	return true
}

// Readiness is the gateway's answer to /readyz: ready when its config's
// tool names resolved (or are not checked yet), its policies type-check
// against its catalog (or are not checked yet) and no upstream is failing.
type Readiness struct {
	Ready     bool             `json:"ready"`
	Upstreams []UpstreamStatus `json:"upstreams"`
	// ConfigError says why the gateway refuses every session (a tool name
	// in the config that matches nothing), when it does.
	ConfigError string `json:"config_error,omitempty"`
	// PolicyError says why the gateway refuses every call (a policy of
	// its pipeline that does not type-check against its catalog), when
	// it does.
	PolicyError string `json:"policy_error,omitempty"`
}

// Readiness reports whether the gateway serves every configured upstream.
func (g *Gateway) Readiness() Readiness {
	r := Readiness{Ready: true, Upstreams: g.Upstreams()}
	for _, u := range r.Upstreams {
		if u.State == "failing" {
			r.Ready = false
		}
	}
	g.namesMu.Lock()
	if g.namesErr != nil {
		r.Ready, r.ConfigError = false, g.namesErr.Error()
	}
	g.namesMu.Unlock()
	if err := g.policyError(); err != nil {
		r.Ready, r.PolicyError = false, err.Error()
	}
	return r
}
