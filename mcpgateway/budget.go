package mcpgateway

import (
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/time/rate"
)

// What an upstream sends of its own accord is bounded per connection, so
// that a hostile or broken server cannot turn the gateway into an
// amplifier: its requests of the client (roots/list, sampling,
// elicitation), each of which is recorded and may reach a person, by a
// budget (askBudget); its tools/list_changed announcements, each of which
// costs a listing, by coalescing them (serialRuns).

// refusalRecordEvery spaces the records of an upstream's refused
// requests: one record stands for every refusal since the last.
const refusalRecordEvery = time.Second

// askBudget is one connection's budget of requests of the client: a token
// bucket holding Options.MaxUpstreamRequestsPerMinute, refilled evenly
// over a minute. It lives as long as the connection's upconn, so a
// reconnect does not refill it.
type askBudget struct {
	lim *rate.Limiter

	mu         sync.Mutex
	refused    int       // refusals not yet recorded
	lastRecord time.Time // when refusals were last recorded
}

func newAskBudget(perMinute int) *askBudget {
	return &askBudget{lim: rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)}
}

// admitAsk spends one of the connection's requests of the client, or
// refuses the request. rec is the request's edge record (upstream, method,
// session): a refusal is recorded with it, together with the refusals
// not yet recorded, unless one was recorded less than refusalRecordEvery
// ago; those wait for the next record, or for the connection's close
// (flushRefusals), so none goes uncounted.
func (c *upconn) admitAsk(rec map[string]any) error {
	b := c.asks
	if b.lim.Allow() {
		return nil
	}
	b.mu.Lock()
	b.refused++
	var n int
	if now := time.Now(); now.Sub(b.lastRecord) >= refusalRecordEvery {
		n, b.refused, b.lastRecord = b.refused, 0, now
	}
	b.mu.Unlock()
	if n > 0 {
		c.recordRefusals(rec, n)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("gatehost mcp gateway: %s is refused: upstream %q is over its budget of %d requests a minute to the client",
			rec["method"], c.u.Name, c.g.opts.MaxUpstreamRequestsPerMinute)}
}

// flushRefusals records the refusals admitAsk has not recorded yet.
func (c *upconn) flushRefusals() {
	b := c.asks
	if b == nil {
		return
	}
	b.mu.Lock()
	n := b.refused
	b.refused, b.lastRecord = 0, time.Now()
	b.mu.Unlock()
	if n > 0 {
		c.recordRefusals(map[string]any{"upstream": c.u.Name}, n)
	}
}

func (c *upconn) recordRefusals(rec map[string]any, n int) {
	rec["outcome"] = "refused: over the upstream's request budget (mcp.max_upstream_requests_per_minute)"
	rec["refused"] = n
	c.g.recordEdge(kindUpstreamRequest, rec)
	c.g.opts.Logger.Warn("mcp gateway: upstream over its budget of requests to the client; refused",
		"upstream", c.u.Name, "refused", n, "per_minute", c.g.opts.MaxUpstreamRequestsPerMinute)
}

// serialRuns runs a function in the background at most once at a time:
// a trigger during a run asks for one more run after it, however many
// triggers come. A run that starts after a trigger covers what the
// trigger announced.
type serialRuns struct {
	mu      sync.Mutex
	running bool
	again   bool
}

// trigger starts f in a goroutine of its own, or has the run under way
// run it once more when it ends.
func (s *serialRuns) trigger(f func()) {
	s.mu.Lock()
	if s.running {
		s.again = true
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	go func() {
		for {
			f()
			s.mu.Lock()
			if !s.again {
				s.running = false
				s.mu.Unlock()
				return
			}
			s.again = false
			s.mu.Unlock()
		}
	}()
}
