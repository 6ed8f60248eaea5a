// Package counter keeps the host's counts of accepted tool calls: per agent
// session (since its first call and within windows) and per principal
// (within windows, across sessions). The host adds a call when a decision
// accepts it; gates read the counts through the counters capability
// (abi.OpCountersGet), and the policy gate puts them in context.session.
//
// MemStore keeps the counts of one process. A shared store (store/postgres)
// keeps them for the replicas of a fleet, so a rate limit holds whichever
// replica decides a call.
package counter

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"
)

// ErrStore is wrapped by the errors of a store that could not be read or
// written: the counts are then unknown, never 0.
var ErrStore = errors.New("counter: store unavailable")

// Call is one accepted tool call.
type Call struct {
	// Session is the agent session; "" counts the call for no session.
	Session string
	// Principal is the caller's key (PrincipalKey); "" counts the call
	// for no principal.
	Principal string
	// Tool is the canonical tool id.
	Tool string
	// At is when it was decided: the run's clock.
	At time.Time
}

// Query asks for the counts of one session and one principal.
type Query struct {
	Session   string
	Principal string
	// Windows are the windows to count in, each ending at Now.
	Windows []time.Duration
	Now     time.Time
}

// Counts are a Query's answer. A tool not called is absent from a map.
type Counts struct {
	// Session counts the session's calls per tool, since its first.
	Session map[string]int64
	// Window counts the session's calls per tool within each window.
	Window map[time.Duration]map[string]int64
	// Principal counts the principal's calls per tool within each window,
	// across its sessions.
	Principal map[time.Duration]map[string]int64
}

// Store keeps counts. Its methods are safe for concurrent use; a failure
// of the store wraps ErrStore.
type Store interface {
	// Add counts an accepted call.
	Add(ctx context.Context, c Call) error
	// Counts answers q. A call at or before Now minus a window is outside
	// it; a call after Now is inside.
	Counts(ctx context.Context, q Query) (Counts, error)
}

// PrincipalKey is a principal's counting key: its subject is unique only
// within its issuer, so the key holds both, the issuer length-prefixed.
// An anonymous caller ("" subject) has no key.
func PrincipalKey(issuer, subject string) string {
	if subject == "" {
		return ""
	}
	return strconv.Itoa(len(issuer)) + ":" + issuer + subject
}

// MemStore is a Store in memory, for one process. It keeps each call for
// Retain (the longest window counted); the totals of a session since its
// first call are kept as long as the store.
type MemStore struct {
	retain time.Duration

	mu        sync.Mutex
	totals    map[string]map[string]int64 // session → tool → calls
	sessions  map[string][]stamp          // session → calls, in order of time added
	principal map[string][]stamp          // principal → calls
}

type stamp struct {
	at   time.Time
	tool string
}

// NewMemStore returns an empty store that keeps calls for retain (at least
// the longest window the host counts over).
func NewMemStore(retain time.Duration) *MemStore {
	return &MemStore{retain: retain, totals: map[string]map[string]int64{},
		sessions: map[string][]stamp{}, principal: map[string][]stamp{}}
}

// Add implements Store.
func (m *MemStore) Add(_ context.Context, c Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := stamp{at: c.At, tool: c.Tool}
	if c.Session != "" {
		t := m.totals[c.Session]
		if t == nil {
			t = map[string]int64{}
			m.totals[c.Session] = t
		}
		t[c.Tool]++
		m.sessions[c.Session] = m.prune(append(m.sessions[c.Session], s), c.At)
	}
	if c.Principal != "" {
		m.principal[c.Principal] = m.prune(append(m.principal[c.Principal], s), c.At)
	}
	return nil
}

// prune drops the calls older than retain before now.
func (m *MemStore) prune(list []stamp, now time.Time) []stamp {
	cut := now.Add(-m.retain)
	i := 0
	for i < len(list) && !list[i].at.After(cut) {
		i++
	}
	if i == 0 {
		return list
	}
	return slices.Clone(list[i:])
}

// Counts implements Store.
func (m *MemStore) Counts(_ context.Context, q Query) (Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := Counts{Session: map[string]int64{}, Window: map[time.Duration]map[string]int64{}, Principal: map[time.Duration]map[string]int64{}}
	if q.Session != "" {
		for k, v := range m.totals[q.Session] {
			c.Session[k] = v
		}
	}
	for _, w := range q.Windows {
		c.Window[w] = within(m.sessions[q.Session], q.Session != "", q.Now, w)
		c.Principal[w] = within(m.principal[q.Principal], q.Principal != "", q.Now, w)
	}
	return c, nil
}

func within(list []stamp, ok bool, now time.Time, w time.Duration) map[string]int64 {
	out := map[string]int64{}
	if !ok {
		return out
	}
	cut := now.Add(-w)
	for _, s := range list {
		if s.at.After(cut) {
			out[s.tool]++
		}
	}
	return out
}
