package identity

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gatehost/gatehost/abi"
)

// OIDC defaults and bounds.
const (
	// DefaultSkew is the clock skew allowed on exp and nbf.
	DefaultSkew = 30 * time.Second
	// MaxSkew bounds the configured skew.
	MaxSkew = 5 * time.Minute
	// DefaultRefreshMinInterval is the least time between two fetches of
	// the key set: a token with an unknown key id refetches it at most
	// this often.
	DefaultRefreshMinInterval = 10 * time.Second
	// DefaultFetchTimeout bounds one fetch of the discovery document or
	// the key set.
	DefaultFetchTimeout = 10 * time.Second
	// DefaultMaxResponseBytes caps a fetched discovery document or key
	// set.
	DefaultMaxResponseBytes = 1 << 20
	// MaxClaims caps how many claims a principal may carry.
	MaxClaims = 32
)

// DefaultAlgorithms are the signature algorithms accepted when none are
// configured.
var DefaultAlgorithms = []string{"RS256", "ES256"}

// asymmetric are the algorithms a configuration may allow: public-key
// signatures only. HMAC (HS256, HS384, HS512) is refused: its key is a
// shared secret, and a verifier holding the issuer's public key would
// accept a token "signed" with that public key. none is never allowed.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OIDCConfig configures JWT bearer-token authentication. Errors of
// Validate and NewOIDC name fields by their config keys (auth.oidc.*).
type OIDCConfig struct {
	// Issuer is the issuer URL (issuer): https, or http on a loopback
	// address; its discovery document is at
	// Issuer/.well-known/openid-configuration and must name the same
	// issuer. Tokens' iss must equal it.
	Issuer string
	// Audiences (audiences): a token's aud must hold at least one.
	// Required.
	Audiences []string
	// Scopes (auth.resource.scopes_required) are the scopes a token
	// must grant, every one, in its scope claim (space-separated, RFC
	// 9068 §2.2.3) or its scp claim (a list or a string); a token
	// without them is refused with CodeInsufficientScope. Empty: none.
	Scopes []string
	// Algorithms (algorithms) are the accepted signature algorithms;
	// empty is DefaultAlgorithms. Only asymmetric ones are allowed.
	Algorithms []string
	// Skew (skew) is the clock skew allowed on exp and nbf: 0 is
	// DefaultSkew, at most MaxSkew.
	Skew time.Duration
	// Claims (claims) name the claims copied into the principal; others
	// are dropped. At most MaxClaims. The principal's JSON is bounded by
	// abi.MaxPrincipalBytes: a token whose would exceed it is refused.
	Claims []string
	// RefreshMinInterval (jwks_refresh_min_interval) is the least time
	// between two key-set fetches; 0 is DefaultRefreshMinInterval, 1s to
	// 1h.
	RefreshMinInterval time.Duration
	// FetchTimeout bounds each fetch; 0 is DefaultFetchTimeout.
	FetchTimeout time.Duration
	// MaxResponseBytes caps each fetched document; 0 is
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// HTTPClient makes the fetches; nil is a client of its own. Its
	// transport is wrapped to cap responses; its Timeout is replaced by
	// FetchTimeout.
	HTTPClient *http.Client
	// Now is the clock tokens are checked against; nil is time.Now.
	Now func() time.Time
}

// Validate checks c and returns it with defaults filled in. An error wraps
// ErrConfig and names the key.
func (c OIDCConfig) Validate() (OIDCConfig, error) {
	bad := func(key, format string, args ...any) (OIDCConfig, error) {
		return OIDCConfig{}, fmt.Errorf("%w: %s: %s", ErrConfig, key, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(c.Issuer)
	switch {
	case c.Issuer == "":
		return bad("issuer", "required")
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return bad("issuer", "%q is not an absolute URL without user, query or fragment", c.Issuer)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return bad("issuer", "%q: http only on a loopback address; use https", c.Issuer)
	case u.Scheme != "https" && u.Scheme != "http":
		return bad("issuer", "%q: want an https URL", c.Issuer)
	}
	if len(c.Audiences) == 0 {
		return bad("audiences", "at least one is required: a token for another service must not be accepted here")
	}
	for _, a := range c.Audiences {
		if strings.TrimSpace(a) == "" {
			return bad("audiences", "an empty audience")
		}
	}
	for _, s := range c.Scopes {
		if err := CheckScope(s); err != nil {
			return bad("scopes", "%s", err)
		}
	}
	if len(c.Algorithms) == 0 {
		c.Algorithms = slices.Clone(DefaultAlgorithms)
	}
	for _, a := range c.Algorithms {
		switch {
		case strings.EqualFold(a, "none"):
			return bad("algorithms", "none: unsigned tokens are never accepted")
		case strings.HasPrefix(strings.ToUpper(a), "HS"):
			return bad("algorithms", "%s: HMAC algorithms are refused (a public key must never serve as an HMAC secret); want one of %s", a, strings.Join(asymmetric, ", "))
		case !slices.Contains(asymmetric, a):
			return bad("algorithms", "%q: want one of %s", a, strings.Join(asymmetric, ", "))
		}
	}
	switch {
	case c.Skew == 0:
		c.Skew = DefaultSkew
	case c.Skew < 0 || c.Skew > MaxSkew:
		return bad("skew", "%s: want 0s to %s", c.Skew, MaxSkew)
	}
	if len(c.Claims) > MaxClaims {
		return bad("claims", "%d names; at most %d", len(c.Claims), MaxClaims)
	}
	for _, n := range c.Claims {
		if n == "" || len(n) > 64 {
			return bad("claims", "%q: want 1 to 64 bytes", n)
		}
	}
	switch {
	case c.RefreshMinInterval == 0:
		c.RefreshMinInterval = DefaultRefreshMinInterval
	case c.RefreshMinInterval < time.Second || c.RefreshMinInterval > time.Hour:
		return bad("jwks_refresh_min_interval", "%s: want 1s to 1h", c.RefreshMinInterval)
	}
	switch {
	case c.FetchTimeout == 0:
		c.FetchTimeout = DefaultFetchTimeout
	case c.FetchTimeout < 0 || c.FetchTimeout > time.Minute:
		return bad("fetch_timeout", "%s: want 1ms to 1m", c.FetchTimeout)
	}
	switch {
	case c.MaxResponseBytes == 0:
		c.MaxResponseBytes = DefaultMaxResponseBytes
	case c.MaxResponseBytes < 0:
		return bad("max_response_bytes", "%d: want a positive size", c.MaxResponseBytes)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OIDC authenticates JWT bearer tokens of one issuer.
type OIDC struct {
	cfg      OIDCConfig
	keys     *keySet
	verifier *oidc.IDTokenVerifier
}

// NewOIDC validates cfg, fetches the issuer's discovery document and key
// set (each within cfg.FetchTimeout, and within ctx), and returns the
// source. An error wraps ErrConfig or ErrDiscovery.
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	client := boundedClient(cfg.HTTPClient, cfg.FetchTimeout, cfg.MaxResponseBytes)
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, client), cfg.FetchTimeout)
	defer cancel()
	prov, err := oidc.NewProvider(dctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: issuer %s: %w", ErrDiscovery, cfg.Issuer, err)
	}
	var meta struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := prov.Claims(&meta); err != nil || meta.JWKSURI == "" {
		return nil, fmt.Errorf("%w: issuer %s: the discovery document names no jwks_uri", ErrDiscovery, cfg.Issuer)
	}
	if u, err := url.Parse(meta.JWKSURI); err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		return nil, fmt.Errorf("%w: issuer %s: jwks_uri %q is not an https URL", ErrDiscovery, cfg.Issuer, meta.JWKSURI)
	}
	ks := &keySet{url: meta.JWKSURI, client: client, minInterval: cfg.RefreshMinInterval, timeout: cfg.FetchTimeout,
		now: cfg.Now, algs: cfg.Algorithms}
	if _, err := ks.refresh(ctx); err != nil {
		return nil, fmt.Errorf("%w: issuer %s: %w", ErrDiscovery, cfg.Issuer, err)
	}
	// The verifier checks exp against a clock skew behind (so a token
	// expired less than Skew ago passes); nbf is checked here, with the
	// same skew, because the library's own nbf leeway is fixed at 5m.
	skew := cfg.Skew
	v := oidc.NewVerifier(cfg.Issuer, ks, &oidc.Config{
		SkipClientIDCheck:    true, // audiences are checked below: several may be accepted
		SupportedSigningAlgs: cfg.Algorithms,
		Now:                  func() time.Time { return cfg.Now().Add(-skew) },
	})
	return &OIDC{cfg: cfg, keys: ks, verifier: v}, nil
}

// Authenticate implements Authenticator. A bearer token that is not shaped
// like a JWS (three dot-separated parts) is left to the next source.
func (o *OIDC) Authenticate(r *http.Request) (*abi.Principal, error) {
	tok, ok := Bearer(r)
	if !ok {
		return nil, noCredential(abi.MethodOIDC, "no bearer token")
	}
	if strings.Count(tok, ".") != 2 {
		return nil, noCredential(abi.MethodOIDC, "the bearer token is not a JWT")
	}
	p, err := o.verify(r, tok)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code != "" {
			e.Issuer, e.KeyID = unverifiedIDs(tok)
		}
		return nil, err
	}
	return p, nil
}

// verify is Authenticate's verification of tok, a JWS.
func (o *OIDC) verify(r *http.Request, tok string) (*abi.Principal, error) {
	idt, err := o.verifier.Verify(r.Context(), tok)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return nil, invalid(abi.MethodOIDC, "the token has expired", nil)
		}
		return nil, invalid(abi.MethodOIDC, "the token is not valid", err)
	}
	if !slices.ContainsFunc(idt.Audience, func(a string) bool { return slices.Contains(o.cfg.Audiences, a) }) {
		return nil, invalid(abi.MethodOIDC, "the token is not for this audience", fmt.Errorf("its audience is %s", logText(strings.Join(idt.Audience, ", "))))
	}
	var raw map[string]json.RawMessage
	if err := idt.Claims(&raw); err != nil {
		return nil, invalid(abi.MethodOIDC, "the token's claims do not decode", err)
	}
	if nbf, ok := raw["nbf"]; ok {
		f, err := strconv.ParseFloat(string(nbf), 64)
		if err != nil {
			return nil, invalid(abi.MethodOIDC, "the token's nbf is not a number", nil)
		}
		if limit := o.cfg.Now().Add(o.cfg.Skew); f > float64(limit.UnixNano())/1e9 {
			return nil, invalid(abi.MethodOIDC, "the token is not valid yet (nbf)", nil)
		}
	}
	if len(o.cfg.Scopes) > 0 && !hasScopes(tokenScopes(raw), o.cfg.Scopes) {
		return nil, &Error{Method: abi.MethodOIDC, Code: CodeInsufficientScope, Scope: strings.Join(o.cfg.Scopes, " "),
			Reason: "the token does not grant the scope " + strings.Join(o.cfg.Scopes, " ")}
	}
	p := &abi.Principal{Issuer: idt.Issuer, Subject: idt.Subject, Method: abi.MethodOIDC}
	for _, name := range o.cfg.Claims {
		v, ok := raw[name]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber() // digit for digit into the decision record
		var val any
		if err := dec.Decode(&val); err != nil {
			return nil, invalid(abi.MethodOIDC, "claim "+name+" does not decode", err)
		}
		if p.Claims == nil {
			p.Claims = map[string]any{}
		}
		p.Claims[name] = val
	}
	return bounded(abi.MethodOIDC, p)
}

// tokenScopes are the scopes a verified token's claims grant: scope, a
// space-separated string (RFC 9068 §2.2.3, RFC 8693 §4.2), else scp, a
// list of strings or one space-separated string (as some issuers write
// it). A claim of another shape grants nothing.
func tokenScopes(raw map[string]json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw["scope"], &s) == nil && s != "" {
		return strings.Fields(s)
	}
	var list []string
	if json.Unmarshal(raw["scp"], &list) == nil {
		return list
	}
	if json.Unmarshal(raw["scp"], &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

// unverifiedIDs reads a refused JWT's iss claim and kid header without
// verifying anything, for the log: "" for what does not parse.
func unverifiedIDs(tok string) (iss, kid string) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", ""
	}
	field := func(seg, name string) string {
		if len(seg) > 8<<10 {
			return ""
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
		if err != nil {
			return ""
		}
		var m map[string]json.RawMessage
		var v string
		if json.Unmarshal(b, &m) != nil || json.Unmarshal(m[name], &v) != nil {
			return ""
		}
		return logText(v)
	}
	return field(parts[1], "iss"), field(parts[0], "kid")
}

// logText is s, caller-supplied, fit for a log line: printable ASCII,
// at most 200 bytes.
func logText(s string) string {
	s = quotable(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// boundedClient is base (nil: a new client) with every response capped at
// maxBytes and every request at timeout.
func boundedClient(base *http.Client, timeout time.Duration, maxBytes int64) *http.Client {
	c := &http.Client{}
	if base != nil {
		cp := *base
		c = &cp
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = capTransport{rt, maxBytes}
	c.Timeout = timeout
	return c
}

// capTransport caps response bodies with http.MaxBytesReader: reading
// past max fails (*http.MaxBytesError), so a truncated document is never
// parsed as if whole.
type capTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t capTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w (Content-Length %d, at most %d)", r.URL.Redacted(), errTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = http.MaxBytesReader(nil, resp.Body, t.max)
	return resp, nil
}

var errTooLarge = errors.New("response too large")
