// Package mcpgateway puts gatehost in the data path between an agent and
// real MCP servers: the agent connects to the gateway as if it were the
// server, and every tools/call runs a host pipeline before anything is sent
// upstream (docs/MCP-GATEWAY.md).
//
// The gateway speaks MCP through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): downstream over stdio
// (ServeTransport with mcp.StdioTransport) or Streamable HTTP (Handler);
// upstream to stdio commands it starts (commandTransport) or Streamable
// HTTP URLs. Each downstream session gets its own gatehost session. A stdio
// upstream is shared by the sessions (Upstream.Processes of it; each
// session is given one), unless Upstream.SessionScoped; a URL upstream is
// one upstream session per downstream session. Per-session protocol state
// (capabilities, log level, subscriptions, server-to-client requests)
// stays with its client on a session's own connection, and is refused on
// a shared one, where it could not be attributed to one session.
// What is trusted is not per session: the trust baseline (Options.Baseline)
// holds the tool definitions approved across sessions, processes and
// replicas, and the host's catalog is that baseline.
//
// What it does per method:
//   - tools/list: every upstream's tools, all pages within bounds, checked
//     against the trust baseline; a tool is shown as the baseline pins it
//     (a tool the baseline does not hold is not shown), under its exposed
//     name;
//   - tools/call: the pipeline decides, and a tool whose listed
//     definition differs from its baseline entry is refused (tool_drifted)
//     in the same recorded decision; accepted → forwarded unchanged
//     (plus the run id in _meta); rejected or inconclusive → nothing is
//     sent and the agent gets an isError result naming the findings, with
//     the Decision in _meta (MetaDecision), and as structuredContent when
//     the tool declares no output schema;
//   - resources, prompts and completions go to the upstream that lists
//     the item, never to whichever answers first; the rest passes through
//     to the upstream and back, with gatehost's _meta namespace removed
//     from everything an upstream sends.
//
// New builds the host from a host.Config and owns it: every decision is
// one host.Check of the call's MCP params (subject.FormatMCP). When the
// only finding is confirmation_required and the client can elicit, the
// person is asked; an approval is minted bound to the session, the tool's
// id and schema digest, and the SHA-256 of the host's native subject, and
// the call runs again carrying its id as the confirmation token. The
// host's Confirmer is package approval's, the rule gatehost serve applies
// too: it takes the approval against the tool as that run's pinned catalog
// snapshot has it, single use, within Options.ApprovalTTL, and records
// its use (or refusal) under the run's id before any stage runs. With a
// shared Options.ApprovalStore, an approval minted by gatehost serve
// (POST /v1/approvals) is presented the same way.
package mcpgateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// MetaRunID is the _meta key of a tools/call result that holds the run id
// of the decision that let it through or stopped it.
const MetaRunID = "gatehost/run_id"

// MetaDecision is the _meta key of a denied tools/call result that holds
// the Decision: verdict, run_id, pipeline and findings.
const MetaDecision = "gatehost/decision"

// protocolVersions are the revisions the gateway serves downstream, newest
// first. 2026-07-28 is sessionless: there is no initialize, every request
// carries the client's revision and capabilities in its _meta, and over
// HTTP each request is served on its own (statelessHandler); the gateway
// opens its session for such a request at the request itself (begin), and
// over HTTP that session ends with the request. That revision forbids
// server-initiated requests during a call: what the gateway and its
// upstreams would ask the client then (elicitation/create, sampling,
// roots) is not sent to such a client.
var protocolVersions = []string{statelessRevision, sessionRevision, "2025-06-18", "2025-03-26", "2024-11-05"}

// statelessRevision is the first sessionless revision (SEP-2575);
// sessionRevision is the newest revision with initialize and sessions, the
// newest an upstream is spoken to: the gateway relays what an upstream
// asks the client only on a session's own connection, during the call.
const (
	statelessRevision = "2026-07-28"
	sessionRevision   = "2025-11-25"
)

// sessionless reports whether revision v is sessionless (2026-07-28 or
// later; revisions are dates, compared as text).
func sessionless(v string) bool { return v >= statelessRevision }

// Errors of New, for errors.Is.
var (
	// ErrPipeline: Options.Pipeline names no pipeline of the host, or one
	// whose subject is not a tool call.
	ErrPipeline = errors.New("mcpgateway: pipeline")
)

// Gateway is an MCP gateway over one host. It is safe for concurrent use;
// one Gateway serves any number of downstream sessions.
type Gateway struct {
	// hmu guards h, the host decisions run on, and inflight, the runs
	// begun on it: Reload replaces both, and closes the previous host once
	// its runs returned.
	hmu      sync.RWMutex
	h        *host.Host
	inflight *sync.WaitGroup
	// base is the host config New built from, with the gateway's parts
	// (Confirmer, event log, tracer, hooks) that every host it builds
	// keeps.
	base host.Config
	opts Options
	// appendRecord appends an approval record to the host's event log;
	// nil when the host has none. ownLog is the log when New opened it.
	appendRecord func(eventlog.Record) error
	// asks are the budgets of upstreams' requests of the client (budget.go).
	asks   askBudgets
	ownLog *eventlog.Log

	mu sync.Mutex // serialises catalog publication
	// routes maps an exposed tool name to its upstream; replaced whole.
	routes atomic.Pointer[map[string]route]

	// published is the baseline the catalog was last built from.
	published *baseline.Set
	// driftSeen holds the drifted definitions already recorded;
	// suspended maps "upstream\x00tool" to the baseline digest that some
	// connection of the upstream no longer listed: until that entry
	// changes (an operator's approval), the tool is denied in every
	// session.
	driftSeen sync.Map
	suspended sync.Map
	// namesMu guards the check of the config's tool names (checkNames).
	namesMu      sync.Mutex
	namesChecked bool
	namesErr     error
	// policyMu guards the check of the policy stages (checkPolicies).
	policyMu sync.Mutex
	policyV  *policyVerdict
	// health is each upstream's latest state (Upstreams).
	health healthBoard
	// table binds HTTP sessions to their principals and counts sessions.
	table *sessionTable

	approvals *approval.Approvals
	// desk holds the requests approvers decide on the approval page.
	desk     *approval.Desk
	impl     *mcp.Implementation
	sessions sync.Map // *downstream, for Close
	// pools are the connections of each shared upstream (Options.
	// Upstreams' order; none for an upstream that serves one session per
	// connection), given to sessions in turn (turn); progress routes
	// their progress notifications.
	pools    [][]*upconn
	turn     atomic.Uint64
	progress progressRouter
	// creds are each upstream's credentials (Options.Upstreams' order),
	// replaced whole by SetCredentials; exchangeNow is their clock.
	creds       atomic.Pointer[[]*upcreds]
	exchangeNow func() time.Time
	// exchanges: some upstream takes a token exchanged for the caller's,
	// so callers' bearer tokens are kept with their sessions (only then).
	exchanges bool
	// principals maps a request's principal reference to its principal
	// while the request runs (principal.go).
	principals sync.Map
	// closing tracks upstream sessions being closed in the background, so
	// that Close returns only when their processes are gone; once the
	// gateway is closed, closes run in the caller (see background).
	closeMu  sync.Mutex
	isClosed bool
	closing  sync.WaitGroup
	// stateKey signs the request states of gatehost's approval form
	// (formState); a state issued by another process is not honoured,
	// and the person is asked again.
	stateKey [32]byte
	// spent are the form states answered (formAnswered).
	spent spentNonces
	// upstreamHTTP carries every request to a URL upstream (newUpstreamHTTP).
	upstreamHTTP *http.Transport
	// kept are the upstream sessions of ended sessionless requests, for
	// their principals' next ones (kept.go).
	kept *keptSessions
}

// newUpstreamHTTP is the transport of the gateway's requests to URL
// upstreams: http.DefaultTransport's settings, with as many idle
// connections kept per upstream as the gateway's sessions may hold open
// (a session's requests and its standing GET stream).
// DefaultTransport keeps 2 per host, so with more sessions calling one
// upstream at once every request past the second closed its connection
// after the answer and the next dialled a new one (and, over https, a new
// TLS handshake): per request at 2026-07-28, where each request opens an
// upstream session of its own. Credentials are per request headers
// (credTransport), never part of a connection, so sharing connections
// across principals is what DefaultTransport did already.
//
// base is http.DefaultTransport; an embedder that replaced it with a
// RoundTripper of its own gets net/http's defaults instead of a panic. The
// idle counts are clamped so that an absurd max_sessions cannot overflow
// them.
func newUpstreamHTTP(base http.RoundTripper, maxSessions int) *http.Transport {
	t, ok := base.(*http.Transport)
	if ok {
		t = t.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConns: 100,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	// An answer's header is bounded as its body is (upbound.go).
	if t.MaxResponseHeaderBytes <= 0 || t.MaxResponseHeaderBytes > maxUpstreamHeaderBytes {
		t.MaxResponseHeaderBytes = maxUpstreamHeaderBytes
	}
	const most = 1 << 16
	t.MaxIdleConnsPerHost = 2 * min(max(maxSessions, 1), most/2)
	t.MaxIdleConns = min(max(t.MaxIdleConns, 4*t.MaxIdleConnsPerHost), 4*most)
	return t
}

// newUpconn is the connection at index idx to the upstream u, not yet
// connected.
func (g *Gateway) newUpconn(idx int, u Upstream) *upconn {
	return &upconn{g: g, idx: idx, u: u, connecting: make(chan struct{}, 1)}
}

// background runs f in a goroutine that Close waits for, or in the caller
// once Close has begun waiting (a WaitGroup must not grow while waited on).
func (g *Gateway) background(f func()) {
	g.closeMu.Lock()
	if g.isClosed {
		g.closeMu.Unlock()
		f()
		return
	}
	g.closing.Add(1)
	g.closeMu.Unlock()
	go func() {
		defer g.closing.Done()
		f()
	}()
}

// New builds a host from cfg and returns a gateway that checks every
// tools/call with its pipeline opts.Pipeline. The gateway owns the host
// (Host returns it; Close closes it): it installs its approvals
// (approval.Approvals on Options.ApprovalStore) as cfg.Confirmer, so that a person's approval is resolved against the
// catalog snapshot each run pins, and cfg.Confirmer must be nil. Approvals
// are recorded in the host's event log: cfg.EventLog, or the log New opens
// at cfg.EventLogPath (and Close closes). New connects to nothing yet:
// upstreams are started by the first session that needs them. Errors: *OptionsError
// (ErrOptions) naming the field, ErrPipeline, or host.New's error.
func New(ctx context.Context, cfg host.Config, opts Options) (*Gateway, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if cfg.Confirmer != nil {
		return nil, &OptionsError{Field: "host.Confirmer", Reason: "set by the gateway (its approvals); leave it nil"}
	}
	g := &Gateway{opts: o, table: newSessionTable(), impl: &mcp.Implementation{Name: "gatehost", Version: "mcp-gateway"},
		inflight: &sync.WaitGroup{}, upstreamHTTP: newUpstreamHTTP(http.DefaultTransport, o.MaxSessions),
		kept: newKeptSessions(o.MaxSessions, o.MaxSessionsPerPrincipal)}
	_, _ = rand.Read(g.stateKey[:])
	g.pools = make([][]*upconn, len(o.Upstreams))
	for i, u := range o.Upstreams {
		if len(u.Command) == 0 || u.SessionScoped {
			continue
		}
		for range max(u.Processes, 1) {
			g.pools[i] = append(g.pools[i], g.newUpconn(i, u))
		}
	}
	g.approvals, err = approval.New(approval.Options{Store: o.ApprovalStore, TTL: o.ApprovalTTL, Logger: o.Logger,
		Record: func(r eventlog.Record) error {
			if g.appendRecord == nil {
				return nil
			}
			return g.appendRecord(r)
		}})
	if err != nil {
		return nil, &OptionsError{Field: "approval_ttl", Reason: err.Error()}
	}
	g.desk, err = approval.NewDesk(approval.DeskOptions{Approvals: g.approvals, Rule: o.Approvers, PageURL: o.ApprovalPageURL,
		MaxPending: o.MaxPendingApprovals, Notify: o.NotifyApproval, Logger: o.Logger})
	if err != nil {
		return nil, &OptionsError{Field: "approval_page_url", Reason: err.Error()}
	}
	g.routes.Store(&map[string]route{})
	g.exchangeNow = time.Now
	creds := make([]*upcreds, len(o.Upstreams))
	for i, u := range o.Upstreams {
		creds[i] = newUpcreds(u, g.exchangeNow)
		g.exchanges = g.exchanges || u.TokenExchange != nil
	}
	g.creds.Store(&creds)
	// One writer of the log: the host records decisions, the gateway
	// approvals.
	if cfg.EventLog == nil && cfg.EventLogPath != "" {
		l, err := eventlog.Open(cfg.EventLogPath, eventlog.Options{Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("mcpgateway: event log: %w", err)
		}
		g.ownLog = l
		cfg.EventLog, cfg.EventLogPath = l, ""
	}
	if l := cfg.EventLog; l != nil {
		g.appendRecord = func(r eventlog.Record) error {
			_, err := l.Append(r)
			return err
		}
	}
	cfg.Confirmer = g.approvals
	g.base = cfg
	h, err := host.New(ctx, cfg)
	if err == nil {
		g.h = h
		err = checkPipeline(h, o.Pipeline)
	}
	if err != nil {
		_ = g.closeHost()
		return nil, err
	}
	return g, nil
}

// checkPipeline refuses a pipeline h lacks or whose subject is not a tool
// call.
func checkPipeline(h *host.Host, name string) error {
	for _, p := range h.Pipelines() {
		if p.Name == name {
			if p.Subject != abi.SubjectToolCall {
				return fmt.Errorf("%w %q checks %s subjects; the gateway needs a tool_call pipeline", ErrPipeline, name, p.Subject)
			}
			return nil
		}
	}
	return fmt.Errorf("%w %q: no such pipeline", ErrPipeline, name)
}

// Options returns the gateway's options, defaults filled in.
func (g *Gateway) Options() Options { return g.opts }

// Host is the host the gateway decides with, for what an embedder does
// besides (sessions, catalog, its own checks). It is closed by Close.
func (g *Gateway) Host() *host.Host {
	g.hmu.RLock()
	defer g.hmu.RUnlock()
	return g.h
}

// acquire returns the host a run starts on and the function that says the
// run returned: Reload closes a replaced host only after that.
func (g *Gateway) acquire() (*host.Host, func()) {
	g.hmu.RLock()
	defer g.hmu.RUnlock()
	g.inflight.Add(1)
	return g.h, g.inflight.Done
}

// Reload replaces the host the gateway decides with by one built from
// cfg — the pipelines, plugins and settings of a reloaded config —
// keeping what lives as long as the gateway: its catalog (the trust
// baseline's tools), session store, event log, approvals, tracer, hooks
// and logger (cfg's own are not used). Calls in flight finish on the host
// they started on, which is closed once they returned; calls that start
// after see the new one. A cfg that does not build, or whose
// Options.Pipeline is missing or not a tool_call pipeline, changes
// nothing and is returned. The config's tool names are checked again with
// the next session that lists them; its policy stages at once, against
// the catalog kept (checkPolicies). retired, when set, is called once the
// previous host is closed: what its config held (domain sources) can go.
func (g *Gateway) Reload(ctx context.Context, cfg host.Config, retired func()) error {
	cur := g.Host()
	cfg.Catalog, cfg.Sessions = cur.Catalog(), cur.Sessions()
	cfg.EventLog, cfg.EventLogPath = g.base.EventLog, ""
	cfg.Confirmer, cfg.TracerProvider, cfg.Hooks, cfg.Logger = g.approvals, g.base.TracerProvider, g.base.Hooks, g.base.Logger
	h, err := host.New(ctx, cfg)
	if err != nil {
		return err
	}
	if err := checkPipeline(h, g.opts.Pipeline); err != nil {
		_ = h.Close(context.Background())
		return err
	}
	g.hmu.Lock()
	old, runs := g.h, g.inflight
	g.h, g.inflight = h, &sync.WaitGroup{}
	g.hmu.Unlock()
	g.namesMu.Lock()
	g.namesChecked, g.namesErr = false, nil
	g.namesMu.Unlock()
	// The policy stages are checked against the catalog the gateway
	// keeps at once, so that /readyz reports the new config's verdict.
	g.mu.Lock()
	pub := g.published
	g.mu.Unlock()
	if pub != nil && g.baselineCovers(pub) {
		_ = g.checkPolicies()
	}
	g.background(func() {
		runs.Wait()
		if err := old.Close(context.Background()); err != nil {
			g.opts.Logger.Warn("mcp gateway: closing the previous config's host", "err", err)
		}
		if retired != nil {
			retired()
		}
	})
	return nil
}

// Handler returns the Streamable HTTP endpoint (MCP 2025-11-25 transport,
// Mcp-Session-Id sessions). Mount it where clients should connect, behind
// whatever authentication the embedder requires. A session idle for
// Options.SessionIdleTimeout is closed with its upstreams.
func (g *Gateway) Handler() http.Handler {
	probe := g.newServer(nil)
	sessionful := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// The SDK asks for a server on every request (to check the
		// protocol version); only a request without a session starts one.
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			return g.newSession().server
		}
		return probe
	}, &mcp.StreamableHTTPOptions{Logger: sdkLogger(g.opts.Logger), SessionTimeout: g.opts.SessionIdleTimeout})
	stateless := g.statelessHandler(probe)
	return g.withPrincipals(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request at a sessionless revision names it in its
		// MCP-Protocol-Version header (the SDK refuses one whose header
		// and _meta differ); the others are served with sessions.
		if sessionless(r.Header.Get("Mcp-Protocol-Version")) {
			stateless.ServeHTTP(w, r)
			return
		}
		sessionful.ServeHTTP(w, r)
	}))
}

// ServeTransport serves one downstream session over t (for example
// &mcp.StdioTransport{}) until the client disconnects or ctx ends; it then
// closes the session's upstreams.
func (g *Gateway) ServeTransport(ctx context.Context, t mcp.Transport) error {
	d := g.newSession()
	ss, err := d.server.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcpgateway: %w", err)
	}
	stop := context.AfterFunc(ctx, func() {
		d.drop()
		_ = ss.Close()
	})
	defer stop()
	err = ss.Wait()
	d.close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Close closes every open session (client connection, upstreams), waits
// until the upstreams' processes have exited (a stdio server that ignores
// its closed stdin is terminated after a grace period of 2s), then closes
// the host and the event log New opened.
func (g *Gateway) Close() error {
	g.kept.closeAll() // first: a session closed below keeps nothing
	g.sessions.Range(func(k, _ any) bool {
		d := k.(*downstream)
		d.drop()
		if ss := d.serverSession(); ss != nil {
			_ = ss.Close()
		}
		d.close()
		return true
	})
	for _, pool := range g.pools {
		for _, c := range pool {
			c.close()
		}
	}
	g.closeMu.Lock()
	g.isClosed = true
	g.closeMu.Unlock()
	g.closing.Wait()
	// Every connection's handlers have returned (the SDK's Close waits
	// for them): what the budgets refused is recorded before the log
	// closes.
	g.asks.recordAll()
	g.upstreamHTTP.CloseIdleConnections()
	return g.closeHost()
}

// closeHost closes the host, then the log New opened (after the host's
// last record).
func (g *Gateway) closeHost() error {
	var err error
	if h := g.Host(); h != nil {
		err = h.Close(context.Background())
	}
	if g.ownLog != nil {
		err = errors.Join(err, g.ownLog.Close())
	}
	return err
}

// call is one tools/call as the gateway decides on it.
type call struct {
	session string
	// counterSession keys the session's call counters when the session
	// is shorter than its caller's (host.RunOptions.CounterSession).
	counterSession string
	name           string
	args           json.RawMessage
	// params are the tools/call params as the host reads them
	// (subject.FormatMCP); the native subject is the host's conversion.
	params []byte
	// token, when set, is the id of a person's approval of this very call,
	// resolved by the gateway's Confirmer against the run's snapshot.
	token string
	// principal is the session's caller, fixed at initialize; nil is
	// anonymous (stdio, or no auth).
	principal *abi.Principal
	// refusals are the edge's own reasons to refuse the call (the trust
	// baseline), recorded with the decision.
	refusals []abi.Finding
	// upstreamName is the tool's name at its upstream, and seen the
	// upstream connection's listing the refusals were computed against.
	upstreamName string
	seen         *listing
}

// decide runs the pipeline on one tools/call. It is the gateway's only way
// into the host. An error without a Decision means the call could not be
// checked at all: a bad subject, or an approval whose use could not be
// recorded (host.ErrConfirmation).
func (g *Gateway) decide(ctx context.Context, c call) (*host.Decision, error) {
	h, done := g.acquire()
	defer done()
	return h.Check(ctx, g.opts.Pipeline, c.params, host.RunOptions{
		Format: subject.FormatMCP, Session: c.session, CounterSession: c.counterSession, ConfirmationToken: c.token, Principal: c.principal, Refusals: c.refusals})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Desk returns the gateway's approval desk: the requests approvers decide
// on the approval page (package approval/page mounts it).
func (g *Gateway) Desk() *approval.Desk { return g.desk }
