package mcpgateway

import (
	"fmt"
	"time"

	"github.com/gatehost/gatehost/host/eventlog"
)

// FailRecords makes g's approval records of the given kind fail, as a
// failing event log would. Call it before g serves anything.
func FailRecords(g *Gateway, kind string) {
	next := g.appendRecord
	g.appendRecord = func(r eventlog.Record) error {
		if r.Kind == kind {
			return fmt.Errorf("eventlog: %s record refused (test)", kind)
		}
		return next(r)
	}
}

// SetExchangeClock makes the token exchanges of g's upstreams read the
// time from now. Call it before g serves anything.
func SetExchangeClock(g *Gateway, now func() time.Time) {
	g.exchangeNow = now
	for _, c := range *g.creds.Load() {
		if c.ex != nil {
			c.ex.now = now
		}
	}
}

// SetKeptIdle makes g close a kept upstream session after d unused, by
// the clock now (nil: time.Now), and returns a count of the sessions kept
// and a function that closes those kept past their time at once. Call it
// before g serves anything.
func SetKeptIdle(g *Gateway, d time.Duration, now func() time.Time) (kept func() int, expire func()) {
	g.kept.idleFor = d
	if now != nil {
		g.kept.now = now
	}
	return g.kept.count, g.kept.expire
}

// LabelInstructions is an upstream's instructions as a client is shown
// them.
var LabelInstructions = labelInstructions
