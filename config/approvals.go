package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gatehost/gatehost/approval"
)

// Approval stores (approvals.store).
const (
	ApprovalsMemory   = "memory"   // this process only
	ApprovalsFile     = "file"     // one file, shared by the gatehost processes of a machine
	ApprovalsPostgres = "postgres" // the PostgreSQL store, shared by a fleet
)

// DefaultApprovalsFile is the approvals file of approvals.store file with
// no approvals.path: beside the event log.
const DefaultApprovalsFile = "approvals.json"

// approvalsConfig is the approvals: section as written.
type approvalsConfig struct {
	TTL   time.Duration `mapstructure:"ttl"`
	Store string        `mapstructure:"store"`
	Path  string        `mapstructure:"path"`
}

// Approvals is the resolved approvals: section: a person's approvals of
// single tool calls, minted by gatehost serve (POST /v1/approvals) and by
// gatehost mcp (elicitation), and presented to either (package approval).
type Approvals struct {
	// TTL is approvals.ttl (1s to 24h; default approval.DefaultTTL), or
	// the deprecated mcp.approval_ttl.
	TTL time.Duration
	// TTLSet tells whether the file set it.
	TTLSet bool
	// Store is ApprovalsMemory, ApprovalsFile or ApprovalsPostgres; the
	// default is ApprovalsPostgres with store.kind postgres, else
	// ApprovalsMemory.
	Store string
	// Path is the approvals file (ApprovalsFile): approvals.path, resolved,
	// default DefaultApprovalsFile beside event_log.path.
	Path string
	// Deprecated says what the file sets under a deprecated key, for the
	// caller to warn about.
	Deprecated []string
}

// resolveApprovals checks the approvals: section; mcpTTL is the
// deprecated mcp.approval_ttl.
func resolveApprovals(ac approvalsConfig, mcpTTL time.Duration, st Store, logPath string, rel func(string) string) (Approvals, error) {
	a := Approvals{TTL: ac.TTL, TTLSet: ac.TTL != 0, Store: strings.TrimSpace(ac.Store)}
	if mcpTTL != 0 {
		if a.TTLSet && mcpTTL != ac.TTL {
			return Approvals{}, fmt.Errorf("mcp.approval_ttl: replaced by approvals.ttl, which sets another TTL (%s); remove mcp.approval_ttl", ac.TTL)
		}
		a.TTL, a.TTLSet = mcpTTL, true
		a.Deprecated = append(a.Deprecated, "mcp.approval_ttl is deprecated: it is approvals.ttl, the one approval TTL of gatehost serve and gatehost mcp")
	}
	if !a.TTLSet {
		a.TTL = approval.DefaultTTL
	} else if err := approval.CheckTTL(a.TTL); err != nil {
		return Approvals{}, fmt.Errorf("approvals.ttl: %w", err)
	}
	if a.Store == "" {
		a.Store = ApprovalsMemory
		if st.Postgres() {
			a.Store = ApprovalsPostgres
		}
	}
	switch a.Store {
	case ApprovalsMemory:
	case ApprovalsFile:
		a.Path = rel(ac.Path)
		if a.Path == "" {
			if logPath == "" {
				return Approvals{}, fmt.Errorf("approvals.path: required with approvals.store %s", ApprovalsFile)
			}
			a.Path = filepath.Join(filepath.Dir(logPath), DefaultApprovalsFile)
		}
	case ApprovalsPostgres:
		if !st.Postgres() {
			return Approvals{}, fmt.Errorf("approvals.store: %s needs store.kind %s", ApprovalsPostgres, StorePostgres)
		}
	default:
		return Approvals{}, fmt.Errorf("approvals.store: %q: want %s, %s or %s", ac.Store, ApprovalsMemory, ApprovalsFile, ApprovalsPostgres)
	}
	if ac.Path != "" && a.Store != ApprovalsFile {
		return Approvals{}, fmt.Errorf("approvals.path: applies only to approvals.store %s", ApprovalsFile)
	}
	return a, nil
}
