package mcpgateway

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
)

// principalRefHeader carries, inside the process only, a reference from an
// HTTP request to its caller's principal. The MCP SDK runs method handlers
// on the session's context, not the request's, and hands them only the
// request's headers (RequestExtra.Header): so the gateway's HTTP handler
// files the principal of each request (identity.FromContext, put there by
// the authentication in front of it) under a fresh random reference, sets
// the header to it, and drops the entry when the request ends. Whatever
// value a client sends for the header is replaced first, so a client
// cannot name another request's principal.
const principalRefHeader = "X-Gatehost-Principal-Ref"

// withPrincipals wraps the Streamable HTTP handler: see principalRefHeader.
func (g *Gateway) withPrincipals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(principalRefHeader)
		if p, ok := identity.FromContext(r.Context()); ok {
			ref := randomHex(16)
			g.principals.Store(ref, p)
			defer g.principals.Delete(ref)
			r.Header.Set(principalRefHeader, ref)
		}
		next.ServeHTTP(w, r)
	})
}

// principalOf is the principal of the HTTP request that delivered req;
// nil for an unauthenticated one and over stdio.
func (g *Gateway) principalOf(req mcp.Request) *abi.Principal {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil
	}
	ref := extra.Header.Get(principalRefHeader)
	if ref == "" {
		return nil
	}
	p, _ := g.principals.Load(ref)
	pp, _ := p.(*abi.Principal)
	return pp
}
