package session

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/host/catalog"
)

// Store holds session sets. Implementations must be safe for concurrent use
// and hand out copies.
type Store interface {
	// Load returns the session's set, or nil and no error when the store
	// does not hold it.
	Load(ctx context.Context, id string) (*Set, error)
	// Update runs fn on a copy of the session's set (nil when absent) and
	// stores what fn returns, atomically with respect to other Updates of
	// the store. If fn returns an error nothing is stored and that error is
	// returned unchanged.
	Update(ctx context.Context, id string, fn func(cur *Set) (*Set, error)) (*Set, error)
	// IDs lists the sessions held, sorted.
	IDs(ctx context.Context) ([]string, error)
}

// Create builds a new session whose core pins the named tools of snap (ids,
// wire names or aliases, matched exactly). Errors: ErrInvalidSession,
// ErrSessionExists, ErrUnknownTool, ErrUntrustedSource, ErrDuplicateTool,
// ErrStore.
func Create(ctx context.Context, st Store, snap *catalog.Snapshot, id string, core ...string) (*Set, error) {
	if !ValidID(id) {
		return nil, newErr("create", id, "", ErrInvalidSession, "want 1 to %d bytes of [A-Za-z0-9_.:-]", MaxIDBytes)
	}
	return st.Update(ctx, id, func(cur *Set) (*Set, error) {
		if cur != nil {
			return nil, newErr("create", id, "", ErrSessionExists, "")
		}
		return build(id, snap, core)
	})
}

// Activate grants the session the tool name denotes in snap. It is
// ActivateMany with one name.
func Activate(ctx context.Context, st Store, snap *catalog.Snapshot, id, name string) (*Set, error) {
	return ActivateMany(ctx, st, snap, id, []string{name})
}

// ActivateMany grants the session every named tool of snap, all or nothing,
// with one version bump. Each grant covers (session, tool id, the tool's
// current schema digest and policy digest), records snap's generation and
// pins the tool's provenance. A session the store does not hold is created
// with an empty core. Re-activating a tool whose pin drifted (Pin.Drift:
// schema, provenance, hints, effect or source changed, or a grant made
// before policy digests) replaces its grant: that is how a person accepts
// the changed tool.
//
// Errors: ErrInvalidSession, ErrUnknownTool, ErrUntrustedSource,
// ErrDuplicateTool, ErrAlreadyActive, ErrVersionOverflow, ErrStore.
func ActivateMany(ctx context.Context, st Store, snap *catalog.Snapshot, id string, names []string) (*Set, error) {
	if !ValidID(id) {
		return nil, newErr("activate", id, "", ErrInvalidSession, "want 1 to %d bytes of [A-Za-z0-9_.:-]", MaxIDBytes)
	}
	return st.Update(ctx, id, func(cur *Set) (*Set, error) {
		if cur == nil {
			cur = &Set{ID: id, Core: map[string]Pin{}, Activated: map[string]Activation{}}
		}
		if err := activateMany(cur, snap, names); err != nil {
			return nil, err
		}
		return cur, nil
	})
}

// Revoke removes the session's activation of a tool, named by its canonical
// id or, when snap is non-nil, by a name that resolves in snap. Errors:
// ErrUnknownSession, ErrNotActivated, ErrCoreTool, ErrVersionOverflow,
// ErrStore.
func Revoke(ctx context.Context, st Store, snap *catalog.Snapshot, id, name string) (*Set, error) {
	return st.Update(ctx, id, func(cur *Set) (*Set, error) {
		if cur == nil {
			return nil, newErr("revoke", id, name, ErrUnknownSession, "")
		}
		if err := revoke(cur, snap, name); err != nil {
			return nil, err
		}
		return cur, nil
	})
}

// Rebuild re-pins the session against snap after a catalog change: pins and
// grants whose tool is present and has not drifted (Pin.Drift) are carried
// forward, the others are dropped as removed or drifted, with what drifted
// (see Report). Errors: ErrUnknownSession, ErrVersionOverflow, ErrStore.
func Rebuild(ctx context.Context, st Store, snap *catalog.Snapshot, id string) (*Set, Report, error) {
	var r Report
	s, err := st.Update(ctx, id, func(cur *Set) (*Set, error) {
		if cur == nil {
			return nil, newErr("rebuild", id, "", ErrUnknownSession, "")
		}
		var err error
		r, err = rebuild(cur, snap)
		return cur, err
	})
	if err != nil {
		return nil, Report{}, err
	}
	return s, r, nil
}

// MemStore is an in-memory Store, the embedded default. The zero value is
// empty and ready.
type MemStore struct {
	mu   sync.RWMutex
	sets map[string]*Set
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

// Load implements Store.
func (m *MemStore) Load(_ context.Context, id string) (*Set, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sets[id].Clone(), nil
}

// Update implements Store.
func (m *MemStore) Update(_ context.Context, id string, fn func(*Set) (*Set, error)) (*Set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := fn(m.sets[id].Clone())
	if err != nil {
		return nil, err
	}
	if m.sets == nil {
		m.sets = map[string]*Set{}
	}
	if next == nil {
		delete(m.sets, id)
		return nil, nil
	}
	m.sets[id] = next.Clone()
	return next.Clone(), nil
}

// IDs implements Store.
func (m *MemStore) IDs(context.Context) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.sets)), nil
}
