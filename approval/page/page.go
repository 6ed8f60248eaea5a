// Package page is the approval page: the http.Handler where approvers
// sign in (a pasted approver token, or OpenID Connect), see the calls
// waiting for a person with every argument, and approve or deny them
// through approval.Desk. Front ends mount it under a prefix (gatehost
// serve, gatehost mcp --listen).
//
// It is server-rendered (html/template, templates and static files
// embedded) and works without JavaScript; one static script keeps the
// list current through Server-Sent Events. Every POST carries the
// session's CSRF token and must come from the page's own origin; every
// response carries a strict Content-Security-Policy (docs/APPROVALS.md).
package page

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
)

// Options configure the page.
type Options struct {
	// Desk holds the requests. Required.
	Desk *approval.Desk
	// Prefix is the path the handler is mounted at, such as "/approvals":
	// it serves Prefix+"/", Prefix+"/requests/{id}" and the rest below
	// Prefix. Empty is the root.
	Prefix string
	// Token is the token sign-in: it returns the principal of a pasted
	// approver token, or nil. Nil disables token sign-in.
	Token func(given string) *abi.Principal
	// OIDC is the OpenID Connect sign-in; nil disables it.
	OIDC *OIDC
	// CookieKey is the HMAC-SHA256 key of the session cookie. Nil is a
	// random key per process: sign-ins then hold only on the replica that
	// made them, so set it (the same on every replica) for a fleet.
	CookieKey []byte
	// SessionTTL is how long a sign-in lasts; 0 is DefaultSessionTTL.
	SessionTTL time.Duration
	// Secure marks the cookies Secure (the page is served over https).
	Secure bool
	// Logger receives a line per sign-in, decision and refusal; nil
	// discards.
	Logger *slog.Logger
	// Now is the page's clock; nil is time.Now.
	Now func() time.Time
}

// OIDC configures the OpenID Connect sign-in: the authorization-code flow
// with PKCE (RFC 7636, S256), state and nonce.
type OIDC struct {
	// Issuer is the provider's issuer URL (discovery).
	Issuer string
	// ClientID and ClientSecret are the page's client; no secret is a
	// public client (PKCE alone).
	ClientID     string
	ClientSecret string
	// RedirectURL is the absolute URL of Prefix+"/callback" as the
	// browser reaches it, registered with the provider.
	RedirectURL string
	// Scopes are requested besides "openid"; nil is "profile" and
	// "email".
	Scopes []string
	// Claims name the ID token's claims copied into the principal (for
	// approvers matched by claim, such as groups).
	Claims []string
	// HTTPClient reaches the provider; nil is http.DefaultClient.
	HTTPClient *http.Client
}

// prefixRE is the form of a prefix: path segments of unreserved
// characters (a pattern of http.ServeMux, and a cookie path, as it is).
var prefixRE = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)*$`)

// DefaultSessionTTL is how long a sign-in lasts by default.
const DefaultSessionTTL = 8 * time.Hour

// Bounds of what the page reads.
const (
	// maxForm bounds a POST body.
	maxForm = 64 << 10
	// heartbeat keeps an idle event stream open through proxies.
	heartbeat = 20 * time.Second
	// The list shows at most listFull requests whole, with at most
	// listBytes of arguments and diffs in all as rendered; the rest are
	// named, each shown whole on its own page.
	listFull  = 50
	listBytes = 2 << 20
	// settleMillis is how long after a live update moved or added a
	// decision button page.js refuses a click on it: about the time a
	// person takes to see that the list moved and aim again.
	settleMillis = 1000
	// Token sign-ins, so that a guess at a token costs the guesser time:
	// each client tokenBurst at once, then one per tokenInterval, the
	// guessing bound; all together tokenAllBurst, then one per
	// tokenAllInterval, a ceiling on the work that eighty clients at
	// their own rate do not reach; clients are remembered up to
	// tokenClients.
	tokenBurst       = 10
	tokenInterval    = 4 * time.Second
	tokenAllBurst    = 600
	tokenAllInterval = 50 * time.Millisecond
	tokenClients     = 4096
)

// CSP is the Content-Security-Policy of every response.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

type handler struct {
	o      Options
	desk   *approval.Desk
	prefix string
	tmpl   *template.Template
	static http.Handler
	cookie cookies
	oidc   *oidcFlow
	// tries bounds token sign-ins, per client and process-wide.
	tries *throttle
	mux   *http.ServeMux
}

// New returns the page. ctx bounds the OIDC provider's discovery, done
// here.
func New(ctx context.Context, o Options) (http.Handler, error) {
	if o.Desk == nil {
		return nil, errors.New("approval page: no desk")
	}
	prefix := strings.TrimRight(o.Prefix, "/")
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("approval page: prefix %q: want a path such as /approvals", o.Prefix)
	}
	if o.Token == nil && o.OIDC == nil {
		return nil, errors.New("approval page: no sign-in: set a token sign-in, OIDC, or both")
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key := o.CookieKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	} else if len(key) < 32 {
		return nil, fmt.Errorf("approval page: cookie key is %d bytes: want at least 32", len(key))
	}
	h := &handler{o: o, desk: o.Desk, prefix: prefix, tries: &throttle{burst: tokenBurst, interval: tokenInterval,
		allBurst: tokenAllBurst, allInterval: tokenAllInterval, maxClients: tokenClients}}
	h.cookie = cookies{key: key, path: prefix + "/", secure: o.Secure, ttl: o.SessionTTL, now: o.Now}
	if o.OIDC != nil {
		f, err := newOIDC(ctx, *o.OIDC, prefix)
		if err != nil {
			return nil, err
		}
		h.oidc = f
	}
	tmpl, err := template.New("page").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("approval page: templates: %w", err)
	}
	h.tmpl = tmpl
	sub, _ := fs.Sub(staticFS, "static")
	h.static = http.StripPrefix(prefix+"/static/", http.FileServerFS(sub))

	m := http.NewServeMux()
	p := prefix
	m.HandleFunc("GET "+p+"/{$}", h.list)
	m.HandleFunc("GET "+p+"/requests/{id}", h.one)
	m.HandleFunc("POST "+p+"/requests/{id}", h.decide)
	m.HandleFunc("GET "+p+"/events", h.events)
	m.HandleFunc("GET "+p+"/signin", h.signinPage)
	m.HandleFunc("POST "+p+"/signin/token", h.signinToken)
	m.HandleFunc("GET "+p+"/signin/oidc", h.signinOIDC)
	m.HandleFunc("GET "+p+"/callback", h.callback)
	m.HandleFunc("POST "+p+"/signout", h.signout)
	m.HandleFunc("GET "+p+"/static/{file}", func(w http.ResponseWriter, r *http.Request) {
		h.static.ServeHTTP(w, r)
	})
	if p != "" {
		m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusSeeOther)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, nil, http.StatusNotFound, "Not found", "There is no such page here.")
	})
	h.mux = m
	return h, nil
}

// ServeHTTP sets the security headers of every response, recovers from a
// panic, and routes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.o.Logger.Error("approval page: panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}()
	h.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether a POST comes from the page itself. A browser
// says where a request comes from in Sec-Fetch-Site; one too old for that
// sends Origin, which must name this host. (Because the page's
// Referrer-Policy is no-referrer, a same-origin form POST may carry
// "Origin: null": it is accepted only with Sec-Fetch-Site same-origin.)
// A client that sends neither is no browser a site could drive; the CSRF
// token still binds it.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && o != "null" && u.Host == r.Host
}

// readForm reads a POST's form, bounded, and checks its origin and CSRF
// token against the session s. It answers the refusal itself.
func (h *handler) readForm(w http.ResponseWriter, r *http.Request, s *session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, s, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return false
	}
	if !sameOrigin(r) {
		h.o.Logger.Warn("approval page: cross-site POST refused", "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		h.fail(w, r, s, http.StatusForbidden, "Refused", "This form was not sent from the approval page itself.")
		return false
	}
	if s == nil || !s.csrfOK(r.PostForm.Get("csrf")) {
		h.o.Logger.Warn("approval page: POST without a valid CSRF token refused", "path", r.URL.Path)
		h.fail(w, r, s, http.StatusForbidden, "Refused", "This form has expired or was not sent from the approval page. Reload the page and try again.")
		return false
	}
	return true
}
