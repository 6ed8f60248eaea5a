package mcpgateway

import (
	"fmt"

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
