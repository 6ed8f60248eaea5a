package baseline

import (
	"context"
	"sync"
)

// memory is the Store of NewMemory.
type memory struct {
	mu  sync.Mutex
	set *Set
}

// NewMemory returns an empty Store kept in memory: for one process, and
// for tests.
func NewMemory() Store { return &memory{set: empty} }

func (m *memory) Load(ctx context.Context) (*Set, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set, nil
}

func (m *memory) AddIfAbsent(ctx context.Context, entries []Entry) (*Set, error) {
	entries, err := checkWrite(entries)
	if err != nil {
		return nil, err
	}
	return m.update(ctx, func(s *Set) *Set { return s.with(entries, false, nil) })
}

func (m *memory) Approve(ctx context.Context, entries []Entry) (*Set, error) {
	entries, err := checkWrite(entries)
	if err != nil {
		return nil, err
	}
	return m.update(ctx, func(s *Set) *Set { return s.with(entries, true, nil) })
}

func (m *memory) Remove(ctx context.Context, keys []Key) (*Set, error) {
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	return m.update(ctx, func(s *Set) *Set { return s.with(nil, false, keys) })
}

func (m *memory) update(ctx context.Context, fn func(*Set) *Set) (*Set, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set = fn(m.set)
	return m.set, nil
}
