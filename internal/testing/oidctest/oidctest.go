// Package oidctest is an OpenID Connect provider for tests: discovery
// document (also as OAuth 2.0 authorization server metadata, RFC 8414),
// JWKS, dynamic client registration (RFC 7591), an authorization endpoint
// whose login page asks only for a username (a browser types it; a
// scripted user passes it as the username parameter of the GET), and a
// token endpoint that checks the client and the PKCE code verifier (RFC
// 7636) and signs ID and access tokens RS256. An access token's aud is the
// resource the client asked for (RFC 8707 resource indicators), its scope
// claim the scope granted. Users, their claims, clients and the default
// audiences of access tokens are configurable, so that it serves any test
// of an authorization-code flow: the approval page's sign-in, an MCP
// client's authorization.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// User is someone who can sign in: the username typed on the login page
// names them.
type User struct {
	// Subject is the sub claim; empty is the username.
	Subject string
	// Claims are added to the ID and access tokens (email, groups, …).
	Claims map[string]any
}

// Client is a registered OAuth client.
type Client struct {
	ID string
	// Secret authenticates a confidential client (HTTP Basic or
	// client_secret_post); empty is a public client, which must use PKCE.
	Secret string
	// RedirectURIs are the exact redirect URIs allowed; empty allows any.
	RedirectURIs []string
}

// Options configure a Provider.
type Options struct {
	Users   map[string]User
	Clients []Client
	// Audiences are the aud of access tokens; empty is the client id.
	Audiences []string
	// TTL is how long tokens last; 0 is an hour.
	TTL time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Provider is a running test provider on a loopback httptest server.
type Provider struct {
	// URL is the issuer URL (and the iss claim).
	URL string
	// KeyID is the kid of the signing key.
	KeyID string

	o      Options
	srv    *httptest.Server
	key    *rsa.PrivateKey
	signer jose.Signer

	mu         sync.Mutex
	codes      map[string]grant
	logins     []string
	registered []Client
}

type grant struct {
	client, redirect, challenge, method, nonce, scope, user, resource string
	expires                                                           time.Time
}

// New starts a provider; it stops at the end of the test.
func New(t testing.TB, o Options) *Provider {
	t.Helper()
	if o.TTL == 0 {
		o.TTL = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{o: o, key: key, KeyID: "oidctest-1", codes: map[string]grant{}}
	p.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), p.KeyID))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", p.discovery)
	mux.HandleFunc("POST /register", p.register)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorizeForm)
	mux.HandleFunc("POST /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// Client returns an HTTP client of the provider's server.
func (p *Provider) Client() *http.Client { return p.srv.Client() }

// Registered returns the clients registered through /register so far.
func (p *Provider) Registered() []Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.registered)
}

// Logins returns the usernames signed in so far, in order.
func (p *Provider) Logins() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.logins)
}

// Sign signs claims as a JWT with the provider's key (RS256), for tests
// that need a token the flow would not issue (expired, another audience).
func (p *Provider) Sign(claims map[string]any) string {
	s, err := jwt.Signed(p.signer).Claims(claims).Serialize()
	if err != nil {
		panic(err) // a map of JSON values always signs
	}
	return s
}

// Token returns an access token for user, as the token endpoint would
// issue it to client.
func (p *Provider) Token(client, user string) string {
	return p.Sign(p.claims(client, user, p.accessAudience(client), ""))
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/authorize",
		"token_endpoint":                        p.URL + "/token",
		"registration_endpoint":                 p.URL + "/register",
		"jwks_uri":                              p.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"scopes_supported":                      []string{"openid", "profile", "email"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: p.KeyID, Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Test provider: sign in</title></head>
<body><main><h1>Test provider</h1>
{{if .Error}}<p role="alert" id="error">{{.Error}}</p>{{end}}
<form method="post" action="/authorize">
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">
{{end}}<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" autofocus>
<button type="submit" id="signin">Sign in</button>
</form></main></body></html>
`))

// authorizeForm checks the request and shows the login form; with a
// username parameter (a scripted user) it signs them in at once, as the
// form's POST would.
func (p *Provider) authorizeForm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if msg := p.checkAuthorize(q); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	if q.Has("username") {
		p.signIn(w, r, q)
		return
	}
	params := map[string]string{}
	for _, k := range []string{"client_id", "redirect_uri", "response_type", "state", "nonce", "scope", "code_challenge", "code_challenge_method", "resource"} {
		params[k] = q.Get(k)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = loginPage.Execute(w, map[string]any{"Params": params})
}

func (p *Provider) checkAuthorize(q url.Values) string {
	c, ok := p.client(q.Get("client_id"))
	switch {
	case !ok:
		return "unknown client_id"
	case q.Get("response_type") != "code":
		return "response_type: want code"
	case len(c.RedirectURIs) > 0 && !slices.Contains(c.RedirectURIs, q.Get("redirect_uri")):
		return "redirect_uri not registered"
	case q.Get("redirect_uri") == "":
		return "no redirect_uri"
	case q.Get("code_challenge") != "" && q.Get("code_challenge_method") != "S256":
		return "code_challenge_method: want S256"
	case c.Secret == "" && q.Get("code_challenge") == "":
		return "a public client must use PKCE"
	case len(q["resource"]) > 1:
		return "invalid_target: one resource at a time"
	case q.Get("resource") != "" && !resourceURI(q.Get("resource")):
		return "invalid_target: resource is not an absolute URI without fragment"
	}
	return ""
}

// resourceURI reports whether s is a resource indicator RFC 8707 §2
// allows: an absolute URI without fragment.
func resourceURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.IsAbs() && u.Host != "" && u.Fragment == "" && !strings.Contains(s, "#")
}

// authorize signs the user in and redirects back with a code.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.PostForm
	if msg := p.checkAuthorize(q); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	p.signIn(w, r, q)
}

// signIn signs in the user q's username names, and redirects back with a
// code; an unknown user gets the form again.
func (p *Provider) signIn(w http.ResponseWriter, r *http.Request, q url.Values) {
	name := strings.TrimSpace(q.Get("username"))
	if _, ok := p.o.Users[name]; !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		params := map[string]string{}
		for k := range q {
			if k != "username" {
				params[k] = q.Get(k)
			}
		}
		_ = loginPage.Execute(w, map[string]any{"Params": params, "Error": "unknown user"})
		return
	}
	code := random()
	p.mu.Lock()
	p.codes[code] = grant{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		method: q.Get("code_challenge_method"), nonce: q.Get("nonce"), scope: q.Get("scope"), user: name,
		resource: q.Get("resource"), expires: p.o.Now().Add(time.Minute)}
	p.logins = append(p.logins, name)
	p.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := back.Query()
	v.Set("code", code)
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// token exchanges a code: the client authenticated, the redirect URI the
// same, the PKCE verifier matching the challenge.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "authorization_code" {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	c, ok := p.client(id)
	if !ok || subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) != 1 {
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	code := f.Get("code")
	p.mu.Lock()
	g, ok := p.codes[code]
	delete(p.codes, code) // single use, whatever follows
	p.mu.Unlock()
	switch {
	case !ok || g.client != id || p.o.Now().After(g.expires) || g.redirect != f.Get("redirect_uri"):
		tokenError(w, http.StatusBadRequest, "invalid_grant")
		return
	case g.challenge != "" && !verifierMatches(f.Get("code_verifier"), g.challenge):
		tokenError(w, http.StatusBadRequest, "invalid_grant")
		return
	case g.challenge == "" && f.Get("code_verifier") != "":
		tokenError(w, http.StatusBadRequest, "invalid_grant")
		return
	case f.Get("resource") != "" && f.Get("resource") != g.resource:
		tokenError(w, http.StatusBadRequest, "invalid_target")
		return
	}
	idClaims := p.claims(id, g.user, []string{id}, g.nonce)
	aud := p.accessAudience(id)
	if g.resource != "" {
		aud = []string{g.resource} // RFC 8707 §2.2: the token is for that resource only
	}
	access := p.claims(id, g.user, aud, "")
	if g.scope != "" {
		access["scope"] = g.scope
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": p.Sign(access),
		"token_type":   "Bearer",
		"expires_in":   int(p.o.TTL.Seconds()),
		"id_token":     p.Sign(idClaims),
		"scope":        g.scope,
	})
}

func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

func (p *Provider) accessAudience(client string) []string {
	if len(p.o.Audiences) > 0 {
		return p.o.Audiences
	}
	return []string{client}
}

func (p *Provider) claims(client, username string, aud []string, nonce string) map[string]any {
	u := p.o.Users[username]
	now := p.o.Now()
	c := maps.Clone(u.Claims)
	if c == nil {
		c = map[string]any{}
	}
	sub := u.Subject
	if sub == "" {
		sub = username
	}
	c["iss"], c["sub"], c["aud"], c["azp"] = p.URL, sub, aud, client
	c["iat"], c["exp"] = now.Unix(), now.Add(p.o.TTL).Unix()
	if nonce != "" {
		c["nonce"] = nonce
	}
	return c
}

func (p *Provider) client(id string) (Client, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range slices.Concat(p.o.Clients, p.registered) {
		if c.ID == id && id != "" {
			return c, true
		}
	}
	return Client{}, false
}

// register is dynamic client registration (RFC 7591): redirect URIs are
// required; token_endpoint_auth_method none makes a public client, any
// other a confidential one with a secret. The answer is the metadata sent,
// with the client's credentials.
func (p *Provider) register(w http.ResponseWriter, r *http.Request) {
	var md map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&md); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "not a JSON object"})
		return
	}
	raw, _ := md["redirect_uris"].([]any)
	var uris []string
	for _, u := range raw {
		s, _ := u.(string)
		if pu, err := url.Parse(s); err != nil || !pu.IsAbs() {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
			return
		}
		uris = append(uris, s)
	}
	if len(uris) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri", "error_description": "redirect_uris is required"})
		return
	}
	c := Client{ID: "dyn-" + random(), RedirectURIs: uris}
	if md["token_endpoint_auth_method"] == nil {
		md["token_endpoint_auth_method"] = "client_secret_basic"
	}
	if md["token_endpoint_auth_method"] != "none" {
		c.Secret = random()
		md["client_secret"], md["client_secret_expires_at"] = c.Secret, 0
	}
	md["client_id"], md["client_id_issued_at"] = c.ID, p.o.Now().Unix()
	p.mu.Lock()
	p.registered = append(p.registered, c)
	p.mu.Unlock()
	writeJSON(w, http.StatusCreated, md)
}

func tokenError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]string{"error": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
