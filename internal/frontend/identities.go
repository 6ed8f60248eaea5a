package frontend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/identity"
)

// Realm is the realm of every Bearer challenge a front end sends.
const Realm = "gatehost"

// Identities are the auth: section's sources, built once at start (the
// OIDC issuer's discovery and key set are fetched then); a reload keeps
// them and refuses a changed auth: section. A nil *Identities has none.
type Identities struct {
	cfg  config.Auth
	oidc *identity.OIDC
	mtls *identity.MTLS
}

// NewIdentities builds the sources of a, the auth: section of the config
// file. Errors name the config key. An auth.mtls without certFile (no
// TLS, so no client certificates) is an error wrapping ErrUsage.
func NewIdentities(ctx context.Context, file string, a config.Auth, certFile string) (*Identities, error) {
	ids := &Identities{cfg: a}
	if a.OIDC != nil {
		o, err := identity.NewOIDC(ctx, a.OIDC.Config)
		if err != nil {
			return nil, fmt.Errorf("config %s: auth.oidc: %w", file, err)
		}
		ids.oidc = o
	}
	if a.MTLS != nil {
		if certFile == "" {
			return nil, fmt.Errorf("%w: config %s: auth.mtls needs --tls-cert and --tls-key: client certificates come with TLS", ErrUsage, file)
		}
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

// Config is the auth: section the sources were built from.
func (ids *Identities) Config() config.Auth {
	if ids == nil {
		return config.Auth{}
	}
	return ids.cfg
}

// Configured reports whether OIDC or mTLS is on.
func (ids *Identities) Configured() bool { return ids != nil && ids.cfg.Configured() }

// Authed reports whether a listener of the front end is authenticated:
// tokens are configured, or an identity source is.
func (ids *Identities) Authed(tokens *identity.Tokens) bool {
	return !tokens.Empty() || ids.Configured()
}

// TLSConfig returns base with client certificates asked for and verified
// when auth.mtls is configured; base itself otherwise.
func (ids *Identities) TLSConfig(base *tls.Config) *tls.Config {
	if ids == nil || ids.mtls == nil {
		return base
	}
	return ids.mtls.TLSConfig(base)
}

// Chain is the configured sources in auth.order, the static tokens being
// those tokens returns at each request (a reload swaps them).
func (ids *Identities) Chain(tokens func() *identity.Tokens) identity.Authenticator {
	var chain []identity.Authenticator
	for _, src := range ids.Config().Order {
		switch src {
		case config.AuthTokens:
			chain = append(chain, identity.NewTokenSource(ids.cfg.TokensName, identity.Names(tokens)))
		case config.AuthOIDC:
			chain = append(chain, ids.oidc)
		case config.AuthMTLS:
			chain = append(chain, ids.mtls)
		}
	}
	return identity.Chain(chain...)
}

// Require answers 401 with a Bearer challenge (RFC 6750 §3) to a request
// no source authenticates, and passes the others to next with the
// principal in their context (identity.FromContext). Each refusal is
// logged to logger (identity.LogRefusal). With auth.resource the
// challenge names the resource's metadata and scope, and a token without
// the scope is answered 403 (identity.RequireResource). With no source
// and no token configured it returns next: the listener is then loopback
// (Listen).
func (ids *Identities) Require(tokens func() *identity.Tokens, logger *slog.Logger, next http.Handler) http.Handler {
	if !ids.Authed(tokens()) {
		return next
	}
	return identity.RequireResource(ids.Chain(tokens), Realm, ids.Resource(), logger, next)
}

// Resource is auth.resource, or nil.
func (ids *Identities) Resource() *identity.Resource { return ids.Config().Resource }

// MountResource serves res's metadata (RFC 9728) on mux, without a
// credential: at the well-known path and at its path-suffixed form (RFC
// 9728 §3.1), e.g. /.well-known/oauth-protected-resource/mcp. A nil res
// mounts nothing.
func MountResource(mux *http.ServeMux, res *identity.Resource) {
	if res == nil {
		return
	}
	h := res.MetadataHandler()
	mux.Handle("GET "+identity.WellKnownResource, h)
	if p := res.MetadataPath(); p != identity.WellKnownResource {
		mux.Handle("GET "+p, h)
	}
}

// CheckTokenSwap refuses a reload's tokens that would turn bearer-token
// auth on or off: turning it off would expose a listener bound for auth.
func CheckTokenSwap(running, next *identity.Tokens) error {
	if running.Empty() != next.Empty() {
		return errors.New("auth: a reload cannot turn bearer-token auth on or off; restart")
	}
	return nil
}
