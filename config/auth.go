package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Auth sources (auth.order).
const (
	AuthTokens = "tokens" // the static bearer tokens of --token-file
	AuthOIDC   = "oidc"   // JWT bearer tokens of one OpenID Connect issuer
	AuthMTLS   = "mtls"   // TLS client certificates
)

// authConfig is the auth: section as written.
type authConfig struct {
	Order []string `mapstructure:"order"`
	OIDC  *struct {
		Issuer                 string        `mapstructure:"issuer"`
		Audiences              []string      `mapstructure:"audiences"`
		Algorithms             []string      `mapstructure:"algorithms"`
		Skew                   time.Duration `mapstructure:"skew"`
		Claims                 []string      `mapstructure:"claims"`
		JWKSRefreshMinInterval time.Duration `mapstructure:"jwks_refresh_min_interval"`
		FetchTimeout           time.Duration `mapstructure:"fetch_timeout"`
		AnySession             bool          `mapstructure:"any_session"`
	} `mapstructure:"oidc"`
	MTLS *struct {
		ClientCA   string `mapstructure:"client_ca"`
		Require    bool   `mapstructure:"require"`
		AnySession bool   `mapstructure:"any_session"`
	} `mapstructure:"mtls"`
	Tokens *struct {
		Name string `mapstructure:"name"`
	} `mapstructure:"tokens"`
	Resource *struct {
		URI                  string   `mapstructure:"uri"`
		AuthorizationServers []string `mapstructure:"authorization_servers"`
		ScopesSupported      []string `mapstructure:"scopes_supported"`
		ScopesRequired       []string `mapstructure:"scopes_required"`
	} `mapstructure:"resource"`
}

// Auth is the resolved auth: section (docs/IDENTITY-AND-TRACING.md
// "Identity"): who may call gatehost serve and gatehost mcp --listen, and
// what the principal of a run is. The zero value configures no OIDC and no
// mTLS: the static tokens of --token-file alone, as before.
type Auth struct {
	// Order lists the sources in the order they are asked (auth.order;
	// default tokens, oidc, mtls), each configured one once.
	Order []string
	// OIDC is auth.oidc, validated; nil when not configured.
	OIDC *OIDCAuth
	// MTLS is auth.mtls; nil when not configured.
	MTLS *MTLSAuth
	// TokensName names the static-token source: the issuer of its
	// principals (auth.tokens.name; default identity.DefaultTokensName).
	TokensName string
	// Resource is auth.resource: the front end as an OAuth 2.0 protected
	// resource (RFC 9728, the MCP authorization spec); nil when not
	// configured. Its URI is among auth.oidc's audiences, and its
	// required scopes are auth.oidc's.
	Resource *identity.Resource
}

// OIDCAuth is auth.oidc.
type OIDCAuth struct {
	// Config is the identity source's configuration, defaults filled in.
	Config identity.OIDCConfig
	// AnySession lets an OIDC principal name any ?session= of gatehost
	// serve; false (the default) lets it check only without one.
	AnySession bool
}

// MTLSAuth is auth.mtls.
type MTLSAuth struct {
	// ClientCA is the CA bundle file (resolved), CAPEM its content.
	ClientCA string
	CAPEM    []byte
	// Require refuses a TLS client without a certificate at the
	// handshake.
	Require bool
	// AnySession: as OIDCAuth.AnySession.
	AnySession bool
}

// Configured reports whether OIDC or mTLS is configured (the static
// tokens are configured by flags, not here).
func (a Auth) Configured() bool { return a.OIDC != nil || a.MTLS != nil }

// resolveAuth checks the auth: section. Errors name the key.
func resolveAuth(ac authConfig, rel func(string) string) (Auth, error) {
	a := Auth{TokensName: identity.DefaultTokensName}
	if ac.Tokens != nil && ac.Tokens.Name != "" {
		if !tokenSourceNameRE(ac.Tokens.Name) {
			return Auth{}, fmt.Errorf("auth.tokens.name: %q: want 1 to 64 of A-Z a-z 0-9 _ . : / -", ac.Tokens.Name)
		}
		if ac.Tokens.Name == identity.ApproverTokensName {
			return Auth{}, fmt.Errorf("auth.tokens.name: %q is the approver tokens' issuer; agents' tokens need another name", ac.Tokens.Name)
		}
		a.TokensName = ac.Tokens.Name
	}
	if ac.Resource != nil && ac.OIDC == nil {
		return Auth{}, fmt.Errorf("auth.resource: needs auth.oidc: the tokens clients bring are verified as its")
	}
	if o := ac.OIDC; o != nil {
		audiences := o.Audiences
		var res *identity.Resource
		if ac.Resource != nil {
			var err error
			if res, err = resolveResource(ac.Resource.URI, ac.Resource.AuthorizationServers, ac.Resource.ScopesSupported,
				ac.Resource.ScopesRequired, strings.TrimSpace(o.Issuer)); err != nil {
				return Auth{}, err
			}
			if !slices.Contains(audiences, res.URI) {
				audiences = append(slices.Clone(audiences), res.URI)
			}
			a.Resource = res
		}
		cfg, err := identity.OIDCConfig{Issuer: strings.TrimSpace(o.Issuer), Audiences: audiences, Algorithms: o.Algorithms,
			Skew: o.Skew, Claims: o.Claims, RefreshMinInterval: o.JWKSRefreshMinInterval, FetchTimeout: o.FetchTimeout}.Validate()
		if err != nil {
			return Auth{}, fmt.Errorf("auth.oidc.%s", strings.TrimPrefix(err.Error(), identity.ErrConfig.Error()+": "))
		}
		if res != nil {
			cfg.Scopes = res.Scopes
		}
		cfg.Now = nil // the source's own clock
		a.OIDC = &OIDCAuth{Config: cfg, AnySession: o.AnySession}
	}
	if m := ac.MTLS; m != nil {
		if m.ClientCA == "" {
			return Auth{}, fmt.Errorf("auth.mtls.client_ca: required: the CA bundle client certificates must chain to")
		}
		path := rel(m.ClientCA)
		b, err := safefile.ReadFile(path, 1<<20)
		if err != nil {
			return Auth{}, fmt.Errorf("auth.mtls.client_ca: %w", err)
		}
		if _, err := identity.ParseCAs(b); err != nil {
			return Auth{}, fmt.Errorf("auth.mtls.client_ca: %s: %s", path, strings.TrimPrefix(err.Error(), identity.ErrConfig.Error()+": client_ca: "))
		}
		a.MTLS = &MTLSAuth{ClientCA: path, CAPEM: b, Require: m.Require, AnySession: m.AnySession}
	}
	configured := map[string]bool{AuthTokens: true, AuthOIDC: a.OIDC != nil, AuthMTLS: a.MTLS != nil}
	for i, s := range ac.Order {
		switch {
		case s != AuthTokens && s != AuthOIDC && s != AuthMTLS:
			return Auth{}, fmt.Errorf("auth.order[%d]: %q: want %s, %s or %s", i, s, AuthTokens, AuthOIDC, AuthMTLS)
		case !configured[s]:
			return Auth{}, fmt.Errorf("auth.order[%d]: %s is not configured (auth.%s)", i, s, s)
		case slices.Contains(a.Order, s):
			return Auth{}, fmt.Errorf("auth.order[%d]: %s given twice", i, s)
		}
		a.Order = append(a.Order, s)
	}
	for _, s := range []string{AuthTokens, AuthOIDC, AuthMTLS} {
		if configured[s] && !slices.Contains(a.Order, s) {
			if len(ac.Order) > 0 {
				return Auth{}, fmt.Errorf("auth.order: %s is configured but not listed", s)
			}
			a.Order = append(a.Order, s)
		}
	}
	return a, nil
}

// resolveResource checks auth.resource: the URI an absolute https URL
// (http on loopback) without query or fragment, the authorization servers
// issuer URLs (default: auth.oidc.issuer), the scopes RFC 6749 scope
// tokens, the required ones among the supported ones (default: the
// required ones).
func resolveResource(uri string, servers, supported, required []string, issuer string) (*identity.Resource, error) {
	uri = strings.TrimSpace(uri)
	if err := identity.CheckResourceURI(uri); err != nil {
		return nil, fmt.Errorf("auth.resource.uri: %w", err)
	}
	if len(servers) == 0 {
		// auth.oidc.issuer, which auth.oidc checks itself.
		return resourceScopes(&identity.Resource{URI: uri, AuthorizationServers: []string{issuer}}, supported, required)
	}
	for i, s := range servers {
		if err := identity.CheckResourceURI(s); err != nil {
			return nil, fmt.Errorf("auth.resource.authorization_servers[%d]: %w", i, err)
		}
	}
	return resourceScopes(&identity.Resource{URI: uri, AuthorizationServers: slices.Clone(servers)}, supported, required)
}

// resourceScopes checks auth.resource's scopes and sets them on res.
func resourceScopes(res *identity.Resource, supported, required []string) (*identity.Resource, error) {
	for key, list := range map[string][]string{"scopes_supported": supported, "scopes_required": required} {
		for i, s := range list {
			if err := identity.CheckScope(s); err != nil {
				return nil, fmt.Errorf("auth.resource.%s[%d]: %w", key, i, err)
			}
		}
	}
	if len(supported) == 0 {
		supported = required
	}
	for i, s := range required {
		if !slices.Contains(supported, s) {
			return nil, fmt.Errorf("auth.resource.scopes_required[%d]: %q is not among scopes_supported", i, s)
		}
	}
	res.ScopesSupported, res.Scopes = slices.Clone(supported), slices.Clone(required)
	return res, nil
}

func tokenSourceNameRE(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:/-", r)) {
			return false
		}
	}
	return true
}
