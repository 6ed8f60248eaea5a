package server

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/eventlog"
)

// eventLog is the appender a runtime built from l writes decisions to: the
// event log, teed to every exporter. A changed decision_log: section is
// reported, not applied.
func (s *Server) eventLog(l *config.Loaded) eventlog.Appender {
	if s.dlog != nil && !reflect.DeepEqual(l.DecisionLog, s.dlog.Config()) {
		s.logger.Warn("gatehost serve: decision_log changed; a reload keeps the running export (restart to apply it)", "config", l.File)
	}
	return s.dlog.Tee(s.evlog)
}

// closeDecisionLog sends what the exporters hold, for at most 5s (within
// the shutdown timeout).
func (s *Server) closeDecisionLog() error {
	ctx, cancel := context.WithTimeout(context.Background(), min(cmp.Or(s.opts.ShutdownTimeout, 5*time.Second), 5*time.Second))
	defer cancel()
	if err := s.dlog.Close(ctx); err != nil {
		return fmt.Errorf("decision_log: %w", err)
	}
	return nil
}
