// Package identity authenticates the callers of gatehost's HTTP front ends
// (gatehost serve, gatehost mcp --listen) and of an embedder's own: it
// turns a request's credential into an abi.Principal, which the host hands
// to every stage (abi/SPEC.md §5.3) and records with the decision.
//
// Three sources are provided, each an Authenticator:
//
//   - OIDC: a JWT bearer token verified against the issuer's published keys
//     (OpenID Connect discovery and JWKS, github.com/coreos/go-oidc/v3):
//     issuer, audience, exp and nbf with a bounded clock skew, an
//     algorithm allow-list, key rotation with a rate-limited refresh, and
//     bounded fetches;
//   - MTLS: a TLS client certificate verified against a CA bundle;
//   - TokenSource: the operator's static bearer tokens (Tokens, read from
//     a token file by LoadTokens).
//
// Chain composes them in the operator's order. Every refusal is an *Error
// wrapping ErrUnauthenticated, which an HTTP front end answers with 401 and
// the RFC 6750 challenge Challenge gives, before any decision is made. A
// front end that is an OAuth 2.0 protected resource (Resource: RFC 9728
// metadata, the MCP authorization spec) names its metadata in the
// challenge (ResourceChallenge), and answers a token without the scope it
// needs with 403 insufficient_scope (RequireResource). No error, log line
// or challenge ever holds the credential itself.
package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// Authenticator authenticates one HTTP request.
//
// It returns the caller's principal, or an error: one wrapping
// ErrNoCredential when the request carries no credential of the kind it
// reads (Chain then asks the next source), any other error (an *Error
// wrapping ErrUnauthenticated) when the request carries one and it is
// refused. It never returns (nil, nil). It must be safe for concurrent use.
type Authenticator interface {
	Authenticate(r *http.Request) (*abi.Principal, error)
}

var (
	// ErrUnauthenticated: the request is not authenticated. Every error
	// of this package's authenticators wraps it.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNoCredential: the request carries no credential the source
	// reads (no bearer token, a token that is not one of the source's,
	// no client certificate). It also wraps ErrUnauthenticated.
	ErrNoCredential = errors.New("no credential")
	// ErrConfig: an authenticator's configuration is invalid. The error
	// names the key (the config file's name for it, such as
	// "algorithms").
	ErrConfig = errors.New("invalid identity configuration")
	// ErrDiscovery: the OIDC issuer's discovery document or key set
	// could not be fetched or read at start.
	ErrDiscovery = errors.New("oidc discovery failed")
)

// RFC 6750 §3.1 error codes a challenge carries.
const (
	// CodeInvalidToken: a credential was presented and refused.
	CodeInvalidToken = "invalid_token"
	// CodeInsufficientScope: a valid token lacks a scope the request
	// needs; answered with 403, the challenge naming the scope (step-up).
	CodeInsufficientScope = "insufficient_scope"
)

// Error is a refused request. It wraps ErrUnauthenticated, and Err.
type Error struct {
	// Method is the source that refused: abi.MethodOIDC, MethodMTLS,
	// MethodToken, or "" for the chain as a whole.
	Method string
	// Code is CodeInvalidToken when a credential was presented and
	// refused, "" when none was (RFC 6750 §3.1: the challenge then
	// carries no error code).
	Code string
	// Reason says why, for logs and the challenge's error_description.
	// It never holds the credential.
	Reason string
	// Err is the cause, if any (ErrNoCredential when none was presented).
	Err error
	// Scope, with CodeInsufficientScope, is the scopes the request
	// needs, space-separated.
	Scope string
	// Issuer and KeyID are the refused JWT's iss claim and kid header as
	// read without verification, when they parse: for the log only (they
	// are whatever the caller sent), never the challenge.
	Issuer, KeyID string
}

func (e *Error) Error() string {
	s := "identity: "
	if e.Method != "" {
		s += e.Method + ": "
	}
	s += e.Reason
	if e.Err != nil && !errors.Is(e.Err, ErrNoCredential) {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() []error { return []error{ErrUnauthenticated, e.Err} }

// noCredential is the refusal of a source that found nothing of its kind.
func noCredential(method, reason string) *Error {
	return &Error{Method: method, Reason: reason, Err: ErrNoCredential}
}

// invalid is the refusal of a credential that was presented.
func invalid(method, reason string, cause error) *Error {
	return &Error{Method: method, Code: CodeInvalidToken, Reason: reason, Err: cause}
}

// Challenge is the WWW-Authenticate value of a 401 answering err: a Bearer
// challenge (RFC 6750 §3) in realm, with error="invalid_token" and an
// error_description when a credential was refused.
func Challenge(realm string, err error) string { return ResourceChallenge(realm, nil, err) }

// ResourceChallenge is Challenge for a protected resource (res; nil is
// none): it names the resource's metadata URL in resource_metadata (RFC
// 9728 §5.1) and the scopes it needs in scope (RFC 6750 §3). For
// insufficient_scope (a 403, Status) scope is the scopes the refusal
// names.
func ResourceChallenge(realm string, res *Resource, err error) string {
	v := fmt.Sprintf("Bearer realm=%q", realm)
	var e *Error
	errors.As(err, &e)
	scope := ""
	if res != nil {
		v += fmt.Sprintf(", resource_metadata=%q", res.MetadataURL())
		scope = strings.Join(res.Scopes, " ")
	}
	if e != nil && e.Code == CodeInsufficientScope && e.Scope != "" {
		scope = e.Scope
	}
	if e != nil && e.Code != "" {
		v += fmt.Sprintf(", error=%q, error_description=%q", e.Code, quotable(e.Reason))
	}
	if scope != "" {
		v += fmt.Sprintf(", scope=%q", quotable(scope))
	}
	return v
}

// Status is the HTTP status answering err: 403 for insufficient_scope
// (RFC 6750 §3.1), 401 for every other refusal.
func Status(err error) int {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeInsufficientScope {
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}

// quotable keeps what RFC 6750 §3 allows in error_description: printable
// ASCII without " and \.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}

// Require answers 401 with Challenge(realm, err) and a plain-text body to
// a request a refuses, and serves the others with the principal in their
// context (FromContext). Nothing of the credential is written. Refusals
// are logged to slog.Default() (LogRefusal); RequireLogged names the
// logger.
func Require(a Authenticator, realm string, next http.Handler) http.Handler {
	return RequireLogged(a, realm, nil, next)
}

// RequireLogged is Require logging each refusal to logger (nil:
// slog.Default()) with LogRefusal.
func RequireLogged(a Authenticator, realm string, logger *slog.Logger, next http.Handler) http.Handler {
	return RequireResource(a, realm, nil, logger, next)
}

// RequireResource is RequireLogged for a protected resource (res; nil is
// none): its challenges are ResourceChallenge's, and a token without the
// scope the resource needs is answered 403 (Status).
func RequireResource(a Authenticator, realm string, res *Resource, logger *slog.Logger, next http.Handler) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err != nil {
			LogRefusal(r.Context(), logger, err, "remote", r.RemoteAddr, "path", r.URL.Path)
			w.Header().Set("WWW-Authenticate", ResourceChallenge(realm, res, err))
			status := Status(err)
			http.Error(w, strings.ToLower(http.StatusText(status))+": "+quotable(reasonOf(err)), status)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// LogRefusal logs why a request was refused, for the operator: at info
// level when a credential was presented and refused ("identity: credential
// refused"), at debug level when none was ("identity: no credential"),
// with the source (method), the reason, the cause, and a refused JWT's
// issuer and key id when they parse, then attrs. The credential itself is
// never logged: the package's errors never hold it.
func LogRefusal(ctx context.Context, logger *slog.Logger, err error, attrs ...any) {
	var e *Error
	if !errors.As(err, &e) {
		logger.InfoContext(ctx, "identity: credential refused", append([]any{"err", err}, attrs...)...)
		return
	}
	level, msg := slog.LevelInfo, "identity: credential refused"
	if e.Code == "" {
		level, msg = slog.LevelDebug, "identity: no credential"
	}
	if !logger.Enabled(ctx, level) {
		return
	}
	args := []any{"method", e.Method, "reason", e.Reason}
	if e.Err != nil && !errors.Is(e.Err, ErrNoCredential) {
		args = append(args, "cause", e.Err.Error())
	}
	if e.Issuer != "" {
		args = append(args, "issuer", e.Issuer)
	}
	if e.KeyID != "" {
		args = append(args, "kid", e.KeyID)
	}
	logger.Log(ctx, level, msg, append(args, attrs...)...)
}

func reasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "not authenticated"
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (nil: none).
func WithPrincipal(ctx context.Context, p *abi.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal WithPrincipal put in ctx; false when
// there is none.
func FromContext(ctx context.Context) (*abi.Principal, bool) {
	p, _ := ctx.Value(principalKey{}).(*abi.Principal)
	return p, p != nil
}

// Chain returns an Authenticator that asks each of auths in order. The
// first to return a principal decides; the first to refuse a credential it
// reads (an error not wrapping ErrNoCredential) decides too, with that
// refusal. A request with an Authorization header is decided by it: a
// client certificate does not authenticate it, and when no source accepts
// the header's credential the request is refused with invalid_token. A
// request with no credential any source reads is refused with
// ErrNoCredential.
func Chain(auths ...Authenticator) Authenticator { return chain(auths) }

type chain []Authenticator

func (c chain) Authenticate(r *http.Request) (*abi.Principal, error) {
	header := r.Header.Get("Authorization") != ""
	for _, a := range c {
		p, err := a.Authenticate(r)
		switch {
		case err == nil && p == nil:
			return nil, invalid("", "an authenticator returned no principal", nil)
		case err == nil && header && p.Method == abi.MethodMTLS:
			continue // the header decides
		case err == nil:
			return p, nil
		case errors.Is(err, ErrNoCredential):
			continue
		case errors.Is(err, ErrUnauthenticated):
			return nil, err
		default:
			return nil, invalid("", "authentication failed", err)
		}
	}
	if header {
		return nil, invalid("", "no configured source accepts the Authorization header's credential", nil)
	}
	return nil, noCredential("", "a credential is required")
}

// Bearer is the token of the request's Authorization: Bearer header; the
// scheme matches without regard to case (RFC 7235 §2.1).
func Bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// bounded refuses a principal that the host would refuse: no subject, or
// over abi.MaxPrincipalBytes of JSON.
func bounded(method string, p *abi.Principal) (*abi.Principal, error) {
	if p.Subject == "" {
		return nil, invalid(method, "the credential names no subject", nil)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, invalid(method, "the principal does not encode as JSON", err)
	}
	if len(b) > abi.MaxPrincipalBytes {
		return nil, invalid(method, fmt.Sprintf("the principal is %d bytes of JSON; at most %d", len(b), abi.MaxPrincipalBytes), nil)
	}
	return p, nil
}
