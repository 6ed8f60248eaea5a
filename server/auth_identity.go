package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/identity"
)

// realm is the realm of every Bearer challenge the server sends.
const realm = "gatehost"

// identities are the auth: section's sources, built once at New (the
// OIDC issuer's discovery and key set are fetched then); a reload keeps
// them and refuses a changed auth: section.
type identities struct {
	cfg  config.Auth
	oidc *identity.OIDC
	mtls *identity.MTLS
}

// configured reports whether OIDC or mTLS is on.
func (ids *identities) configured() bool { return ids != nil && ids.cfg.Configured() }

// newIdentities builds the sources of a (nil when none is configured).
// Errors name the config key.
func newIdentities(ctx context.Context, file string, a config.Auth) (*identities, error) {
	ids := &identities{cfg: a}
	if a.OIDC != nil {
		o, err := identity.NewOIDC(ctx, a.OIDC.Config)
		if err != nil {
			return nil, fmt.Errorf("config %s: auth.oidc: %w", file, err)
		}
		ids.oidc = o
	}
	if a.MTLS != nil {
		pool, err := identity.ParseCAs(a.MTLS.CAPEM)
		if err != nil {
			return nil, fmt.Errorf("config %s: auth.mtls.client_ca: %w", file, err)
		}
		if ids.mtls, err = identity.NewMTLS(identity.MTLSConfig{ClientCAs: pool, Require: a.MTLS.Require}); err != nil {
			return nil, fmt.Errorf("config %s: auth.mtls: %w", file, err)
		}
	}
	return ids, nil
}

// authenticator is the chain of the configured sources in auth.order, the
// static tokens being the agent tokens current at each request (a reload
// swaps them).
func (s *Server) authenticator() identity.Authenticator {
	ids := s.ids
	var chain []identity.Authenticator
	for _, src := range ids.cfg.Order {
		switch src {
		case config.AuthTokens:
			chain = append(chain, identity.NewTokens(ids.cfg.TokensName, func(tok string) (string, bool) {
				if c := s.tokens.Load().lookup(tok); c != nil {
					return c.name, true
				}
				return "", false
			}))
		case config.AuthOIDC:
			chain = append(chain, ids.oidc)
		case config.AuthMTLS:
			chain = append(chain, ids.mtls)
		}
	}
	return identity.Chain(chain...)
}

// authenticateAgent authenticates a request of an agent route through the
// configured sources. On success it returns the request with the principal
// and the credential its session binding comes from in its context; on
// failure it has answered 401 with a Bearer challenge (RFC 6750 §3), no
// decision having been made, and returns nil. The answer and the log
// never hold the credential.
func (s *Server) authenticateAgent(w http.ResponseWriter, r *http.Request) *http.Request {
	p, err := s.authenticator().Authenticate(r)
	if err != nil {
		reason := "a valid credential is required"
		var e *identity.Error
		if errors.As(err, &e) {
			reason = e.Reason
			if e.Code != "" {
				s.logger.Warn("gatehost serve: credential refused", "method", e.Method, "reason", e.Reason,
					"request_id", r.Header.Get(headerRequestID), "remote", r.RemoteAddr)
			}
		}
		w.Header().Set("WWW-Authenticate", identity.Challenge(realm, err))
		writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", reason, nil)
		return nil
	}
	var c *credential
	switch p.Method {
	case abi.MethodToken:
		tok, _ := bearerToken(r)
		c = s.tokens.Load().lookup(tok)
	case abi.MethodOIDC:
		c = &credential{name: p.Subject, anySession: s.ids.cfg.OIDC.AnySession, bound: true}
	case abi.MethodMTLS:
		c = &credential{name: p.Subject, anySession: s.ids.cfg.MTLS.AnySession, bound: true}
	}
	if c == nil { // the token was swapped out by a reload in between
		w.Header().Set("WWW-Authenticate", identity.Challenge(realm, &identity.Error{Code: identity.CodeInvalidToken, Reason: "the bearer token is not valid"}))
		writeError(w, r, http.StatusUnauthorized, errUnauthorized, "Authorization", "the bearer token is not valid", nil)
		return nil
	}
	return r.WithContext(identity.WithPrincipal(withCredential(r.Context(), c), p))
}
