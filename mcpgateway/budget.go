package mcpgateway

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/time/rate"
)

// What an upstream sends of its own accord is bounded, so that a hostile
// or broken server cannot turn the gateway into an amplifier: its requests
// of the client (roots/list, sampling, elicitation, during a call, on the
// GET stream or in a call's answer), each of which is recorded and may
// reach a person, by a budget (askBudget); its tools/list_changed
// announcements, each of which costs a listing, by coalescing them
// (serialRuns). Any other request it makes of the client is refused
// unrecorded (fromUpstream).

// refusalRecordEvery spaces the records of an upstream's refused
// requests: one record stands for every refusal since the last.
const refusalRecordEvery = time.Second

// maxIdleBudgets is how many budgets the gateway keeps before it drops
// those that are full again (unused for a minute) and have nothing to
// record.
const maxIdleBudgets = 1024

// askBudget is the budget of one upstream's requests of one caller's
// client: a token bucket holding Options.MaxUpstreamRequestsPerMinute,
// refilled evenly over a minute. It belongs to the gateway, not to a
// connection: a caller's sessions, the sessionless requests that each
// connect anew, and reconnects all spend the same one.
type askBudget struct {
	g     *Gateway
	reg   *askBudgets
	lim   *rate.Limiter
	label map[string]any // upstream and principal, for the records

	mu      sync.Mutex
	refused map[string]int // refusals not yet recorded, by method
	last    time.Time      // when refusals were last recorded
	flush   *time.Timer    // records the refusals pending, when set
}

// askBudgets are the gateway's budgets, by key (askKey).
type askBudgets struct {
	mu      sync.Mutex
	by      map[string]*askBudget
	sweepAt int  // the size at which idle budgets are dropped next
	closed  bool // recordAll ran: refusals are recorded at once
	// flushes counts the flush timers set and not yet done, for
	// recordAll to wait on.
	flushes sync.WaitGroup
}

// budget returns the connection's budget: its own when the connection is
// shared (its requests cannot be told apart by caller), otherwise that of
// its upstream and its owner's principal.
func (c *upconn) budget() *askBudget {
	key := fmt.Sprintf("%d\x00", c.idx)
	label := map[string]any{"upstream": c.u.Name}
	if c.shared() {
		key += fmt.Sprintf("shared\x00%p", c)
		label["shared"] = true
	} else {
		d := c.owner.Load()
		d.mu.Lock()
		key += d.key
		label["principal"] = principalLabel(d.principal)
		if d.principal == nil && d.id != "" && !sessionless(d.version) {
			// Anonymous callers are one principal; each session of
			// them has a budget of its own, so that one cannot spend
			// another's. Sessionless anonymous requests share one.
			key += "\x00" + d.id
			label["session"] = d.id
		}
		d.mu.Unlock()
	}
	return c.g.asks.get(c.g, key, label)
}

func (r *askBudgets) get(g *Gateway, key string, label map[string]any) *askBudget {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.by[key]; ok {
		return b
	}
	if r.by == nil {
		r.by = map[string]*askBudget{}
	}
	if len(r.by) >= max(r.sweepAt, maxIdleBudgets) {
		for k, b := range r.by {
			if b.idle() {
				delete(r.by, k)
			}
		}
		// With many budgets in use at once, the next sweep waits for
		// as many more: each costs a pass over them all.
		r.sweepAt = 2 * len(r.by)
	}
	n := g.opts.MaxUpstreamRequestsPerMinute
	b := &askBudget{g: g, reg: r, lim: rate.NewLimiter(rate.Limit(float64(n)/60), n), label: label}
	r.by[key] = b
	return b
}

// idle reports whether the budget is full and has nothing to record: it
// can be dropped, and made again as it was.
func (b *askBudget) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.refused) == 0 && b.flush == nil && b.lim.Tokens() >= float64(b.lim.Burst())
}

// admitAsk spends one of the budget for a request of the client with the
// given method, or refuses it. A refusal is recorded together with those
// not yet recorded, unless a record was written less than
// refusalRecordEvery ago; then a timer records them when that time is up,
// so that every refusal is counted in a record within about a second.
func (c *upconn) admitAsk(method string) error {
	b := c.budget()
	if b.lim.Allow() {
		return nil
	}
	// The registry's lock first, as get takes them; under it a timer is
	// added to flushes only before recordAll waits on them.
	b.reg.mu.Lock()
	b.mu.Lock()
	if b.refused == nil {
		b.refused = map[string]int{}
	}
	b.refused[method]++
	var due map[string]int
	if wait := refusalRecordEvery - time.Since(b.last); wait <= 0 || b.reg.closed {
		due = b.take()
	} else if b.flush == nil {
		b.reg.flushes.Add(1)
		b.flush = time.AfterFunc(wait, func() {
			defer b.reg.flushes.Done()
			b.record()
		})
	}
	b.mu.Unlock()
	b.reg.mu.Unlock()
	if due != nil {
		b.write(due)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("gatehost mcp gateway: %s is refused: upstream %q is over its budget of %d requests a minute to the client (mcp.max_upstream_requests_per_minute)",
			method, c.u.Name, c.g.opts.MaxUpstreamRequestsPerMinute)}
}

// take returns the refusals pending and clears them; b.mu is held.
func (b *askBudget) take() map[string]int {
	due := b.refused
	b.refused, b.last = nil, time.Now()
	if b.flush != nil {
		if b.flush.Stop() {
			b.reg.flushes.Done() // it will not run
		}
		b.flush = nil
	}
	return due
}

// record writes the refusals pending, if any (the flush timer, and Close).
func (b *askBudget) record() {
	b.mu.Lock()
	due := b.take()
	b.mu.Unlock()
	if len(due) > 0 {
		b.write(due)
	}
}

func (b *askBudget) write(due map[string]int) {
	n := 0
	for _, k := range due {
		n += k
	}
	rec := maps.Clone(b.label)
	rec["outcome"] = "refused: over the upstream's request budget (mcp.max_upstream_requests_per_minute)"
	rec["refused"] = n
	rec["methods"] = due
	b.g.recordEdge(kindUpstreamRequest, rec)
	b.g.opts.Logger.Warn("mcp gateway: upstream over its budget of requests to the client; refused",
		"upstream", b.label["upstream"], "refused", n, "per_minute", b.g.opts.MaxUpstreamRequestsPerMinute)
}

// recordAll writes every budget's pending refusals, and waits for the
// flush timers already running; Close calls it once no connection is
// left to make more, before the event log closes. Refusals after it are
// recorded at once.
func (r *askBudgets) recordAll() {
	r.mu.Lock()
	r.closed = true
	all := make([]*askBudget, 0, len(r.by))
	for _, b := range r.by {
		all = append(all, b)
	}
	r.mu.Unlock()
	for _, b := range all {
		b.record()
	}
	r.flushes.Wait()
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
