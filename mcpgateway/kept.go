package mcpgateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
)

// A sessionless request over HTTP (MCP 2026-07-28) is a gateway session of
// its own, and each of its URL upstreams a connection of its own:
// initialize, notifications/initialized, a tools/list for the pins, the
// call, and the session's DELETE, five exchanges with the upstream for one
// call. When such a request ends,
// its URL upstreams' sessions are kept instead, for the next sessionless
// request of the same authenticated principal with the same capabilities
// at the same revision, which takes them over with their listing: a
// principal's requests then meet the upstream as a client with sessions
// does, and as a shared process already serves a principal's sessionless
// requests (downstream.conns).
//
// Kept are only connections that are live, whose listing is current (no
// change announced since) and that failed nothing; an anonymous caller's
// never, as nothing tells two anonymous callers apart; a session-scoped
// process never (put). Their number is bounded by MaxSessions in all and
// MaxSessionsPerPrincipal per principal and upstream, and each is closed
// after keptIdle unused.

// keptIdle is how long a kept upstream session waits for its principal's
// next request before it is closed.
const keptIdle = 30 * time.Second

// keptSessions holds the kept connections, by keptKey and upstream.
type keptSessions struct {
	mu   sync.Mutex
	idle map[string][]keptConn // newest last
	// byPrincipal counts the kept connections of each principal and
	// upstream, whatever capabilities they were opened with: a caller
	// declaring other capabilities in every request gets no more.
	byPrincipal map[string]int
	n           int
	max         int           // in all
	perKey      int           // per principal and upstream
	idleFor     time.Duration // keptIdle but in tests
	now         func() time.Time
	closed      bool
	sweep       *time.Timer
}

type keptConn struct {
	c     *upconn
	until time.Time
}

func newKeptSessions(max, perKey int) *keptSessions {
	return &keptSessions{idle: map[string][]keptConn{}, byPrincipal: map[string]int{}, max: max, perKey: perKey, idleFor: keptIdle, now: time.Now}
}

// keptKey is what a kept connection must match to be taken: the
// principal, the revision and the capabilities the client declared (which
// the upstream session was opened with). "" for an anonymous caller.
func keptKey(p *abi.Principal, revision string, caps *mcp.ClientCapabilities) string {
	if p == nil {
		return ""
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return principalKey(p) + "\x00" + revision + "\x00" + hex.EncodeToString(sum[:])
}

func keptSlot(key string, idx int) string { return key + "\x00" + strconv.Itoa(idx) }

// principalSlot is the principal and upstream of a kept connection's slot:
// keptKey begins with principalKey, a JSON array, which holds no NUL.
func principalSlot(key string, idx int) string {
	p, _, _ := strings.Cut(key, "\x00")
	return p + "\x00" + strconv.Itoa(idx)
}

// keepable reports whether c may serve another request as it is.
func (c *upconn) keepable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs != nil && c.failures == 0 && !c.stale()
}

// put keeps c for key, or reports false (the caller closes it). Only a URL
// upstream's connection is kept: a session-scoped process kept would run
// past the bound on processes (Upstream.SessionScoped), and a process
// started afresh is listed afresh.
func (k *keptSessions) put(key string, c *upconn) bool {
	if key == "" || c.u.URL == "" || !c.keepable() {
		return false
	}
	slot, ps := keptSlot(key, c.idx), principalSlot(key, c.idx)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || k.n >= k.max || k.byPrincipal[ps] >= k.perKey {
		return false
	}
	k.idle[slot] = append(k.idle[slot], keptConn{c: c, until: k.now().Add(k.idleFor)})
	k.n++
	k.byPrincipal[ps]++
	if k.sweep == nil {
		k.sweep = time.AfterFunc(k.idleFor, k.expire)
	}
	return true
}

// take returns a kept connection of upstream idx for key, or nil. One that
// can no longer serve (its upstream ended the session or announced a
// change while it waited) is closed, not returned.
func (k *keptSessions) take(key string, idx int) *upconn {
	if key == "" {
		return nil
	}
	slot := keptSlot(key, idx)
	var stale []*upconn
	defer func() {
		for _, c := range stale {
			c.close()
		}
	}()
	k.mu.Lock()
	defer k.mu.Unlock()
	for l := k.idle[slot]; len(l) > 0; l = k.idle[slot] {
		e := l[len(l)-1]
		k.idle[slot] = l[:len(l)-1]
		if len(k.idle[slot]) == 0 {
			delete(k.idle, slot)
		}
		k.n--
		k.drop(principalSlot(key, idx))
		if k.now().Before(e.until) && e.c.keepable() {
			return e.c
		}
		stale = append(stale, e.c)
	}
	return nil
}

// expire closes the connections kept past their time, and sweeps again
// while any are kept.
func (k *keptSessions) expire() {
	var old []*upconn
	k.mu.Lock()
	now := k.now()
	for slot, l := range k.idle {
		live := l[:0]
		for _, e := range l {
			if now.Before(e.until) {
				live = append(live, e)
			} else {
				old = append(old, e.c)
				k.drop(principalSlot(slot, e.c.idx))
			}
		}
		if len(live) == 0 {
			delete(k.idle, slot)
		} else {
			k.idle[slot] = live
		}
	}
	k.n -= len(old)
	switch {
	case k.n > 0 && !k.closed && k.sweep != nil:
		k.sweep.Reset(k.idleFor / 2)
	case k.n > 0 && !k.closed:
		k.sweep = time.AfterFunc(k.idleFor/2, k.expire)
	default:
		k.sweep = nil
	}
	k.mu.Unlock()
	for _, c := range old {
		c.close()
	}
}

// closeAll closes every kept connection; none is kept after.
func (k *keptSessions) closeAll() {
	k.mu.Lock()
	k.closed = true
	all := k.idle
	k.idle, k.byPrincipal, k.n = map[string][]keptConn{}, map[string]int{}, 0
	if k.sweep != nil {
		k.sweep.Stop()
		k.sweep = nil
	}
	k.mu.Unlock()
	for _, l := range all {
		for _, e := range l {
			e.c.close()
		}
	}
}

// count is the number of connections kept.
func (k *keptSessions) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

// drop counts one connection fewer for the principal slot ps.
func (k *keptSessions) drop(ps string) {
	if k.byPrincipal[ps]--; k.byPrincipal[ps] <= 0 {
		delete(k.byPrincipal, ps)
	}
}
