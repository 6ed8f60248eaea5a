package mcpgateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/identity"
)

// Event-log record kinds of the gateway's edge.
const (
	// kindSessionRefused: a request named a session that belongs to
	// another principal, or a new session was refused by a cap.
	kindSessionRefused = "mcp_session_refused"
	// kindUpstreamRequest: an upstream asked the client something
	// (elicitation, sampling, roots), relayed or refused.
	kindUpstreamRequest = "mcp_upstream_request"
	// kindUpstreamCredentials: a call was not sent for want of the
	// upstream's credentials (token exchange refused, failed, or
	// impossible without a caller token).
	kindUpstreamCredentials = "mcp_upstream_credentials"
	// kindRequestRefused: the SDK refused a request before the gateway
	// saw it, for a reason the gateway records: its Mcp-Method or
	// Mcp-Name header does not say what its body does (2026-07-28).
	kindRequestRefused = "mcp_request_refused"
)

// Errors of the edge, for errors.Is.
var (
	// ErrSessionCap: a new session would exceed Options.MaxSessions or
	// Options.MaxSessionsPerPrincipal.
	ErrSessionCap = errors.New("mcpgateway: session cap reached")
)

// principalKey is the identity a session is bound to: the principal's
// method, issuer and subject, or "anonymous" for a request no
// authentication vouched for. Two requests belong to one caller exactly
// when their keys are equal.
func principalKey(p *abi.Principal) string {
	if p == nil {
		return "anonymous"
	}
	b, _ := json.Marshal([]string{p.Method, p.Issuer, p.Subject})
	return string(b)
}

// principalLabel names a principal in logs and records.
func principalLabel(p *abi.Principal) string {
	if p == nil {
		return "anonymous"
	}
	return p.Method + ":" + p.Subject
}

// sessionTable binds each live MCP session to the principal that created
// it, and counts sessions for the caps.
type sessionTable struct {
	mu       sync.Mutex
	owner    map[string]string // Mcp-Session-Id → principalKey
	total    int
	perOwner map[string]int
}

func newSessionTable() *sessionTable {
	return &sessionTable{owner: map[string]string{}, perOwner: map[string]int{}}
}

// reserve takes a slot for a new session of key, or refuses with
// ErrSessionCap. The slot is given back with release.
func (t *sessionTable) reserve(key string, max, perPrincipal int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total >= max {
		return fmt.Errorf("%w: %d sessions are open (mcp.max_sessions)", ErrSessionCap, t.total)
	}
	if t.perOwner[key] >= perPrincipal {
		return fmt.Errorf("%w: this principal has %d sessions open (mcp.max_sessions_per_principal)", ErrSessionCap, t.perOwner[key])
	}
	t.total++
	t.perOwner[key]++
	return nil
}

func (t *sessionTable) release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if t.perOwner[key]--; t.perOwner[key] <= 0 {
		delete(t.perOwner, key)
	}
}

func (t *sessionTable) bind(sid, key string) {
	if sid == "" {
		return
	}
	t.mu.Lock()
	t.owner[sid] = key
	t.mu.Unlock()
}

func (t *sessionTable) unbind(sid string) {
	if sid == "" {
		return
	}
	t.mu.Lock()
	delete(t.owner, sid)
	t.mu.Unlock()
}

// ownerOf returns the key a session is bound to, and whether it is known.
func (t *sessionTable) ownerOf(sid string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.owner[sid]
	return k, ok
}

// withPrincipals wraps the Streamable HTTP handler. It resolves the
// request's principal once (identity.FromContext, put there by the
// authentication in front of the gateway) and refuses any request that
// names a session bound to another principal: calls, answers to the
// gateway's requests, GET streams and DELETE alike get 404, the answer for
// a session that does not exist, so that a session id learnt by another
// caller is worth nothing; the refusal is recorded. The principal travels
// to the method handlers through principalRefHeader (see there).
func (g *Gateway) withPrincipals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(principalRefHeader)
		p, _ := identity.FromContext(r.Context())
		key := principalKey(p)
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			if owner, ok := g.table.ownerOf(sid); ok && owner != key {
				g.opts.Logger.Warn("mcp gateway: request for a session of another principal refused",
					"principal", principalLabel(p), "method", r.Method)
				g.recordEdge(kindSessionRefused, map[string]any{
					"reason": "session belongs to another principal", "principal": principalLabel(p), "http_method": r.Method})
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		ref := randomHex(16)
		pr := principalRef{p: p}
		if g.exchanges {
			pr.token = bearerOf(r, p)
		}
		g.principals.Store(ref, pr)
		defer g.principals.Delete(ref)
		r.Header.Set(principalRefHeader, ref)
		next.ServeHTTP(w, r)
	})
}

// principalRef is what principalRefHeader refers to: the request's
// principal, nil for an anonymous request, and the bearer token that
// authenticated it ("" for none), which token exchange needs (callerToken).
type principalRef struct {
	p     *abi.Principal
	token string
}

// requestPrincipal is the principal of the HTTP request that delivered
// req, and whether req came over HTTP through withPrincipals at all (over
// stdio there is no principal: the process's user is the caller).
func (g *Gateway) requestPrincipal(req mcp.Request) (*abi.Principal, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	ref := extra.Header.Get(principalRefHeader)
	if ref == "" {
		return nil, false
	}
	v, ok := g.principals.Load(ref)
	if !ok {
		return nil, false
	}
	return v.(principalRef).p, true
}

// recordEdge appends one record of the edge to the event log. A failure
// is logged and returned: where the record is of something refused, the
// caller goes on; where it is of something the gateway is about to carry
// (an upstream's request relayed to the person), the caller refuses it,
// since nothing reaches the person unrecorded (errNotRecorded).
func (g *Gateway) recordEdge(kind string, data map[string]any) error {
	if g.appendRecord == nil {
		return nil
	}
	b, err := json.Marshal(data)
	if err == nil {
		err = g.appendRecord(eventlog.Record{Kind: kind, Pipeline: g.opts.Pipeline, Data: b})
	}
	if err != nil {
		g.opts.Logger.Error("mcp gateway: edge record not written", "kind", kind, "error", err)
		return fmt.Errorf("%w: %w", errNotRecorded, err)
	}
	return nil
}

// errNotRecorded: the event log did not take the record of something the
// gateway would carry, so it is not carried.
var errNotRecorded = errors.New("not recorded in the event log")

// principalRefHeader carries, inside the process only, a reference from an
// HTTP request to its caller's principal. The MCP SDK runs method handlers
// on the session's context, not the request's, and hands them only the
// request's headers (RequestExtra.Header): so withPrincipals files the
// principal of each request under a fresh random reference, sets the
// header to it, and drops the entry when the request ends. Whatever value
// a client sends for the header is replaced first, so a client cannot
// name another request's principal. A session's principal is taken once,
// at initialize, and kept with the session (downstream.principal): later
// requests must present the same one, and a call is never decided with a
// principal looked up after its request ended.
const principalRefHeader = "X-Gatehost-Principal-Ref"
