package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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

// chain is the configured sources in auth.order, the static tokens being
// those tokens returns at each request (a reload swaps them).
func (ids *identities) chain(tokens func() *tokenSet) identity.Authenticator {
	var chain []identity.Authenticator
	for _, src := range ids.cfg.Order {
		switch src {
		case config.AuthTokens:
			chain = append(chain, identity.NewTokens(ids.cfg.TokensName, func(tok string) (string, bool) {
				if c := tokens().lookup(tok); c != nil {
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

// authenticator is the chain over the agent tokens current at each
// request.
func (s *Server) authenticator() identity.Authenticator { return s.ids.chain(s.tokens.Load) }

// Identity is the auth: section's sources and the agent tokens, for
// another HTTP front end of the host, such as the MCP gateway, to
// authenticate its callers the way the decision API does.
type Identity struct {
	ids  *identities
	toks *Tokens
}

// NewIdentity builds the sources of the config file's auth: section over
// toks (the agent tokens; nil for none). The OIDC issuer's discovery
// document and key set are fetched now. Errors name the config key.
func NewIdentity(ctx context.Context, file string, a config.Auth, toks *Tokens) (*Identity, error) {
	ids, err := newIdentities(ctx, file, a)
	if err != nil {
		return nil, err
	}
	if toks == nil {
		toks = &Tokens{}
	}
	return &Identity{ids: ids, toks: toks}, nil
}

// Empty reports whether no source is configured: then Require lets every
// request through, and the caller must keep the listener on loopback.
func (i *Identity) Empty() bool { return i.toks.Empty() && !i.ids.configured() }

// MTLS reports whether client certificates are configured: the listener
// then needs TLS (TLSConfig).
func (i *Identity) MTLS() bool { return i.ids.mtls != nil }

// TLSConfig returns base with client certificates asked for and verified
// when auth.mtls is configured; base itself otherwise.
func (i *Identity) TLSConfig(base *tls.Config) *tls.Config {
	if i.ids.mtls == nil {
		return base
	}
	return i.ids.mtls.TLSConfig(base)
}

// Require answers 401 with a Bearer challenge (RFC 6750 §3) to a request
// no source authenticates, and passes the others to next with the
// principal in their context (identity.FromContext). Each refusal is
// logged to logger (identity.LogRefusal). With no source configured it
// returns next.
func (i *Identity) Require(logger *slog.Logger, next http.Handler) http.Handler {
	if i.Empty() {
		return next
	}
	return identity.RequireLogged(i.ids.chain(func() *tokenSet { return i.toks.set }), realm, logger, next)
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
		}
		identity.LogRefusal(r.Context(), s.logger, err, "request_id", r.Header.Get(headerRequestID), "remote", r.RemoteAddr)
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
