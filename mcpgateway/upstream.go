package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUpstream is wrapped by every error about reaching an upstream: it did
// not start, closed the connection, timed out or answered outside the
// protocol.
var ErrUpstream = errors.New("upstream")

// upconn is one connection to one upstream: one downstream session's
// (d set: a URL or session-scoped upstream), or one of a shared stdio
// upstream's processes, used by every session the gateway gave it to (d
// nil; Gateway.pools). It is (re)connected on demand: after a crash, the
// next use by any session waits out the backoff, connects again and
// re-lists the tools before anything is sent.
type upconn struct {
	g *Gateway
	// owner is the session the connection serves, nil when shared. A
	// connection of a sessionless request that ended is kept for its
	// principal's next one (kept.go), which becomes its owner.
	owner atomic.Pointer[downstream]
	idx   int
	u     Upstream

	// changes counts the upstream's announcements of a change of its
	// tools (upstreamTransport, in wire order); listedAt is the count a
	// complete listing started at. While they differ (stale) no call to
	// the upstream is decided on the listing it has.
	changes, listedAt atomic.Uint64
	// listing is the connection's latest complete tools/list. listSeq
	// numbers the listings as they begin; listMu orders the stores of
	// listing, listedAt and listedUnder by it, storedSeq being the
	// number of the listing stored (storeListing).
	listing   atomic.Pointer[listing]
	listSeq   atomic.Uint64
	listMu    sync.Mutex
	storedSeq uint64
	// streamOpens counts the GET streams opened to the upstream
	// (standing.go); listedUnder is the count the listing was read under
	// (streamUnder). hearsChanges needs them equal.
	streamOpens, listedUnder atomic.Uint64

	// connecting admits one connection attempt at a time (a semaphore
	// a waiter can leave when its context ends).
	connecting chan struct{}
	// relists coalesces the upstream's tools/list_changed announcements
	// (budget.go).
	relists serialRuns
	// calls are the calls in flight on the connection (related.go).
	calls callsInFlight

	mu      sync.Mutex
	client  *mcp.Client
	rootsOn bool // placeholder root toggle, see rootsChanged
	cs      *mcp.ClientSession
	// wire is cs's connection, through the gateway's wire layer.
	wire *upstreamConn
	// live ends when cs is dropped (close, or the connection going away):
	// calls in flight on cs end with it rather than at their timeout.
	live     context.Context
	endLive  context.CancelFunc
	failures int       // consecutive failed or crashed connections
	notUntil time.Time // no reconnect before this
}

// session returns a live client session, connecting (and listing tools)
// when there is none. One caller connects at a time; the others wait for
// it, or for their own context, whichever ends first: an upstream that
// hangs while starting holds no caller past its deadline.
func (c *upconn) session(ctx context.Context) (*mcp.ClientSession, error) {
	if cs := c.current(); cs != nil {
		if c.wireOf(cs).refusal() == nil {
			return cs, nil
		}
		// The connection refused a message over the bound (upbound.go):
		// it is closed, if it has not noticed yet, and made anew.
		c.closeIf(cs)
	}
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w %s: starting: %w", ErrUpstream, c.u.Name, context.Cause(ctx))
	}
	defer func() { <-c.connecting }()
	c.mu.Lock()
	cs, notUntil := c.cs, c.notUntil
	c.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	if wait := time.Until(notUntil); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w %s: restarting: %w", ErrUpstream, c.u.Name, context.Cause(ctx))
		case <-t.C:
		}
	}
	// Starting, initialize and the first listing share one bound: an
	// upstream that hangs at any of them fails, and a caller waiting on
	// it waits no longer than ConnectTimeout.
	cctx, cancel := context.WithTimeout(ctx, c.g.opts.ConnectTimeout)
	defer cancel()
	cs, w, err := c.connect(cctx, true)
	if err == nil {
		err = c.g.relist(cctx, c, cs)
		if err != nil {
			_ = cs.Close()
		}
	}
	if err == nil {
		// Pinned at first sight, or recorded as drift, when it connects
		// (a restarted process too), not only when a session begins.
		if _, ierr := c.g.pinnedInstructions(cctx, c, cs); ierr != nil {
			c.g.opts.Logger.Warn("mcp gateway: upstream's instructions not checked", "upstream", c.u.Name, "error", ierr)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.failures++
		c.notUntil = time.Now().Add(c.backoff())
		c.g.health.failed(c.u.Name, err)
		return nil, fmt.Errorf("%w %s: %w", ErrUpstream, c.u.Name, err)
	}
	c.g.health.ok(c.u.Name)
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil && r.Capabilities.Tools != nil {
		w.announces = r.Capabilities.Tools.ListChanged
	}
	c.cs, c.wire = cs, w
	c.live, c.endLive = context.WithCancel(context.Background())
	go c.watch(cs)
	if w.injected != nil {
		go c.listen(cs, w)
	}
	return cs, nil
}

// liveContext is a context that ends when cs stops being the connection's
// session: at once if it is not (any more).
func (c *upconn) liveContext(cs *mcp.ClientSession) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs && c.live != nil {
		return c.live
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// backoff is the wait before the next connection attempt.
func (c *upconn) backoff() time.Duration {
	b := c.g.opts.RestartBackoff
	for i := 1; i < c.failures && b < c.g.opts.MaxRestartBackoff; i++ {
		b *= 2
	}
	return min(b, c.g.opts.MaxRestartBackoff)
}

// watch notices the upstream going away (a crashed process, a closed HTTP
// session) so that the next use reconnects.
func (c *upconn) watch(cs *mcp.ClientSession) {
	_ = cs.Wait()
	c.mu.Lock()
	dropped := c.cs == cs
	if dropped {
		c.cs = nil
		c.endLive()
		if !c.ended() {
			c.failures++
			c.notUntil = time.Now().Add(c.backoff())
			c.g.opts.Logger.Warn("mcp gateway: upstream connection closed", "upstream", c.u.Name, "session", c.sessionID())
			c.g.health.failed(c.u.Name, errors.New("connection closed"))
		}
	}
	c.mu.Unlock()
	if dropped {
		// A session whose connection ended (a crash, a message over the
		// bound) is closed too: what it still holds, such as the request
		// that listens for the upstream's notifications at 2026-07-28,
		// ends with it rather than with the upstream.
		c.g.background(func() { _ = cs.Close() })
	}
}

// hearsChanges reports whether the upstream's announcements of a change
// of its tools reach the connection between calls, and have since its
// listing was read. A stdio upstream's do. A URL upstream's come on the GET
// stream the gateway holds (standing.go): they reach it while the stream
// is open, if the upstream declared it announces them (tools.listChanged),
// and a listing read before the stream (last) opened may have missed one.
// Otherwise a call to the upstream lists its tools again before it is
// decided and before it is sent (callTool).
func (c *upconn) hearsChanges() bool {
	if len(c.u.Command) > 0 {
		return true
	}
	w := c.currentWire()
	return w != nil && w.announces && w.hearing.Load() && c.listedUnder.Load() == c.streamOpens.Load()
}

// wireOf is the wire connection of cs while cs is the connection's
// session, else nil.
func (c *upconn) wireOf(cs *mcp.ClientSession) *upstreamConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != cs {
		return nil
	}
	return c.wire
}

// currentWire is the wire connection of the connection's session, nil
// when there is none.
func (c *upconn) currentWire() *upstreamConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wire
}

// streamUnder is what a listing starting now is read under: the count of
// GET streams opened when one is open (standing.go), 0 when none is.
func (c *upconn) streamUnder() uint64 {
	if w := c.currentWire(); w != nil && w.hearing.Load() {
		return c.streamOpens.Load()
	}
	return 0
}

// shared reports whether the connection serves every session given it
// rather than one.
func (c *upconn) shared() bool { return c.owner.Load() == nil }

// ended reports whether what the connection serves is gone: its session,
// or for a shared connection the gateway.
func (c *upconn) ended() bool {
	d := c.owner.Load()
	if d == nil {
		c.g.closeMu.Lock()
		defer c.g.closeMu.Unlock()
		return c.g.isClosed
	}
	return d.closed.Load()
}

// sessionID is the id of the connection's session, "" when shared.
func (c *upconn) sessionID() string {
	d := c.owner.Load()
	if d == nil {
		return ""
	}
	return d.sessionID()
}

// healthy resets the backoff after a call that the upstream answered.
func (c *upconn) healthy() {
	c.mu.Lock()
	c.failures = 0
	c.mu.Unlock()
}

// close drops the connection; the next use reconnects. The old session is
// closed in the background: a stdio server that ignores its closed stdin
// is signalled only after CommandTransport's grace period, which no caller
// should wait out.
func (c *upconn) close() {
	c.mu.Lock()
	cs := c.cs
	c.cs = nil
	if cs != nil {
		// Calls in flight on it end now: the SDK's Close waits for them,
		// and an upstream cut off mid-call may never answer.
		c.endLive()
	}
	c.mu.Unlock()
	if cs != nil {
		c.g.background(func() { _ = cs.Close() })
	}
}

// closeIf closes the connection if cs is still its session: a caller that
// saw cs fail does not close the session another caller has made since.
func (c *upconn) closeIf(cs *mcp.ClientSession) {
	if c.current() == cs {
		c.close()
	}
}

// connect starts the upstream's session with the downstream client's
// capabilities, so that what the upstream may ask of the client is what
// the client declared. With standing, a URL upstream's connection is
// made ready for the GET stream the gateway holds (standing.go), which
// the caller starts once the session is the connection's.
func (c *upconn) connect(ctx context.Context, standing bool) (*mcp.ClientSession, *upstreamConn, error) {
	var t mcp.Transport
	// Every message of the connection is read under one bound (upbound.go).
	limit := newMessageLimit(c.u, c.g.opts)
	if len(c.u.Command) > 0 {
		cmd := exec.Command(c.u.Command[0], c.u.Command[1:]...)
		cmd.Env = append(os.Environ(), c.u.Env...)
		cmd.Stderr = os.Stderr
		t = &commandTransport{cmd: cmd, terminate: 2 * time.Second, limit: limit}
	} else {
		// Credentials are set per request (credTransport): a token
		// exchanged for the caller's is renewed as it expires. The SDK's
		// own bound on an event is above the gateway's (upbound.go).
		t = &mcp.StreamableClientTransport{Endpoint: c.u.URL, MaxEventSize: limit.bound + MessageFraming,
			HTTPClient: &http.Client{Transport: credTransport{c: c, base: c.g.upstreamHTTP, limit: limit}}}
	}
	ut := &upstreamTransport{Transport: t, onToolsChanged: func() { c.changes.Add(1) }, limit: limit}
	t = ut
	var client *mcp.Client
	if c.shared() {
		client = c.sharedClient()
	} else {
		client = c.sessionClient()
	}
	// Requests from the upstream to the client (roots, sampling,
	// elicitation) are forwarded to the downstream client (refused on a
	// shared connection).
	client.AddReceivingMiddleware(c.fromUpstream)
	// The upstream speaks the revision the downstream session speaks (the
	// newest with sessions when there is no client yet, the connection is
	// shared, or the client speaks a sessionless revision): a sessionless
	// one would forbid what the gateway relays during a call, such as an
	// upstream's elicitation (MCP 2026-07-28 moves those into the call's
	// answer), and an upstream connection is a session of its own.
	version := sessionRevision
	switch {
	case c.u.ProtocolVersion != "":
		// The operator's choice (Upstream.ProtocolVersion): at
		// 2026-07-28 the upstream's questions come in a call's answer.
		version = c.u.ProtocolVersion
	case !c.shared() && !sessionless(c.owner.Load().protocolVersion()):
		version = c.owner.Load().protocolVersion()
	}
	// The revision 2026-07-28 has no GET stream (SEP-2575); a connection
	// of a request that keeps nothing (kept.go) ends before anything
	// would come on one.
	ut.standing = standing && c.u.URL != "" && version < "2026-07-28" && !c.oneRequest()
	cs, err := client.Connect(withoutClientRevision{ctx}, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	c.client = client
	c.mu.Unlock()
	return cs, ut.conn, nil
}

// oneRequest reports whether the connection serves one sessionless
// request and will not be kept after it.
func (c *upconn) oneRequest() bool {
	d := c.owner.Load()
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.perRequest && d.keptKey == ""
}

// sessionClient is the client of a connection that serves one session:
// it offers the downstream client's capabilities, and the upstream's
// notifications go to that session.
func (c *upconn) sessionClient() *mcp.Client {
	return mcp.NewClient(c.g.impl, &mcp.ClientOptions{
		Logger:         sdkLogger(c.g.opts.Logger),
		Capabilities:   c.owner.Load().clientCapabilities(),
		MultiRoundTrip: noAutoInput,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.relists.trigger(func() { c.owner.Load().upstreamToolsChanged(c.idx) })
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			c.owner.Load().notifyListChanged(promptsChanged)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.owner.Load().notifyListChanged(resourcesChanged)
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			_ = c.owner.Load().server.ResourceUpdated(context.WithoutCancel(ctx), r.Params)
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			if ss := c.owner.Load().serverSession(); ss != nil {
				_ = ss.Log(context.WithoutCancel(ctx), r.Params)
			}
		},
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			// A call's progress goes with the call; another request's
			// (the client's own token, passed on) to the session.
			if !c.g.progress.deliver(r.Params) {
				if ss := c.owner.Load().serverSession(); ss != nil {
					_ = ss.NotifyProgress(context.WithoutCancel(ctx), r.Params)
				}
			}
		},
	})
}

// sharedClient is the client of a shared connection. It offers no client
// capability: what the upstream would ask of a client (roots, sampling,
// elicitation) cannot be attributed to one of the sessions it serves, so
// it is not offered, and refused when asked (fromUpstream). Its list
// changes go to every session it serves; a progress notification to the
// session whose call carries its token (progress.go); its log messages,
// which may tell of any session's call, to the gateway's log only.
func (c *upconn) sharedClient() *mcp.Client {
	return mcp.NewClient(c.g.impl, &mcp.ClientOptions{
		Logger:         sdkLogger(c.g.opts.Logger),
		Capabilities:   &mcp.ClientCapabilities{},
		MultiRoundTrip: noAutoInput,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.relists.trigger(func() { c.g.sharedToolsChanged(c) })
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			c.g.eachSessionOf(c, func(d *downstream) { d.notifyListChanged(promptsChanged) })
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.g.eachSessionOf(c, func(d *downstream) { d.notifyListChanged(resourcesChanged) })
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			c.g.opts.Logger.Debug("mcp gateway: log message of a shared upstream; not relayed to any session", "upstream", c.u.Name, "level", r.Params.Level)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.g.progress.deliver(r.Params)
		},
	})
}

// rootsChanged makes the SDK client send notifications/roots/list_changed
// upstream, by toggling a placeholder root that no upstream ever sees
// (roots/list is answered by the downstream client, see fromUpstream).
func (c *upconn) rootsChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil || c.cs == nil {
		return
	}
	const uri = "file:///gatehost-roots-changed"
	c.rootsOn = !c.rootsOn
	if c.rootsOn {
		c.client.AddRoots(&mcp.Root{URI: uri})
	} else {
		c.client.RemoveRoots(uri)
	}
}

// stale reports whether the upstream announced a change of its tools
// that no complete listing has followed yet.
func (c *upconn) stale() bool { return c.changes.Load() != c.listedAt.Load() }

// withoutClientRevision hides, from what is sent upstream, the revision
// the SDK's HTTP handler keeps in a downstream request's context (from its
// MCP-Protocol-Version header): the SDK's HTTP client would send it as an
// upstream request's header when it knows no revision of the upstream's
// own, and it is the downstream client's revision.
type withoutClientRevision struct{ context.Context }

func (c withoutClientRevision) Value(key any) any {
	if fmt.Sprintf("%T", key) == "mcp.protocolVersionContextKey" {
		return nil
	}
	return c.Context.Value(key)
}
