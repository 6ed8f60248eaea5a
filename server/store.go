package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/catalog"
)

// Store health probing: every probeInterval while the database answers,
// backing off to probeMaxBackoff while it does not.
const (
	probeInterval   = time.Second
	probeMaxBackoff = 30 * time.Second
	// catalogPoll is how often a replica with store.catalog: published
	// looks for a newly published snapshot.
	catalogPoll = 2 * time.Second
)

// storeMetrics are the PostgreSQL store's series.
type storeMetrics struct {
	seconds *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

func newStoreMetrics() storeMetrics {
	return storeMetrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehost_store_operation_duration_seconds",
			Help: "Time of one PostgreSQL store operation (query or transaction), by operation.", Buckets: latencyBuckets},
			[]string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehost_store_errors_total",
			Help: "Failed PostgreSQL store operations, by operation; each made its decision inconclusive or its change refused."},
			[]string{"op"}),
	}
}

// registerStore adds the store's series once the store is open.
func (m *metrics) registerStore(s *Server) {
	up := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gatehost_store_up",
		Help: "1 while the PostgreSQL store answered its last operation or probe, 0 otherwise."}, func() float64 {
		if s.storeReady() {
			return 1
		}
		return 0
	})
	m.Register(m.store.seconds, m.store.errors, up)
}

func (m *metrics) onStoreOp(op string, took time.Duration, err error) {
	m.store.seconds.WithLabelValues(op).Observe(took.Seconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		m.store.errors.WithLabelValues(op).Inc()
	}
}

// checkStore refuses a reload that would move the store: the open pool,
// log and session store are kept for the server's life.
func (s *Server) checkStore(l *config.Loaded) error {
	if l.Store.Postgres() != s.backends.Shared() {
		return fmt.Errorf("config %s: store.kind: changed; a reload keeps the open store (restart to change it)", l.File)
	}
	if !s.backends.Shared() {
		return nil
	}
	// Every key the open store was built from: a reload that took a new
	// value without applying it would report a change that is not in force.
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"store.dsn", l.Store.DSN != s.store.DSN},
		{"store.node_id", l.Store.NodeID != s.store.NodeID},
		{"store.chain", l.Store.Chain != s.store.Chain},
		{"store.op_timeout", l.Store.OpTimeout != s.store.OpTimeout},
		{"store.max_conns", l.Store.MaxConns != s.store.MaxConns},
		{"store.catalog", l.Store.Catalog != s.store.Catalog},
	} {
		if c.changed {
			return fmt.Errorf("config %s: %s: changed; a reload keeps the open store (restart to change it)", l.File, c.key)
		}
	}
	return nil
}

// watchStore runs the store's health probe and, with store.catalog:
// published, calls published when another snapshot is published.
func (s *Server) watchStore(ctx context.Context, published func()) {
	db := s.backends
	if !db.Shared() {
		return
	}
	go db.Monitor(ctx, probeInterval, probeMaxBackoff)
	if s.store.Catalog == config.CatalogPublished {
		go db.WatchCatalog(ctx, catalogPoll, func(string, []catalog.Tool) { published() })
	}
}

// storeReady says whether the store can record decisions; a replica whose
// database does not answer is not ready, so a load balancer sends its
// traffic elsewhere (its decisions would be inconclusive).
func (s *Server) storeReady() bool {
	if s.backends == nil || !s.backends.Shared() {
		return true
	}
	ok, _ := s.backends.Healthy()
	return ok
}
