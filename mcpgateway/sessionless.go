package mcpgateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/identity"
)

// The sessionless revision (MCP 2026-07-28, SEP-2575) has no initialize:
// every request carries, in its _meta, the client's revision, its
// capabilities and (optionally) its identity. The gateway opens its session
// for such a client at the client's first request (begin): over stdio the
// connection is that session, over HTTP every request is one (the
// statelessHandler serves it alone, and the session ends with it).

// revisionMetaPrefix is the _meta namespace of the sessionless revision's
// per-request fields; they describe the client's request to the gateway,
// and are not forwarded upstream (an upstream is spoken to at a revision
// with sessions, where they would claim another revision).
const revisionMetaPrefix = "io.modelcontextprotocol/"

// requestRevision is the sessionless revision a request names in its
// _meta (mcp.MetaKeyProtocolVersion), or "" when it names none or one with
// sessions. The SDK refuses a revision the gateway does not serve before
// the gateway sees the request.
func requestRevision(req mcp.Request) string {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return ""
	}
	v, _ := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string)
	if !sessionless(v) {
		return ""
	}
	return v
}

// isSessionless reports whether the session began at a sessionless
// revision.
func (d *downstream) isSessionless() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return sessionless(d.version)
}

// errMixedRevisions refuses a request whose revision is not the session's:
// a session is either sessionless or not, from its first request on.
var errMixedRevisions = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "gatehost mcp gateway: the request's protocol revision is not the session's (a session initialized at a revision with sessions takes no sessionless request, and a sessionless one takes only sessionless requests)"}

// sessionlessRequest handles what is particular to a request of the
// sessionless revision v ("" for a request without the revision's _meta,
// on a session that began sessionless): it begins the session, answers
// server/discover with the upstreams' capabilities, and removes the
// revision's _meta fields and its multi round-trip fields (which an
// upstream spoken to at a revision with sessions never asked for) before
// the request goes on. done reports that the request is answered.
func (d *downstream) sessionlessRequest(ctx context.Context, method string, req mcp.Request, v string, next mcp.MethodHandler) (res mcp.Result, done bool, err error) {
	if v == "" {
		if !isNotification(method) {
			return nil, true, errMixedRevisions
		}
		switch method {
		case "notifications/cancelled":
			res, err = next(ctx, method, req)
		}
		// Other notifications of the client have no part in the
		// sessionless revision (no initialized, no roots list_changed).
		return res, true, err
	}
	if err := d.begin(ctx, req, v); err != nil {
		return nil, true, err
	}
	if method == "server/discover" {
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, true, err
		}
		dr, ok := res.(*mcp.DiscoverResult)
		if !ok {
			return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gatehost mcp gateway: server/discover not answered"}
		}
		d.mu.Lock()
		dr.Capabilities, dr.Instructions = d.offered, d.instructions
		d.mu.Unlock()
		return dr, true, nil
	}
	if method == "subscriptions/listen" {
		res, err := next(ctx, method, req)
		return res, true, err
	}
	p := req.GetParams()
	if m := p.GetMeta(); m != nil {
		for k := range m {
			if strings.HasPrefix(k, revisionMetaPrefix) {
				delete(m, k)
			}
		}
	}
	// Kept in ctx (withRoundTrip): answers to gatehost's own input
	// requests, or to an upstream's (sent on to it, upinput.go); not part
	// of the call that is decided.
	switch p := p.(type) {
	case *mcp.CallToolParamsRaw:
		p.InputResponses, p.RequestState = nil, ""
	case *mcp.ReadResourceParams:
		p.InputResponses, p.RequestState = nil, ""
	case *mcp.GetPromptParams:
		p.InputResponses, p.RequestState = nil, ""
	}
	return nil, false, nil
}

// counterSession is the key of the session's call counters: over HTTP a
// sessionless request is a session of its own, and a limit on a session's
// calls would start afresh with every request, so such a caller's session
// counters are its principal's (a stable handle, counting at least what
// any one of its sessions would). Otherwise the session's own ("").
func (d *downstream) counterSession() string {
	if !d.perRequest {
		return ""
	}
	sum := sha256.Sum256([]byte(principalKey(d.principal)))
	return "mcp-principal-" + hex.EncodeToString(sum[:16])
}

func isNotification(method string) bool { return strings.HasPrefix(method, "notifications/") }

// begin opens the session at a sessionless client's first request: it
// takes the request's principal and capabilities, takes a slot under the
// session caps, connects the upstreams and creates the gatehost session,
// as initialize does at a revision with sessions. Later requests of the
// session (stdio) find it begun; one at another revision is refused. A
// session that could not begin refuses every request with the same error.
func (d *downstream) begin(ctx context.Context, req mcp.Request, v string) error {
	d.beginMu.Lock()
	defer d.beginMu.Unlock()
	principal, _ := d.g.requestPrincipal(req)
	key := principalKey(principal)
	resumed := ""
	if d.perRequest && d.sessionID() == "" {
		// A call made again after gatehost's input request resumes the
		// session its approval request was opened in (roundtrip.go).
		resumed = d.g.resumedSession(ctx, principal, roundTripFrom(ctx).state)
	}
	d.mu.Lock()
	if d.id != "" || d.reserved {
		version, err := d.version, d.beginErr
		d.mu.Unlock()
		if version != v {
			return errMixedRevisions
		}
		return err
	}
	if err := d.g.table.reserve(key, d.g.opts.MaxSessions, d.g.opts.MaxSessionsPerPrincipal); err != nil {
		d.mu.Unlock()
		d.g.opts.Logger.Warn("mcp gateway: session refused", "principal", principalLabel(principal), "reason", err)
		d.g.recordEdge(kindSessionRefused, map[string]any{"reason": err.Error(), "principal": principalLabel(principal), "protocol_version": v})
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gatehost mcp gateway: " + err.Error()}
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	var caps *mcp.ClientCapabilities
	if r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		caps = r.ClientCapabilities()
	}
	id := "mcp-" + randomHex(16)
	if ss != nil && ss.ID() != "" && len(ss.ID()) <= 100 && session.ValidID("mcp-"+ss.ID()) {
		id = "mcp-" + ss.ID()
	}
	if resumed != "" {
		id = resumed
	}
	d.reserved, d.key, d.principal = true, key, principal
	d.ss, d.id, d.caps, d.version = ss, id, caps, v
	if d.perRequest {
		d.keptKey = keptKey(principal, v, caps)
	}
	kept := d.keptKey
	d.mu.Unlock()
	// Before the session is registered, while its connections are its
	// own: a URL upstream's connection kept from this principal's last
	// request takes the fresh one's place (kept.go keeps no other).
	for i, c := range d.ups {
		if c == nil || c.shared() {
			continue
		}
		if k := d.g.kept.take(kept, i); k != nil {
			// In this order: a listing of k under way reads its new
			// owner's connections once it sees the owner.
			d.ups[i] = k
			k.owner.Store(d)
		}
	}
	d.g.sessions.Store(d, struct{}{})
	if ss != nil {
		// The session ends with its connection: over HTTP, with the
		// request.
		go func() {
			_ = ss.Wait()
			d.close()
		}()
	}
	offered, instructions, err := d.connectUpstreams(ctx)
	if err == nil && d.perRequest {
		// A session that is one request has listed nothing; what the
		// client listed in another request is what a listing shows now,
		// and is activated as that listing did.
		_, _, _, err = d.activateListed(ctx)
	}
	d.mu.Lock()
	d.offered, d.instructions, d.beginErr = offered, instructions, err
	d.mu.Unlock()
	return err
}

// statelessHandler serves the requests of the sessionless revision over
// HTTP: each on its own, with a gateway session of its own that ends with
// the request. The SDK serves that revision only on a stateless handler;
// the gateway's sessionful handler serves the older revisions.
func (g *Gateway) statelessHandler(probe *mcp.Server) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if d, ok := r.Context().Value(requestSessionKey{}).(*downstream); ok {
			return d.server
		}
		return probe
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: sdkLogger(g.opts.Logger)})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		d := g.newSession()
		d.perRequest = true
		g.declareCalledTool(d, r)
		// A request the SDK refuses before it reaches the gateway begins
		// nothing; one that began ends with its session (begin).
		rw := &refusalWriter{ResponseWriter: w}
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), requestSessionKey{}, d)))
		// The SDK closed the request's session before returning: the
		// gateway's ends now, not when its watcher gets to it, so that
		// the session caps count the requests in flight.
		if d.sessionID() != "" {
			d.close()
		}
		if msg, ok := rw.headerMismatch(); ok {
			p, _ := identity.FromContext(r.Context())
			g.opts.Logger.Warn("mcp gateway: request refused: its headers do not say what its body does", "principal", principalLabel(p), "reason", msg)
			g.recordEdge(kindRequestRefused, map[string]any{
				"reason": "header_mismatch", "detail": msg, "principal": principalLabel(p),
				"protocol_version": quoted(r.Header.Get("Mcp-Protocol-Version")),
				"mcp_method":       quoted(r.Header.Get("Mcp-Method")), "mcp_name": quoted(r.Header.Get("Mcp-Name"))})
		}
	})
}

// declareCalledTool registers, on the request's server, the tool a
// tools/call names (its Mcp-Name header) as the trust baseline pins it, so
// that the SDK checks the request's Mcp-Param-* headers against the
// arguments as for a tool it serves itself (SEP-2243: a property with an
// x-mcp-header annotation travels in a header too, and the two must
// agree), before anything is decided. The gateway answers the call
// itself; the registered handler never runs. A definition the SDK refuses
// (invalid annotations) is not registered: the SDK would not check its
// headers either.
func (g *Gateway) declareCalledTool(d *downstream, r *http.Request) {
	name := r.Header.Get("Mcp-Name")
	if r.Header.Get("Mcp-Method") != "tools/call" || name == "" {
		return
	}
	rt, ok := (*g.routes.Load())[name]
	if !ok || !bytes.Contains(rt.def, []byte("x-mcp-header")) {
		return
	}
	var t mcp.Tool
	if json.Unmarshal(rt.def, &t) != nil || t.InputSchema == nil {
		return
	}
	t.Name = name
	defer func() { _ = recover() }() // AddTool panics on a definition it refuses
	d.server.AddTool(&t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("gatehost mcp gateway: unreachable")
	})
}

// refusalWriter passes a response on, and keeps the start of a 400
// answer's body: the SDK answers a request whose Mcp-Method or Mcp-Name
// header differs from its body with 400 and mcp.CodeHeaderMismatch,
// before any handler of the gateway runs (headerMismatch).
type refusalWriter struct {
	http.ResponseWriter
	status int
	body   []byte
}

// refusalKept bounds what refusalWriter keeps of a 400 answer.
const refusalKept = 4096

func (w *refusalWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status == http.StatusBadRequest && len(w.body) < refusalKept {
		w.body = append(w.body, b[:min(len(b), refusalKept-len(w.body))]...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *refusalWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headerMismatch reports whether the answer was the SDK's refusal of a
// request whose headers do not match its body, and its message.
func (w *refusalWriter) headerMismatch() (string, bool) {
	if w.status != http.StatusBadRequest {
		return "", false
	}
	var resp struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(w.body, &resp) != nil || resp.Error == nil || resp.Error.Code != mcp.CodeHeaderMismatch {
		return "", false
	}
	return quoted(resp.Error.Message), true
}

// quoted bounds a client-chosen text recorded in the event log, quoted so
// that no character of it passes for the record's own.
func quoted(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max]
	}
	return strconv.Quote(s)
}

// requestSessionKey holds, in an HTTP request's context, the gateway
// session built for a sessionless request.
type requestSessionKey struct{}
