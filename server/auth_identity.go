package server

import (
	"errors"
	"net/http"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

// realm is the realm of every Bearer challenge the server sends.
const realm = frontend.Realm

// authenticator is the chain over the agent tokens current at each
// request.
func (s *Server) authenticator() identity.Authenticator { return s.ids.Chain(s.tokens.Load) }

// authenticateAgent authenticates a request of an agent route through the
// configured sources. On success it returns the request with the principal
// and the credential its session binding comes from in its context; on
// failure it has answered 401 with a Bearer challenge (RFC 6750 §3),
// naming the protected resource metadata with auth.resource, or 403
// insufficient_scope to a token without the scope auth.resource needs, no
// decision having been made, and returns nil. The answer and the log
// never hold the credential.
func (s *Server) authenticateAgent(w http.ResponseWriter, r *http.Request) *http.Request {
	p, err := s.authenticator().Authenticate(r)
	if err != nil {
		reason := "a valid credential is required"
		var e *identity.Error
		if errors.As(err, &e) {
			reason = e.Reason
		}
		identity.LogRefusal(r.Context(), s.logger, err, "request_id", r.Header.Get(headerRequestID), "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", identity.ResourceChallenge(realm, s.ids.Resource(), err))
		status, code := identity.Status(err), errUnauthorized
		if status == http.StatusForbidden {
			code = errForbidden // insufficient_scope
		}
		writeError(w, r, status, code, "Authorization", reason, nil)
		return nil
	}
	var c *identity.Credential
	switch p.Method {
	case abi.MethodToken:
		tok, _ := identity.Bearer(r)
		c = s.tokens.Load().Lookup(tok)
	case abi.MethodOIDC:
		c = &identity.Credential{Name: p.Subject, AnySession: s.ids.Config().OIDC.AnySession, Bound: true}
	case abi.MethodMTLS:
		c = &identity.Credential{Name: p.Subject, AnySession: s.ids.Config().MTLS.AnySession, Bound: true}
	}
	if c == nil { // the token was swapped out by a reload in between
		w.Header().Set("WWW-Authenticate", identity.ResourceChallenge(realm, s.ids.Resource(), &identity.Error{Code: identity.CodeInvalidToken, Reason: "the bearer token is not valid"}))
		writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "the bearer token is not valid", nil)
		return nil
	}
	return r.WithContext(identity.WithPrincipal(withCredential(r.Context(), c), p))
}
