package approval

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Store holds approvals. A store may be shared by processes (File) or
// replicas (store/postgres's DB.Approvals); its two operations are each
// atomic across all of them. Store methods do not apply the binding: that
// is the Approvals' rule, the same whatever the store.
type Store interface {
	// Add stores a, which is valid (Approval.Check) and has a new id,
	// unless max approvals unexpired at now are held already, used or not:
	// then ErrFull. Expired approvals may be dropped meanwhile.
	Add(ctx context.Context, a Approval, now time.Time, max int) error
	// Take is the one presentation of id at now: it marks the approval
	// used and returns it as it was before, Used telling whether it had
	// been used already. found is false when the store holds no such id
	// (never stored, or expired and dropped). An expired approval is
	// returned and dropped. Of any number of concurrent Takes of one id,
	// at most one returns it unused.
	Take(ctx context.Context, id string, now time.Time) (s Stored, found bool, err error)
	// RequestStore holds the requests approvers decide, beside the
	// approvals they mint.
	RequestStore
}

// Stored is an approval in a store: used approvals are kept until their
// expiry, so that a replay is refused as CodeUsed rather than
// CodeUnknown.
type Stored struct {
	Approval
	Used bool `json:"used,omitempty"`
}

// table is the state of the memory and file stores: the rule both apply
// to their map.
type table map[string]Stored

// sweep drops the approvals expired at now.
func (t table) sweep(now time.Time) (changed bool) {
	for id, s := range t {
		if !s.Usable(now) {
			delete(t, id)
			changed = true
		}
	}
	return changed
}

// add is Store.Add on t.
func (t table) add(a Approval, now time.Time, max int) error {
	if err := a.Check(); err != nil {
		return err
	}
	t.sweep(now)
	if _, dup := t[a.ID]; dup {
		return fmt.Errorf("approval: id %s exists", a.ID)
	}
	if len(t) >= max {
		return ErrFull
	}
	t[a.ID] = Stored{Approval: a}
	return nil
}

// take is Store.Take on t.
func (t table) take(id string, now time.Time) (Stored, bool) {
	s, ok := t[id]
	switch {
	case !ok:
		return Stored{}, false
	case !s.Usable(now):
		delete(t, id)
	default:
		u := s
		u.Used = true
		t[id] = u
	}
	return s, true
}

// memory is the Store of NewMemory.
type memory struct {
	mu sync.Mutex
	t  table
	r  requestTable
}

// NewMemory returns a Store kept in this process's memory: approvals do
// not outlive it and are not shared with other processes.
func NewMemory() Store { return &memory{t: table{}, r: requestTable{}} }

func (m *memory) Add(ctx context.Context, a Approval, now time.Time, max int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t.add(a, now, max)
}

func (m *memory) Take(ctx context.Context, id string, now time.Time) (Stored, bool, error) {
	if err := ctx.Err(); err != nil {
		return Stored{}, false, fmt.Errorf("%w: %w", ErrStore, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.t.take(id, now)
	return s, ok, nil
}

func (m *memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	m.mu.Lock()
	return nil
}

func (m *memory) OpenRequest(ctx context.Context, r Request, now time.Time, max int) (Request, bool, error) {
	if err := m.lock(ctx); err != nil {
		return Request{}, false, err
	}
	defer m.mu.Unlock()
	return m.r.open(r, now, max)
}

func (m *memory) Request(ctx context.Context, id string, now time.Time) (Request, error) {
	if err := m.lock(ctx); err != nil {
		return Request{}, err
	}
	defer m.mu.Unlock()
	return m.r.get(id, now)
}

func (m *memory) Requests(ctx context.Context, now time.Time) ([]Request, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.r.list(now), nil
}

func (m *memory) UpdateRequest(ctx context.Context, id string, now time.Time, change func(Request) (Request, error)) (Request, error) {
	if err := m.lock(ctx); err != nil {
		return Request{}, err
	}
	defer m.mu.Unlock()
	return m.r.update(id, change)
}
