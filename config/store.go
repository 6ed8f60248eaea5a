package config

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/store"
)

// Store kinds (store.kind).
const (
	StoreFile     = "file"     // sessions.path and event_log.path: one process
	StorePostgres = "postgres" // PostgreSQL shared by a fleet (docs/FLEET.md)
)

// Event log chains of a PostgreSQL store (store.chain).
const (
	ChainNode   = "node"   // one hash chain per replica (store.node_id)
	ChainGlobal = "global" // one chain for the whole fleet
)

// Where a replica's catalog comes from (store.catalog).
const (
	CatalogLocal     = "local"     // catalog.sources, read by each replica
	CatalogPublished = "published" // the snapshot last published to the store
)

// storeConfig is the store: section as written.
type storeConfig struct {
	Kind      string        `mapstructure:"kind"`
	DSN       string        `mapstructure:"dsn"`
	DSNFile   string        `mapstructure:"dsn_file"`
	NodeID    string        `mapstructure:"node_id"`
	OpTimeout time.Duration `mapstructure:"op_timeout"`
	MaxConns  int32         `mapstructure:"max_conns"`
	Chain     string        `mapstructure:"chain"`
	Catalog   string        `mapstructure:"catalog"`
}

// Store is the resolved store: section (docs/CONFIGURATION.md,
// docs/FLEET.md): the description of the backend, which compose.OpenStore
// opens.
type Store struct {
	// Kind is StoreFile (the default) or StorePostgres.
	Kind string
	// DSN is the PostgreSQL connection string: store.dsn,
	// $GATEHOST_STORE_DSN, or the content of store.dsn_file (a mounted
	// Secret), trimmed. A secret: never logged.
	DSN string
	// NodeID names this replica (store.node_id, $GATEHOST_STORE_NODE_ID);
	// default the host name.
	NodeID string
	// OpTimeout bounds each store operation; 0 is the PostgreSQL
	// store's default (postgres.DefaultOpTimeout).
	OpTimeout time.Duration
	// MaxConns caps the connection pool; 0 is the PostgreSQL store's
	// default (postgres.DefaultMaxConns).
	MaxConns int32
	// Chain is ChainNode (default) or ChainGlobal.
	Chain string
	// Catalog is CatalogLocal (default) or CatalogPublished.
	Catalog string
}

// Postgres reports whether the store is PostgreSQL.
func (s Store) Postgres() bool { return s.Kind == StorePostgres }

// resolveStore checks the store: section and the keys it excludes.
func resolveStore(sc storeConfig, eventLogPath, sessionsPath string, rel func(string) string) (Store, error) {
	s := Store{Kind: cmp.Or(strings.TrimSpace(sc.Kind), StoreFile), OpTimeout: sc.OpTimeout, MaxConns: sc.MaxConns,
		Chain: cmp.Or(sc.Chain, ChainNode), Catalog: cmp.Or(sc.Catalog, CatalogLocal)}
	switch s.Kind {
	case StoreFile:
		for key, set := range map[string]bool{"store.dsn": sc.DSN != "", "store.dsn_file": sc.DSNFile != "", "store.node_id": sc.NodeID != "",
			"store.op_timeout": sc.OpTimeout != 0, "store.max_conns": sc.MaxConns != 0, "store.chain": sc.Chain != "", "store.catalog": sc.Catalog != ""} {
			if set {
				return Store{}, fmt.Errorf("%s: applies only to store.kind %s", key, StorePostgres)
			}
		}
		if strings.TrimSpace(eventLogPath) == "" {
			return Store{}, fmt.Errorf("event_log.path: required with store.kind %s", StoreFile)
		}
		return s, nil
	case StorePostgres:
	default:
		return Store{}, fmt.Errorf("store.kind: %q: want %s or %s", sc.Kind, StoreFile, StorePostgres)
	}
	// One source of truth: a fleet's sessions and log are in the database.
	if eventLogPath != "" {
		return Store{}, fmt.Errorf("event_log.path: not used with store.kind %s (the event log is in the database); remove it", StorePostgres)
	}
	if sessionsPath != "" {
		return Store{}, fmt.Errorf("sessions.path: not used with store.kind %s (sessions are in the database); remove it", StorePostgres)
	}
	switch {
	case sc.DSN != "" && sc.DSNFile != "":
		return Store{}, fmt.Errorf("store.dsn_file: set store.dsn (or $%s) or store.dsn_file, not both", envName("store.dsn"))
	case sc.DSNFile != "":
		b, err := safefile.ReadFile(rel(sc.DSNFile), 64<<10)
		if err != nil {
			return Store{}, fmt.Errorf("store.dsn_file: %w", err)
		}
		s.DSN = strings.TrimSpace(string(b))
	default:
		s.DSN = strings.TrimSpace(sc.DSN)
	}
	if s.DSN == "" {
		return Store{}, fmt.Errorf("store.dsn: required with store.kind %s (or store.dsn_file, or $GATEHOST_STORE_DSN)", StorePostgres)
	}
	s.NodeID = strings.TrimSpace(sc.NodeID)
	if s.NodeID == "" {
		h, err := os.Hostname()
		if err != nil {
			return Store{}, fmt.Errorf("store.node_id: not set and no host name: %w", err)
		}
		s.NodeID = h
	}
	if !store.ValidNodeID(s.NodeID) {
		return Store{}, fmt.Errorf("store.node_id (or $%s): %q: want 1 to %d bytes of [A-Za-z0-9_.-]", envName("store.node_id"), s.NodeID, store.MaxNodeIDBytes)
	}
	// 0 is the PostgreSQL store's default; a bare number is nanoseconds, never meant.
	if s.OpTimeout != 0 && (s.OpTimeout < time.Millisecond || s.OpTimeout > time.Minute) {
		return Store{}, fmt.Errorf("store.op_timeout: %s: want 1ms to 1m", s.OpTimeout)
	}
	if s.MaxConns < 0 || s.MaxConns > 1000 {
		return Store{}, fmt.Errorf("store.max_conns: %d: want 1 to 1000", s.MaxConns)
	}
	if s.Chain != ChainNode && s.Chain != ChainGlobal {
		return Store{}, fmt.Errorf("store.chain: %q: want %s or %s", sc.Chain, ChainNode, ChainGlobal)
	}
	if s.Catalog != CatalogLocal && s.Catalog != CatalogPublished {
		return Store{}, fmt.Errorf("store.catalog: %q: want %s or %s", sc.Catalog, CatalogLocal, CatalogPublished)
	}
	return s, nil
}
