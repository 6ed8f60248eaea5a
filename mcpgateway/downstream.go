package mcpgateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/session"
)

// downstream is one client session: its MCP server, its upstream
// connections and its gatehost session.
type downstream struct {
	g      *Gateway
	server *mcp.Server
	// ups are read through conns.
	ups      []*upconn
	pickOnce sync.Once

	mu sync.Mutex
	id string // gatehost session id; "" until initialize
	// created: this session created its gatehost session in the store,
	// so its end removes it. A session that resumes another's (roundtrip.go)
	// and could not create it (it exists, in use) removes nothing.
	created atomic.Bool
	ss      *mcp.ServerSession
	caps    *mcp.ClientCapabilities
	closed  atomic.Bool
	// principal is the session's caller, taken once at initialize; key
	// is its principalKey, held in the gateway's session table while the
	// session lives (reserved).
	principal *abi.Principal
	key       string
	reserved  bool
	sid       string // the transport's session id (HTTP), bound to key
	// subject is the bearer token of the caller's latest request (same
	// principal: withPrincipals), the subject token of token exchange;
	// nil when the caller presented none. Kept in memory only.
	subject atomic.Pointer[string]
	version string // the protocol revision negotiated with the client
	// beginMu serialises begin (a sessionless session's first requests
	// may come together); beginErr is why it could not begin, offered and
	// instructions what it offers the client (server/discover).
	// perRequest: the session is one HTTP request (statelessHandler).
	perRequest bool
	// keptKey, set at begin for a perRequest session of an authenticated
	// principal, is the key its upstream connections are kept under when
	// it ends, and were taken by (kept.go). Guarded by mu.
	keptKey      string
	beginMu      sync.Mutex
	beginErr     error
	offered      *mcp.ServerCapabilities
	instructions string
	// closeOnce makes close run once, and every caller of close wait for
	// it: Gateway.Close must not return while the session is still being
	// removed from the store by the session's own ending.
	closeOnce sync.Once

	// gone is closed when the client connection is being dropped, so that
	// what waits on the client (an elicitation) stops waiting: the SDK
	// does not end a request to a client whose connection it closes.
	gone     chan struct{}
	goneOnce sync.Once

	// placeholders toggle to make the SDK send list_changed downstream.
	phMu sync.Mutex
	ph   map[string]bool
}

// newServer builds an MCP server whose every method goes through d (nil d:
// a server that only answers the SDK's protocol-version probe).
func (g *Gateway) newServer(d *downstream) *mcp.Server {
	opts := &mcp.ServerOptions{
		Logger:                    sdkLogger(g.opts.Logger),
		SupportedProtocolVersions: protocolVersions,
		HasTools:                  true,
		// What a client learns of the capabilities is the upstreams'
		// (initialize and server/discover are answered by the gateway);
		// these are what the SDK agrees to on a subscriptions/listen
		// stream (2026-07-28), whose list-changed notifications the
		// gateway sends when an upstream announces a change.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	}
	if d != nil {
		// Subscriptions go upstream; the SDK keeps track of them so that
		// Server.ResourceUpdated reaches this session.
		// A shared upstream's subscriptions would be every session's
		// (one unsubscribes them all, and the updates cannot be told
		// apart): only a session's own connections subscribe.
		opts.SubscribeHandler = func(ctx context.Context, r *mcp.SubscribeRequest) error {
			return d.eachOwnUpstream(ctx, "resources/subscribe", func(cs *mcp.ClientSession) error { return cs.Subscribe(ctx, r.Params) })
		}
		opts.UnsubscribeHandler = func(ctx context.Context, r *mcp.UnsubscribeRequest) error {
			return d.eachOwnUpstream(ctx, "resources/unsubscribe", func(cs *mcp.ClientSession) error { return cs.Unsubscribe(ctx, r.Params) })
		}
	}
	s := mcp.NewServer(g.impl, opts)
	if d != nil {
		s.AddReceivingMiddleware(d.fromClient)
	}
	return s
}

func (g *Gateway) newSession() *downstream { return g.newDownstream(true) }

// newDownstream builds a session. With shared, a shared upstream is one
// of its connections (Gateway.pools), given in turn; otherwise, and for
// every upstream that serves one session, the session gets a connection
// of its own.
func (g *Gateway) newDownstream(shared bool) *downstream {
	d := &downstream{g: g, ph: map[string]bool{}, gone: make(chan struct{})}
	for i, u := range g.opts.Upstreams {
		if shared && len(g.pools[i]) > 0 {
			d.ups = append(d.ups, nil) // chosen at the first use (conns)
			continue
		}
		c := g.newUpconn(i, u)
		c.owner.Store(d)
		d.ups = append(d.ups, c)
	}
	d.server = g.newServer(d)
	// The session is registered by initialize: a request that never
	// initializes leaves nothing behind.
	return d
}

// conns are the session's connections, one per upstream (Options.
// Upstreams' order). A shared upstream's is one of its pool, given in
// turn at the session's first use: the SDK builds a server for requests
// that start no session (a protocol-version probe), and those take no
// turn. A sessionless session (MCP 2026-07-28 over HTTP: one request) is
// given the process of its principal instead, so that a caller's requests
// meet the state its earlier ones left in a process.
func (d *downstream) conns() []*upconn {
	d.pickOnce.Do(func() {
		d.mu.Lock()
		key, version := d.key, d.version
		d.mu.Unlock()
		var turn uint64
		if sessionless(version) && key != "" {
			h := fnv.New64a()
			h.Write([]byte(key))
			turn = h.Sum64()
		} else {
			turn = d.g.turn.Add(1) - 1
		}
		for i, c := range d.ups {
			if c == nil {
				pool := d.g.pools[i]
				d.ups[i] = pool[turn%uint64(len(pool))]
			}
		}
	})
	return d.ups
}

// drop marks the client connection as going away (see gone).
func (d *downstream) drop() { d.goneOnce.Do(func() { close(d.gone) }) }

// close ends the session: its upstreams are closed and its gatehost
// session is removed from the store (the decisions stay in the event log).
func (d *downstream) close() {
	d.drop()
	d.closeOnce.Do(d.doClose)
}

func (d *downstream) doClose() {
	d.closed.Store(true)
	d.mu.Lock()
	kept := d.keptKey
	d.mu.Unlock()
	for _, c := range d.conns() {
		// A shared connection serves on (Close ends it); a sessionless
		// request's may serve its principal's next one (kept.go).
		if !c.shared() && !d.g.kept.put(kept, c) {
			c.close()
		}
	}
	if id := d.sessionID(); id != "" && d.created.Load() {
		if _, err := d.g.Host().Sessions().Update(context.Background(), id, func(*session.Set) (*session.Set, error) { return nil, nil }); err != nil {
			d.g.opts.Logger.Warn("mcp gateway: session not removed from the store", "session", id, "error", err)
		}
	}
	d.mu.Lock()
	reserved, key, sid := d.reserved, d.key, d.sid
	d.reserved = false
	d.mu.Unlock()
	if reserved {
		d.g.table.release(key)
		d.g.table.unbind(sid)
	}
	d.g.sessions.Delete(d)
}

// protocolVersion is the revision the session speaks with its client, or
// the newest with sessions before initialize.
func (d *downstream) protocolVersion() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return cmp.Or(d.version, sessionRevision)
}

func (d *downstream) serverSession() *mcp.ServerSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ss
}

func (d *downstream) sessionID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.id
}

// clientCapabilities are the downstream client's, offered upstream as the
// gateway's own.
func (d *downstream) clientCapabilities() *mcp.ClientCapabilities {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.caps == nil {
		return &mcp.ClientCapabilities{}
	}
	c := *d.caps
	return &c
}

// fromClient is the server's receiving middleware: the gateway's handling
// of every method the client sends.
//
// The handling runs without the revision the SDK's HTTP handler keeps in
// the request's context (withoutClientRevision): what the gateway sends
// upstream is at the upstream session's own revision.
func (d *downstream) fromClient(next mcp.MethodHandler) mcp.MethodHandler {
	h := withCodes(d.fromClientUncoded(next))
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if d.perRequest {
			// The session is this request: it ends before the answer is
			// sent, so that the session caps count the requests in
			// flight and the client's next request finds the slot free.
			defer func() {
				if d.sessionID() != "" {
					d.close()
				}
			}()
		}
		sessionless := requestRevision(req) != ""
		res, err := h(withoutClientRevision{ctx}, method, req)
		if err != nil || !sessionless || res == nil {
			return res, err
		}
		return completeResult(res)
	}
}

// withCodes gives every error h returns a JSON-RPC code (wireError).
func withCodes(h mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := h(ctx, method, req)
		return res, wireError(err)
	}
}

// wireError is err as the JSON-RPC error the peer gets: the
// *jsonrpc.Error in its chain when that carries a code (such as an
// upstream's own, passed through with its message and data), otherwise
// an internal error (-32603) with its text. The SDK would send an error
// without a code as code 0, which is no JSON-RPC code.
func wireError(err error) error {
	var je *jsonrpc.Error
	if err == nil {
		return nil
	}
	if errors.As(err, &je) && je.Code != 0 {
		// The coded error itself, not the SDK client's wrapping of an
		// upstream's ("calling …: "). Its data passes only for the code
		// whose data names what the client lacks (-32021): other data
		// is not checked by the gateway (-32042's carries URL-mode
		// elicitations a client shows the person).
		if len(je.Data) > 0 && je.Code != mcp.CodeMissingRequiredClientCapabilities {
			return &jsonrpc.Error{Code: je.Code, Message: je.Message}
		}
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (d *downstream) fromClientUncoded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if tok, ok := d.g.callerToken(req); ok {
			d.subject.Store(&tok)
		}
		if v := requestRevision(req); v != "" || d.isSessionless() {
			ctx = withRoundTrip(ctx, req)
			if res, done, err := d.sessionlessRequest(ctx, method, req, v, next); done {
				return res, err
			}
		}
		switch method {
		case "initialize":
			return d.initialize(ctx, method, req, next)
		case "tools/list":
			return d.listTools(ctx)
		case "tools/call":
			return d.callTool(ctx, req)
		case "ping", "notifications/initialized", "notifications/cancelled",
			"resources/subscribe", "resources/unsubscribe":
			// Answered by the SDK: ping locally, cancellation cancels
			// the handler's context (and so the forwarded request),
			// subscriptions through SubscribeHandler.
			return next(ctx, method, req)
		case "logging/setLevel":
			// The SDK keeps the level to filter what it forwards; the
			// upstreams get it too.
			// (A shared upstream's log messages are relayed to no
			// session, and one session's level is not every session's.)
			p := req.GetParams().(*mcp.SetLoggingLevelParams)
			if err := d.eachOwnUpstream(ctx, "", func(cs *mcp.ClientSession) error { return cs.SetLoggingLevel(ctx, p) }); err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		case "notifications/roots/list_changed":
			for _, c := range d.conns() {
				// The upstream asks roots/list again; the gateway's
				// client forwards it to this client. A shared upstream
				// is offered no roots (fromUpstream).
				if !c.shared() {
					c.rootsChanged()
				}
			}
			return nil, nil
		case "notifications/progress":
			return nil, nil // progress of client-side work has no upstream request to attach to
		}
		return d.forward(ctx, method, req)
	}
}

// errReinitialize answers a second initialize on a live session: the
// session stays as it was.
var errReinitialize = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "gatehost mcp gateway: the session is already initialized"}

// initialize takes the session's principal (once: every later request
// must present the same one), takes a slot under the session caps, lets
// the SDK record the client's parameters, connects the upstreams with the
// client's capabilities, lists their tools, creates the gatehost session,
// and answers with the upstreams' capabilities. An upstream that cannot be
// started or listed is left out (logged); its tools are unavailable until
// it answers, and the other upstreams serve on.
func (d *downstream) initialize(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	p := req.GetParams().(*mcp.InitializeParams)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	principal, _ := d.g.requestPrincipal(req)
	key := principalKey(principal)
	d.mu.Lock()
	if d.id != "" || d.reserved {
		d.mu.Unlock()
		return nil, errReinitialize
	}
	if err := d.g.table.reserve(key, d.g.opts.MaxSessions, d.g.opts.MaxSessionsPerPrincipal); err != nil {
		d.mu.Unlock()
		d.g.opts.Logger.Warn("mcp gateway: session refused", "principal", principalLabel(principal), "reason", err)
		d.g.recordEdge(kindSessionRefused, map[string]any{"reason": err.Error(), "principal": principalLabel(principal)})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gatehost mcp gateway: " + err.Error()}
	}
	id := "mcp-" + randomHex(16)
	if ss != nil && ss.ID() != "" && len(ss.ID()) <= 100 && session.ValidID("mcp-"+ss.ID()) {
		id = "mcp-" + ss.ID()
	}
	d.reserved, d.key, d.principal = true, key, principal
	if ss != nil {
		d.sid = ss.ID()
	}
	d.ss, d.id, d.caps = ss, id, p.Capabilities
	// As the SDK answers: the client's revision when it has sessions and
	// is served, otherwise the newest with sessions (initialize is no
	// part of a sessionless revision).
	d.version = sessionRevision
	if slices.Contains(protocolVersions, p.ProtocolVersion) && !sessionless(p.ProtocolVersion) {
		d.version = p.ProtocolVersion
	}
	d.mu.Unlock()
	d.g.table.bind(d.sid, key)
	d.g.sessions.Store(d, struct{}{})
	if ss != nil {
		// An HTTP session ends when the client deletes it or it idles
		// out; its upstreams end with it.
		go func() {
			_ = ss.Wait()
			d.close()
		}()
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	ir := res.(*mcp.InitializeResult)
	// The server info is gatehost's own (the SDK's answer): an
	// upstream's is not pinned, and the client speaks to gatehost.
	caps, instructions, err := d.connectUpstreams(ctx)
	if err != nil {
		return nil, err
	}
	ir.Capabilities = caps
	ir.Instructions = instructions
	return ir, nil
}

// connectUpstreams connects the session's upstreams, checks the config's
// tool names, creates the gatehost session, and returns what the gateway
// offers the client: the upstreams' capabilities merged
// (mergeCapabilities) and their instructions as the trust baseline pins
// them, each labelled with its upstream's name (pinnedInstructions,
// labelInstructions).
func (d *downstream) connectUpstreams(ctx context.Context) (*mcp.ServerCapabilities, string, error) {
	id := d.sessionID()
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	var instructions []string
	for _, c := range d.conns() {
		cs, err := c.session(ctx)
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream unavailable at initialize; its tools are left out until it answers",
				"upstream", c.u.Name, "session", id, "error", err)
			continue
		}
		r := cs.InitializeResult()
		if r == nil {
			continue
		}
		mergeCapabilities(caps, r.Capabilities, c.shared())
		text, err := d.g.pinnedInstructions(ctx, c, cs)
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream's instructions left out", "upstream", c.u.Name, "session", id, "error", err)
		}
		if text != "" {
			instructions = append(instructions, labelInstructions(c.u.Name, text))
		}
	}
	if err := d.g.checkNames(d); err != nil {
		return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gatehost mcp gateway: " + err.Error()}
	}
	if err := d.g.createSession(ctx, id); err != nil {
		return nil, "", err
	}
	d.created.Store(true)
	return caps, strings.Join(instructions, "\n\n"), nil
}

// mergeCapabilities adds what an upstream offers, except tools, which the
// gateway always offers with list_changed, and for a shared upstream
// logging and resource subscriptions, which are not relayed from it.
func mergeCapabilities(dst, src *mcp.ServerCapabilities, shared bool) {
	if src == nil {
		return
	}
	if src.Completions != nil {
		dst.Completions = src.Completions
	}
	if src.Logging != nil && !shared {
		dst.Logging = src.Logging
	}
	if src.Prompts != nil {
		if dst.Prompts == nil {
			dst.Prompts = &mcp.PromptCapabilities{}
		}
		dst.Prompts.ListChanged = dst.Prompts.ListChanged || src.Prompts.ListChanged
	}
	if src.Resources != nil {
		if dst.Resources == nil {
			dst.Resources = &mcp.ResourceCapabilities{}
		}
		dst.Resources.ListChanged = dst.Resources.ListChanged || src.Resources.ListChanged
		dst.Resources.Subscribe = dst.Resources.Subscribe || (src.Resources.Subscribe && !shared)
	}
}

// eachUpstream runs f on every upstream session; the first error wins.
func (d *downstream) eachUpstream(ctx context.Context, f func(*mcp.ClientSession) error) error {
	var errs []error
	for _, c := range d.conns() {
		cs, err := c.session(ctx)
		if err == nil {
			err = f(cs)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// eachOwnUpstream runs f on every upstream session that serves this
// session alone (not a shared upstream's); the first error wins. With
// none, method (when not "") is refused: a shared upstream does not take
// it.
func (d *downstream) eachOwnUpstream(ctx context.Context, method string, f func(*mcp.ClientSession) error) error {
	var errs []error
	own := 0
	for _, c := range d.conns() {
		if c.shared() {
			continue
		}
		own++
		cs, err := c.session(ctx)
		if err == nil {
			err = f(cs)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if own == 0 && method != "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("gatehost mcp gateway: %s is not taken by a shared upstream (it would be every session's); an upstream configured session_scoped takes it", method)}
	}
	return errors.Join(errs...)
}

func (c *upconn) current() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs
}

// forward sends a method other than tools/* to the upstream that serves
// it and returns its answer unchanged. With several upstreams, list
// methods merge every upstream's (all pages, within the listing bounds)
// and the others go to the one upstream that lists the named item.
func (d *downstream) forward(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	switch p := req.GetParams().(type) {
	case *mcp.ListResourcesParams:
		if len(d.conns()) == 1 {
			return passOn(ctx, d.conns()[0], func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.ListResources(ctx, p)
				return err
			})
		}
		all, err := mergeAll(ctx, d, "resources/list", "resources", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.Resource, string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		})
		return mergedResult("resources", all, err)
	case *mcp.ListResourceTemplatesParams:
		if len(d.conns()) == 1 {
			return passOn(ctx, d.conns()[0], func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.ListResourceTemplates(ctx, p)
				return err
			})
		}
		all, err := mergeAll(ctx, d, "resources/templates/list", "resourceTemplates", func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		})
		return mergedResult("resourceTemplates", all, err)
	case *mcp.ListPromptsParams:
		if len(d.conns()) == 1 {
			return passOn(ctx, d.conns()[0], func(ctx context.Context, cs *mcp.ClientSession) error {
				_, err := cs.ListPrompts(ctx, p)
				return err
			})
		}
		return d.listPrompts(ctx)
	case *mcp.ReadResourceParams:
		return d.owned(ctx, ownerResource(p.URI), func(up *upconn, cs *mcp.ClientSession) (mcp.Result, error) {
			return askingUpstream(ctx, d, up, &p.InputResponses, &p.RequestState, func() (*mcp.ReadResourceResult, error) { return cs.ReadResource(ctx, p) })
		})
	case *mcp.GetPromptParams:
		return d.owned(ctx, ownerPrompt(p.Name), func(up *upconn, cs *mcp.ClientSession) (mcp.Result, error) {
			return askingUpstream(ctx, d, up, &p.InputResponses, &p.RequestState, func() (*mcp.GetPromptResult, error) { return cs.GetPrompt(ctx, p) })
		})
	case *mcp.CompleteParams:
		var own ownerTest
		switch {
		case p.Ref == nil:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "gatehost mcp gateway: completion/complete without ref"}
		case p.Ref.Type == "ref/prompt":
			own = ownerPrompt(p.Ref.Name)
		default:
			own = ownerResource(p.Ref.URI)
		}
		return d.owned(ctx, own, func(_ *upconn, cs *mcp.ClientSession) (mcp.Result, error) { return cs.Complete(ctx, p) })
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("gatehost mcp gateway: method %q is not forwarded", method)}
}

// ownerTest reports whether an upstream session lists an item, reading
// its lists within the listing bounds.
type ownerTest func(ctx context.Context, o Options, cs *mcp.ClientSession) (bool, error)

// ownerResource: the upstream lists the URI as a resource, or one of its
// resource templates (RFC 6570) matches it.
func ownerResource(uri string) ownerTest {
	return func(ctx context.Context, o Options, cs *mcp.ClientSession) (bool, error) {
		res, err := listAll(ctx, o, "resources/list", func(cursor string) ([]*mcp.Resource, string, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.Resources, r.NextCursor, nil
		})
		if err != nil {
			return false, err
		}
		for _, r := range res {
			if r != nil && r.URI == uri {
				return true, nil
			}
		}
		tpls, err := listAll(ctx, o, "resources/templates/list", func(cursor string) ([]*mcp.ResourceTemplate, string, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return r.ResourceTemplates, r.NextCursor, nil
		})
		if err != nil {
			return false, err
		}
		for _, t := range tpls {
			if t != nil && (t.URITemplate == uri || templateMatches(t.URITemplate, uri)) {
				return true, nil
			}
		}
		return false, nil
	}
}

// ownerPrompt: the upstream lists a prompt of that name. A prompt whose
// name a person could take for another upstream's (errLookalike), or that
// shows invisible or control characters, is served by none.
func ownerPrompt(name string) ownerTest {
	return func(ctx context.Context, o Options, cs *mcp.ClientSession) (bool, error) {
		if badToolName(name) != "" {
			return false, errLookalike
		}
		ps, err := listPrompts(ctx, o, cs)
		if err != nil {
			return false, err
		}
		owns, alike := false, false
		for _, w := range ps {
			switch p := w.v; {
			case p == nil:
			case p.Name == name:
				owns = true
			case nameSkeleton(p.Name) == nameSkeleton(name):
				alike = true
			}
		}
		if alike {
			return owns, errLookalike
		}
		return owns, nil
	}
}

// errLookalike: a prompt's name could be taken for another's.
var errLookalike = errors.New("a prompt's name could be taken for another's")

func listPrompts(ctx context.Context, o Options, cs *mcp.ClientSession) ([]wire[*mcp.Prompt], error) {
	ps, _, err := listWire(ctx, o, "prompts/list", "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Prompts, r.NextCursor, nil
	})
	return ps, err
}

// listPrompts merges the upstreams' prompts, leaving out a name with
// invisible or control characters and every prompt whose name a person
// could take for another upstream's (the tools' skeleton rule): a prompt
// is chosen by its name alone, so look-alikes are not offered at all.
// Each prompt is passed on as its upstream sent it.
func (d *downstream) listPrompts(ctx context.Context) (mcp.Result, error) {
	type item struct {
		up int
		p  wire[*mcp.Prompt]
	}
	var items []item
	ups := map[string]map[int]bool{}
	for i, c := range d.conns() {
		cs, err := c.session(ctx)
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream unavailable; its prompts are left out", "upstream", c.u.Name, "error", err)
			continue
		}
		ps, err := listPrompts(ctx, d.g.opts, cs)
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream prompts not listed; left out", "upstream", c.u.Name, "error", err)
			continue
		}
		for _, w := range ps {
			p := w.v
			if p == nil {
				continue
			}
			if why := badToolName(p.Name); why != "" {
				d.g.opts.Logger.Warn("mcp gateway: upstream prompt not exposed", "upstream", c.u.Name, "prompt", fmt.Sprintf("%q", p.Name), "reason", why)
				continue
			}
			items = append(items, item{i, w})
			sk := nameSkeleton(p.Name)
			if ups[sk] == nil {
				ups[sk] = map[int]bool{}
			}
			ups[sk][i] = true
		}
	}
	var out []wire[*mcp.Prompt]
	for _, it := range items {
		if len(ups[nameSkeleton(it.p.v.Name)]) > 1 {
			d.g.opts.Logger.Warn("mcp gateway: prompt names of several upstreams could be taken for each other; not exposed", "upstream", d.conns()[it.up].u.Name, "prompt", it.p.v.Name)
			continue
		}
		out = append(out, it.p)
	}
	return listResult("prompts", out, nil)
}

// owned sends a request about one item (a resource, a prompt, a
// completion's reference) to the one upstream that lists it. With a single
// upstream that is the upstream; with several, an item no upstream lists,
// or that more than one lists, is an error: never "the first upstream
// that answers", which lets any upstream answer for another's items.
func (d *downstream) owned(ctx context.Context, own ownerTest, f func(*upconn, *mcp.ClientSession) (mcp.Result, error)) (mcp.Result, error) {
	if len(d.conns()) == 1 {
		c := d.conns()[0]
		cs, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		return f(c, cs)
	}
	var owner *mcp.ClientSession
	var ownerConn *upconn
	var owners []string
	for _, c := range d.conns() {
		cs, err := c.session(ctx)
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream unavailable; its items cannot be reached", "upstream", c.u.Name, "error", err)
			continue
		}
		ok, err := own(ctx, d.g.opts, cs)
		if errors.Is(err, errLookalike) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "gatehost mcp gateway: this name could be taken for an item of another upstream (or shows invisible characters); it is not sent"}
		}
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream list failed; its items cannot be reached", "upstream", c.u.Name, "error", err)
			continue
		}
		if ok {
			owner, ownerConn = cs, c
			owners = append(owners, c.u.Name)
		}
	}
	switch len(owners) {
	case 0:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "gatehost mcp gateway: no upstream lists this item"}
	case 1:
		return f(ownerConn, owner)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("gatehost mcp gateway: more than one upstream lists this item (%s); it is not sent to either", strings.Join(owners, ", "))}
}

// templateMatches reports whether uri is an expansion of an RFC 6570
// URI template, read conservatively: literal text must match exactly, a
// simple {var} expansion matches text without '/', '?' or '#', and
// {+var}, {#var}, {/var}, {?var} and the like match any text.
func templateMatches(tpl, uri string) bool {
	var re strings.Builder
	re.WriteString("^")
	for tpl != "" {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			re.WriteString(regexp.QuoteMeta(tpl))
			break
		}
		re.WriteString(regexp.QuoteMeta(tpl[:i]))
		j := strings.IndexByte(tpl[i:], '}')
		if j < 0 {
			return false
		}
		expr := tpl[i+1 : i+j]
		if expr != "" && strings.ContainsRune("+#./;?&", rune(expr[0])) {
			re.WriteString(".*")
		} else {
			re.WriteString("[^/?#]*")
		}
		tpl = tpl[i+j+1:]
	}
	re.WriteString("$")
	m, err := regexp.MatchString(re.String(), uri)
	return err == nil && m
}

// mergeAll reads every page of one list from every upstream, in upstream
// order, each within the listing bounds: several upstreams answer a list
// method together. Items are kept as each upstream sent them; key is the
// list result's member that holds them.
func mergeAll[T any](ctx context.Context, d *downstream, method, key string, page func(ctx context.Context, cs *mcp.ClientSession, cursor string) ([]T, string, error)) ([]wire[T], error) {
	all := []wire[T]{}
	err := d.eachUpstream(ctx, func(cs *mcp.ClientSession) error {
		items, _, err := listWire(ctx, d.g.opts, method, key, func(ctx context.Context, cursor string) ([]T, string, error) { return page(ctx, cs, cursor) })
		all = append(all, items...)
		return err
	})
	return all, err
}

// mergedResult answers a list method several upstreams answered
// together: their items, and no member of any one's result.
func mergedResult[T any](key string, items []wire[T], err error) (mcp.Result, error) {
	if err != nil {
		return nil, err
	}
	return listResult(key, items, nil)
}

// fromUpstream is the upstream clients' receiving middleware: what the
// upstream sends passes asked (budget.go) first; requests the upstream
// makes of the client go to the downstream client, recorded in the event
// log. An elicitation is labelled with the upstream it comes
// from, so that it cannot pass for gatehost's own approval prompt; one that
// imitates that prompt is refused and the upstream disconnected.
func (c *upconn) fromUpstream(next mcp.MethodHandler) mcp.MethodHandler {
	if c.shared() {
		return withCodes(c.fromSharedUpstream(next))
	}
	return withCodes(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if err := c.asked(method); err != nil {
			return nil, err
		}
		if !isAsk(method) {
			return next(ctx, method, req) // ping, notifications
		}
		d := c.owner.Load() // a kept connection changes owner (kept.go)
		ss := d.serverSession()
		if ss == nil {
			return nil, fmt.Errorf("gatehost mcp gateway: no client session for %s", method)
		}
		rec := map[string]any{"upstream": c.u.Name, "method": method, "session": d.sessionID()}
		if ep, ok := req.GetParams().(*mcp.ElicitParams); ok && imitatesApproval(ep) {
			return c.cutOff(ctx, rec)
		}
		if d.isSessionless() {
			// The client's revision forbids a request to it during a
			// call, and the gateway carries none of an upstream's
			// into a call's answer.
			if method == "roots/list" {
				rec["outcome"] = "answered: no roots (sessionless client)"
				d.g.recordEdge(kindUpstreamRequest, rec)
				return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
			}
			rec["outcome"] = "refused: the client's revision takes no request during a call"
			d.g.recordEdge(kindUpstreamRequest, rec)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("gatehost mcp gateway: %s is refused: the client's protocol revision takes no request during a call", method)}
		}
		rec["outcome"] = "relayed"
		if err := d.g.recordEdge(kindUpstreamRequest, rec); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("gatehost mcp gateway: %s is refused: %v", method, errNotRecorded)}
		}
		rctx := c.calls.relate(ctx, d)
		switch p := req.GetParams().(type) {
		case *mcp.ListRootsParams:
			return ss.ListRoots(rctx, p)
		case *mcp.CreateMessageWithToolsParams:
			return ss.CreateMessageWithTools(rctx, p)
		case *mcp.CreateMessageParams:
			return ss.CreateMessage(rctx, p)
		case *mcp.ElicitParams:
			labelled := *p
			labelled.Message = upstreamLabel(c.u.Name) + p.Message
			return ss.Elicit(rctx, &labelled)
		}
		return next(ctx, method, req)
	})
}

// fromSharedUpstream is a shared connection's receiving middleware. Over
// stdio nothing ties a request the upstream makes of the client to one of
// the sessions the process serves (a call of one, a call of another, or
// none), and guessing would show one session's question to another's
// person or hand it another's answer: roots/list is answered with no
// roots, and sampling and elicitation are refused; each is recorded. One
// that imitates gatehost's approval prompt is treated as on a session's
// connection: refused unanswered, and the upstream disconnected.
func (c *upconn) fromSharedUpstream(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if err := c.asked(method); err != nil {
			return nil, err
		}
		if !isAsk(method) {
			return next(ctx, method, req) // ping, notifications
		}
		rec := map[string]any{"upstream": c.u.Name, "method": method, "shared": true}
		if ep, ok := req.GetParams().(*mcp.ElicitParams); ok && imitatesApproval(ep) {
			return c.cutOff(ctx, rec)
		}
		switch method {
		case "roots/list":
			rec["outcome"] = "answered: no roots (shared upstream)"
			c.g.recordEdge(kindUpstreamRequest, rec)
			return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
		case "sampling/createMessage", "elicitation/create":
			rec["outcome"] = "refused: shared upstream (not attributable to one session)"
			c.g.recordEdge(kindUpstreamRequest, rec)
			c.g.opts.Logger.Warn("mcp gateway: request of a shared upstream to the client refused; configure the upstream session_scoped to relay it",
				"upstream", c.u.Name, "method", method)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("gatehost mcp gateway: %s is refused to a shared upstream: it cannot be attributed to one session", method)}
		}
		return next(ctx, method, req)
	}
}

// isAsk reports whether method is a request an upstream may make of the
// client that the gateway carries (or answers) and records.
func isAsk(method string) bool {
	switch method {
	case "roots/list", "sampling/createMessage", "elicitation/create":
		return true
	}
	return false
}

// asked is the gate of everything an upstream sends the client: its
// notifications and ping pass; a request the gateway carries spends the
// budget (admitAsk) before anything else is done with it, an imitation of
// gatehost's prompt included; any other request (the SDK's client would
// answer completion/complete by asking the upstream back, and wait) is
// refused, unrecorded.
func (c *upconn) asked(method string) error {
	switch {
	case isAsk(method):
		return c.admitAsk(method)
	case method == "ping" || strings.HasPrefix(method, "notifications/"):
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("gatehost mcp gateway: %s is not a request an upstream may make of the client through the gateway", method)}
}

// upstreamLabel starts every elicitation an upstream sends, so that the
// person knows who asks, and that it is not gatehost.
func upstreamLabel(upstream string) string {
	return fmt.Sprintf("[Asked by the MCP server %q, not by gatehost; this is not a gatehost approval.]\n", upstream)
}

// cutOff answers an upstream's elicitation that imitates gatehost's
// approval prompt, recorded with rec: no answer at all, so the upstream
// learns nothing from a reply, and the upstream disconnected (its calls in
// flight end with it).
func (c *upconn) cutOff(ctx context.Context, rec map[string]any) (mcp.Result, error) {
	rec["outcome"] = "refused: imitates gatehost's approval prompt"
	c.g.recordEdge(kindUpstreamRequest, rec)
	c.g.opts.Logger.Warn("mcp gateway: upstream elicitation imitating gatehost's approval refused; upstream disconnected", "upstream", c.u.Name)
	c.close()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "gatehost mcp gateway: refused"}
}

// imitatesApproval reports whether an upstream's elicitation copies
// gatehost's approval prompt: its marker text (in the message, the URL or
// anywhere in the requested schema: titles, descriptions, names), or its
// form (a property named approve). Text is compared as a person reads it
// (nameSkeleton): without case, without the invisible characters that would
// split a word ("gate\u200bhost"), and with look-alike letters of other
// scripts read as the letters they imitate ("gаtehost", Cyrillic а).
// An unencodable schema counts as an imitation: it cannot be shown as sent.
func imitatesApproval(p *mcp.ElicitParams) bool {
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return true
	}
	// Every name and string of the schema, decoded.
	var schemaText strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				schemaText.WriteString(k + " ")
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			schemaText.WriteString(x + " ")
		}
	}
	var sv any
	_ = json.Unmarshal(b, &sv)
	walk(sv)
	text := nameSkeleton(p.Message + " " + p.URL + " " + schemaText.String())
	for _, marker := range imitationMarkers {
		if strings.Contains(text, marker) {
			return true
		}
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(b, &s)
	for name := range s.Properties {
		if nameSkeleton(name) == approveProperty {
			return true
		}
	}
	return false
}

// imitationMarkers and approveProperty are gatehost's approval prompt's
// marker texts and its property's name, as a person reads them
// (nameSkeleton: look-alike letters of other scripts, case and invisible
// characters folded).
var (
	imitationMarkers = []string{nameSkeleton("gatehost"), nameSkeleton(approvalHeading), nameSkeleton("approve this one call")}
	approveProperty  = nameSkeleton("approve")
)

// list-changed kinds, for notifyListChanged.
const (
	toolsChanged     = "tools"
	promptsChanged   = "prompts"
	resourcesChanged = "resources"
)

// notifyListChanged makes the SDK send notifications/KIND/list_changed to
// this session: it adds or removes a placeholder the session never sees
// (every list method is answered by the gateway, not by the SDK's
// registry), which the SDK announces as a change.
func (d *downstream) notifyListChanged(kind string) {
	d.phMu.Lock()
	defer d.phMu.Unlock()
	const name = "gatehost-list-changed"
	on := !d.ph[kind]
	d.ph[kind] = on
	switch kind {
	case toolsChanged:
		if on {
			d.server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return nil, errors.New("unreachable")
				})
		} else {
			d.server.RemoveTools(name)
		}
	case promptsChanged:
		if on {
			d.server.AddPrompt(&mcp.Prompt{Name: name},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return nil, errors.New("unreachable")
				})
		} else {
			d.server.RemovePrompts(name)
		}
	case resourcesChanged:
		const uri = "gatehost:list-changed"
		if on {
			d.server.AddResource(&mcp.Resource{Name: name, URI: uri},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return nil, errors.New("unreachable")
				})
		} else {
			d.server.RemoveResources(uri)
		}
	}
}

// upstreamToolsChanged re-lists an upstream's tools after its
// notifications/tools/list_changed, publishes the new catalog snapshot,
// and tells the client.
func (d *downstream) upstreamToolsChanged(idx int) {
	c := d.conns()[idx]
	cs := c.current()
	if cs == nil || d.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.g.opts.CallTimeout)
	defer cancel()
	if err := d.g.relist(ctx, c, cs); err != nil {
		d.g.opts.Logger.Warn("mcp gateway: re-list after list_changed failed; the upstream is reconnected before its next call",
			"upstream", c.u.Name, "error", err)
		c.close()
		return
	}
	d.notifyListChanged(toolsChanged)
}

// sharedToolsChanged re-lists a shared connection's tools after its
// notifications/tools/list_changed (once, for every session it serves),
// publishes the new catalog snapshot, and tells each of those sessions.
// Until the re-list completes the connection is stale (changes/listedAt,
// marked as the notification was read): no session's call is decided on
// the old listing.
func (g *Gateway) sharedToolsChanged(c *upconn) {
	cs := c.current()
	if cs == nil || c.ended() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.CallTimeout)
	defer cancel()
	if err := g.relist(ctx, c, cs); err != nil {
		g.opts.Logger.Warn("mcp gateway: re-list after list_changed failed; the upstream is reconnected before its next call",
			"upstream", c.u.Name, "error", err)
		c.close()
		return
	}
	g.eachSessionOf(c, func(d *downstream) { d.notifyListChanged(toolsChanged) })
}

// eachSessionOf runs f for every live session that uses the connection c.
func (g *Gateway) eachSessionOf(c *upconn, f func(*downstream)) {
	g.sessions.Range(func(k, _ any) bool {
		d := k.(*downstream)
		if ups := d.conns(); c.idx < len(ups) && ups[c.idx] == c && !d.closed.Load() {
			f(d)
		}
		return true
	})
}
