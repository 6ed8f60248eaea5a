package mcpgateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
)

// Credentials for remote (Streamable HTTP) upstreams: static headers whose
// values are secrets, and per-caller token exchange (RFC 8693). See
// docs/MCP-GATEWAY.md "Credentials for remote upstreams".

// Secret is a credential's value. It prints, logs and encodes as
// "[redacted]"; only string(s) is the value.
type Secret string

const redacted = "[redacted]"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// Header is a header the gateway sets on every HTTP request to a url
// upstream.
type Header struct {
	// Name is an HTTP header name (CheckHeaderName).
	Name string
	// Value is sent as is: no CR, LF or NUL.
	Value Secret
}

// TokenExchange makes the gateway obtain, for each caller, a token for the
// upstream by OAuth 2.0 Token Exchange (RFC 8693) with the caller's own
// bearer token as the subject token, and send it as Authorization: Bearer.
// The caller's token is never sent to the upstream.
type TokenExchange struct {
	// TokenEndpoint is the authorization server's token endpoint: https,
	// or http on a loopback host.
	TokenEndpoint string
	// ClientID and ClientSecret authenticate the gateway to the token
	// endpoint (HTTP Basic, RFC 6749 §2.3.1).
	ClientID     string
	ClientSecret Secret
	// Audience, Resource and Scopes are the request's audience, resource
	// and scope parameters; empty ones are not sent.
	Audience, Resource string
	Scopes             []string
	// Timeout bounds one exchange; default DefaultTokenExchangeTimeout.
	Timeout time.Duration
}

const (
	// DefaultTokenExchangeTimeout bounds one token exchange.
	DefaultTokenExchangeTimeout = 10 * time.Second
	// TokenExchangeSkew: an exchanged token is used until its expiry
	// (expires_in) minus this, or minus half its lifetime when that is
	// shorter.
	TokenExchangeSkew = 30 * time.Second
	// DefaultExchangedLifetime is assumed when the token endpoint gives
	// no expires_in.
	DefaultExchangedLifetime = 60 * time.Second
	// maxExchangeAnswer bounds the token endpoint's answer.
	maxExchangeAnswer = 64 << 10
	// maxCachedTokens bounds the exchanged tokens one upstream keeps.
	maxCachedTokens = 4096
	// maxTokenBytes bounds an exchanged token.
	maxTokenBytes = 16 << 10
)

// RFC 8693 identifiers.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// ErrCredentials is wrapped by every error about an upstream's
// credentials: the caller presented no token to exchange, or the token
// endpoint refused or failed. The call it concerns is not sent.
var ErrCredentials = errors.New("upstream credentials")

// reservedHeaders are the headers the transport or the protocol owns.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Upgrade": true, "Te": true, "Trailer": true, "Accept": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
}

var tokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// CheckHeaderName refuses a name that is not an HTTP token (RFC 9110
// §5.1) or that names a header the transport or MCP sets (Host,
// Content-Length, Mcp-Session-Id, Mcp-Protocol-Version and the like).
func CheckHeaderName(name string) error {
	if !tokenRE.MatchString(name) {
		return fmt.Errorf("%q is not an HTTP header name (token characters only)", name)
	}
	if reservedHeaders[http.CanonicalHeaderKey(name)] {
		return fmt.Errorf("%s is set by the transport or the protocol, not by configuration", http.CanonicalHeaderKey(name))
	}
	return nil
}

// validHeaderValue: visible ASCII, spaces and tabs (no CR, LF, NUL).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// checkCredentials checks u's headers and token exchange; f is u's field
// path.
func checkCredentials(f string, u *Upstream) *OptionsError {
	bad := func(field, format string, args ...any) *OptionsError {
		return &OptionsError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if len(u.Command) > 0 {
		if len(u.Headers) > 0 {
			return bad(f+".headers", "only a url upstream takes headers")
		}
		if u.TokenExchange != nil {
			return bad(f+".token_exchange", "only a url upstream takes token_exchange")
		}
		return nil
	}
	seen := map[string]bool{}
	for i, h := range u.Headers {
		hf := fmt.Sprintf("%s.headers[%d]", f, i)
		if err := CheckHeaderName(h.Name); err != nil {
			return bad(hf, "%v", err)
		}
		k := http.CanonicalHeaderKey(h.Name)
		if seen[k] {
			return bad(hf, "%s is given twice", k)
		}
		seen[k] = true
		if h.Value == "" || !validHeaderValue(string(h.Value)) {
			return bad(hf, "the value of %s is empty or holds a control character", k)
		}
		if k == "Authorization" && u.TokenExchange != nil {
			return bad(hf, "Authorization is set by token_exchange; remove one")
		}
	}
	if x := u.TokenExchange; x != nil {
		tf := f + ".token_exchange"
		e, err := url.Parse(x.TokenEndpoint)
		switch {
		case err != nil || e.Host == "" || e.User != nil || e.Fragment != "" || (e.Scheme != "https" && e.Scheme != "http"):
			return bad(tf+".token_endpoint", "want an absolute http(s) URL without user info or fragment")
		case e.Scheme == "http" && !loopbackHost(e.Hostname()):
			return bad(tf+".token_endpoint", "http only on a loopback host; use https")
		case x.ClientID == "":
			return bad(tf+".client_id", "required")
		case x.ClientSecret == "":
			return bad(tf+".client_secret", "required")
		case x.Timeout < 0:
			return bad(tf+".timeout", "negative duration %s", x.Timeout)
		}
		for i, s := range x.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\"\\") || !validHeaderValue(s) {
				return bad(fmt.Sprintf("%s.scopes[%d]", tf, i), "%q is not a scope token", s)
			}
		}
	}
	return nil
}

// CheckCredentials checks u's Headers and TokenExchange as New does; an
// *OptionsError's Field is relative to the upstream (headers[0],
// token_exchange.client_id).
func CheckCredentials(u Upstream) error {
	if err := checkCredentials("", &u); err != nil {
		err.Field = strings.TrimPrefix(err.Field, ".")
		return err
	}
	return nil
}

// credsOf is upstream idx's current credentials.
func (g *Gateway) credsOf(idx int) *upcreds { return (*g.creds.Load())[idx] }

// SetCredentials replaces the credentials of the upstreams named in ups
// (their Headers and TokenExchange, which an upstream keeps having or not
// having; other fields are not read): a config
// reload's secrets, read again. The upstreams' exchanged tokens are
// dropped, so each caller's next request exchanges anew. Nothing changes
// when an upstream is unknown or its credentials are refused.
func (g *Gateway) SetCredentials(ups []Upstream) error {
	next := slices.Clone(*g.creds.Load())
	for _, u := range ups {
		i := slices.IndexFunc(g.opts.Upstreams, func(o Upstream) bool { return o.Name == u.Name })
		if i < 0 {
			return &OptionsError{Field: "upstreams", Reason: fmt.Sprintf("%q is not an upstream of this gateway", u.Name)}
		}
		if (u.TokenExchange != nil) != (g.opts.Upstreams[i].TokenExchange != nil) {
			// Callers' tokens are kept only when New saw token exchange.
			return &OptionsError{Field: fmt.Sprintf("upstreams[%d].token_exchange", i), Reason: "added or removed; a new gateway changes that"}
		}
		u.Command, u.URL = g.opts.Upstreams[i].Command, g.opts.Upstreams[i].URL
		if err := checkCredentials(fmt.Sprintf("upstreams[%d]", i), &u); err != nil {
			return err
		}
		next[i] = newUpcreds(u, g.exchangeNow)
	}
	g.creds.Store(&next)
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// upcreds are one upstream's credentials.
type upcreds struct {
	headers http.Header // static, canonical names
	ex      *exchanger  // nil without token exchange
}

func newUpcreds(u Upstream, now func() time.Time) *upcreds {
	c := &upcreds{headers: http.Header{}}
	for _, h := range u.Headers {
		c.headers.Set(h.Name, string(h.Value))
	}
	if u.TokenExchange != nil {
		x := *u.TokenExchange
		if x.Timeout == 0 {
			x.Timeout = DefaultTokenExchangeTimeout
		}
		c.ex = &exchanger{upstream: u.Name, cfg: x, now: now,
			client: &http.Client{Timeout: x.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // a redirected exchange is refused, not followed with the credentials
			}},
			cache: map[[32]byte]exchanged{}, flights: map[[32]byte]*flight{}}
	}
	return c
}

// exchanger obtains and caches one upstream's exchanged tokens, per
// subject token (by its SHA-256: the subject token itself is not kept).
type exchanger struct {
	upstream string
	cfg      TokenExchange
	client   *http.Client
	now      func() time.Time

	mu      sync.Mutex
	cache   map[[32]byte]exchanged
	flights map[[32]byte]*flight
}

type exchanged struct {
	token   string
	renewAt time.Time
}

// flight is one exchange in progress, which callers with the same subject
// token wait for.
type flight struct {
	done  chan struct{}
	token string
	err   error
}

// token returns a token for subject: the cached one until its renewal
// time, else a new exchange (one at a time per subject).
func (x *exchanger) token(ctx context.Context, subject string) (string, error) {
	key := sha256.Sum256([]byte(subject))
	x.mu.Lock()
	if e, ok := x.cache[key]; ok && x.now().Before(e.renewAt) {
		x.mu.Unlock()
		return e.token, nil
	}
	fl, ok := x.flights[key]
	if !ok {
		fl = &flight{done: make(chan struct{})}
		x.flights[key] = fl
		x.mu.Unlock()
		go x.run(key, subject, fl)
	} else {
		x.mu.Unlock()
	}
	select {
	case <-fl.done:
		return fl.token, fl.err
	case <-ctx.Done():
		return "", fmt.Errorf("%w: upstream %s: token exchange: %w", ErrCredentials, x.upstream, context.Cause(ctx))
	}
}

// run exchanges subject and files the result; it is bounded by the
// exchange timeout, not by the context of whoever started it.
func (x *exchanger) run(key [32]byte, subject string, fl *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), x.cfg.Timeout)
	defer cancel()
	tok, life, err := x.exchange(ctx, subject)
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.flights, key)
	if err != nil {
		fl.err = fmt.Errorf("%w: upstream %s: token exchange %w", ErrCredentials, x.upstream, err)
		delete(x.cache, key)
	} else {
		fl.token = tok
		if len(x.cache) >= maxCachedTokens {
			now := x.now()
			for k, e := range x.cache {
				if !now.Before(e.renewAt) {
					delete(x.cache, k)
				}
			}
			for k := range x.cache {
				if len(x.cache) < maxCachedTokens {
					break
				}
				delete(x.cache, k)
			}
		}
		x.cache[key] = exchanged{token: tok, renewAt: x.now().Add(life - min(TokenExchangeSkew, life/2))}
	}
	close(fl.done)
}

// exchangeError is a reason an exchange failed; it never holds a token.
type exchangeError string

func (e exchangeError) Error() string { return string(e) }

var errorCodeRE = regexp.MustCompile(`^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$`)

// exchange POSTs the RFC 8693 request and reads the answer: the token and
// how long it lives.
func (x *exchanger) exchange(ctx context.Context, subject string) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess},
	}
	if x.cfg.Audience != "" {
		form.Set("audience", x.cfg.Audience)
	}
	if x.cfg.Resource != "" {
		form.Set("resource", x.cfg.Resource)
	}
	if len(x.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(x.cfg.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.cfg.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, exchangeError("failed: the request could not be built")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: both are form-encoded before Basic encoding.
	req.SetBasicAuth(url.QueryEscape(x.cfg.ClientID), url.QueryEscape(string(x.cfg.ClientSecret)))
	resp, err := x.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return "", 0, exchangeError(fmt.Sprintf("failed: the token endpoint did not answer within %s", x.cfg.Timeout))
		}
		return "", 0, exchangeError("failed: the token endpoint could not be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeAnswer+1))
	if err != nil {
		return "", 0, exchangeError("failed: the token endpoint's answer could not be read")
	}
	if len(body) > maxExchangeAnswer {
		return "", 0, exchangeError(fmt.Sprintf("failed: the token endpoint answered over %d bytes", maxExchangeAnswer))
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		verb := "failed" // the endpoint's trouble, not a refusal of this caller
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			verb = "refused"
		}
		reason := fmt.Sprintf("%s: the token endpoint answered HTTP %d", verb, resp.StatusCode)
		if json.Unmarshal(body, &e) == nil && errorCodeRE.MatchString(e.Error) {
			reason += " " + e.Error
		}
		return "", 0, exchangeError(reason)
	}
	var a struct {
		AccessToken string          `json:"access_token"`
		TokenType   string          `json:"token_type"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return "", 0, exchangeError("failed: the token endpoint's answer is not a JSON object")
	}
	switch {
	case a.AccessToken == "":
		return "", 0, exchangeError("failed: the token endpoint's answer has no access_token")
	case len(a.AccessToken) > maxTokenBytes || !visibleASCII(a.AccessToken):
		return "", 0, exchangeError("failed: the token endpoint's access_token is not a usable bearer token")
	case !strings.EqualFold(a.TokenType, "Bearer") && !strings.EqualFold(a.TokenType, "N_A"):
		return "", 0, exchangeError(fmt.Sprintf("failed: token_type %q is not Bearer or N_A", clip(a.TokenType, 32)))
	}
	life := DefaultExchangedLifetime
	if len(a.ExpiresIn) > 0 && string(a.ExpiresIn) != "null" {
		var secs float64
		if json.Unmarshal(a.ExpiresIn, &secs) != nil || secs <= 0 {
			return "", 0, exchangeError("failed: the token endpoint's expires_in is not a positive number")
		}
		life = time.Duration(min(secs, 365*24*3600) * float64(time.Second))
	}
	return a.AccessToken, life, nil
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) > n || !visibleASCII(strings.ReplaceAll(s, " ", "_")) {
		return "(unprintable or long)"
	}
	return s
}

// callerToken is the bearer token of the HTTP request that delivered req,
// when an authentication that reads it (a token, OIDC) vouched for its
// principal.
func (g *Gateway) callerToken(req mcp.Request) (string, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return "", false
	}
	v, ok := g.principals.Load(extra.Header.Get(principalRefHeader))
	if !ok {
		return "", false
	}
	ref := v.(principalRef)
	return ref.token, ref.token != ""
}

// bearerOf is r's bearer token when the principal p was authenticated by
// it.
func bearerOf(r *http.Request, p *abi.Principal) string {
	if p == nil || (p.Method != abi.MethodToken && p.Method != abi.MethodOIDC) {
		return ""
	}
	tok, _ := identity.Bearer(r)
	return tok
}

// credTransport sets an upstream's credentials on each request to it, and
// bounds what the answer's body may hold (limit: messageLimit.boundBody).
type credTransport struct {
	c     *upconn
	base  http.RoundTripper
	limit *messageLimit
}

func (t credTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	cr := t.c.g.credsOf(t.c.idx)
	r2 := r.Clone(r.Context())
	for k, v := range cr.headers {
		r2.Header[k] = slices.Clone(v)
	}
	if cr.ex != nil {
		tok, err := t.c.exchanged(r.Context())
		if err != nil {
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return nil, err
		}
		r2.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := t.base.RoundTrip(r2)
	if err == nil {
		t.limit.boundBody(resp)
	}
	return resp, err
}

// exchanged is the session's token for the upstream (nil error and ""
// without token exchange).
func (c *upconn) exchanged(ctx context.Context) (string, error) {
	ex := c.g.credsOf(c.idx).ex
	if ex == nil {
		return "", nil
	}
	var subject *string
	if d := c.owner.Load(); d != nil {
		subject = d.subject.Load()
	}
	if subject == nil {
		return "", fmt.Errorf("%w: upstream %s takes a token exchanged for the caller's, and this session's caller presented no bearer token (stdio, or an anonymous caller)", ErrCredentials, c.u.Name)
	}
	return ex.token(ctx, *subject)
}

// authorize makes sure the upstream's credentials can be had before a
// call is sent: with token exchange, a token for this session's caller.
// A failure is logged and recorded; the call is not sent.
func (d *downstream) authorize(ctx context.Context, up *upconn, runID string) error {
	_, err := up.exchanged(ctx)
	if err == nil {
		return nil
	}
	d.g.opts.Logger.Warn("mcp gateway: upstream credentials refused a call", "upstream", up.u.Name,
		"session", d.sessionID(), "principal", principalLabel(d.principal), "run_id", runID, "reason", err)
	d.g.recordEdge(kindUpstreamCredentials, map[string]any{"upstream": up.u.Name, "session": d.sessionID(),
		"principal": principalLabel(d.principal), "run_id": runID, "reason": err.Error()})
	return err
}
