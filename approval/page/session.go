package page

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// A session is what the signed session cookie holds: who signed in (nil
// before sign-in), the CSRF token of its forms, and its expiry.
type session struct {
	P    *abi.Principal `json:"p,omitempty"`
	CSRF string         `json:"c"`
	Exp  int64          `json:"e"`
}

func (s *session) csrfOK(given string) bool {
	return s != nil && s.CSRF != "" && subtle.ConstantTimeCompare([]byte(s.CSRF), []byte(given)) == 1
}

// flow is what the OIDC flow cookie holds between the redirect to the
// provider and its callback.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	Exp      int64  `json:"e"`
}

// flowTTL bounds a sign-in at the provider.
const flowTTL = 10 * time.Minute

// cookies signs and reads the page's cookies: base64url(JSON) "."
// base64url(HMAC-SHA256(name "|" payload)), so that one cookie cannot
// stand in for another.
type cookies struct {
	key    []byte
	path   string
	secure bool
	ttl    time.Duration
	now    func() time.Time
}

const (
	sessionCookie = "gatehost_approvals"
	flowCookie    = "gatehost_approvals_oidc"
)

func (c cookies) name(n string) string {
	if c.secure {
		return "__Secure-" + n
	}
	return n
}

func (c cookies) mac(name, payload string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(name + "|" + payload))
	return m.Sum(nil)
}

// maxCookie bounds a cookie's value: browsers drop a cookie of more than
// 4096 bytes with its name and attributes.
const maxCookie = 3800

// errCookieTooLarge: the principal's claims do not fit in a cookie.
var errCookieTooLarge = errors.New("the sign-in does not fit in a cookie: too many or too large claims")

func (c cookies) set(w http.ResponseWriter, name string, v any, ttl time.Duration) error {
	data, err := json.Marshal(v) // structs of strings and a principal of JSON values
	if err != nil {
		return err
	}
	payload := base64.RawURLEncoding.EncodeToString(data)
	value := payload + "." + base64.RawURLEncoding.EncodeToString(c.mac(name, payload))
	if len(value) > maxCookie {
		return errCookieTooLarge
	}
	http.SetCookie(w, &http.Cookie{Name: c.name(name), Value: value, Path: c.path,
		MaxAge: int(ttl.Seconds()), HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
	return nil
}

func (c cookies) get(r *http.Request, name string, v any) bool {
	ck, err := r.Cookie(c.name(name))
	if err != nil {
		return false
	}
	payload, sig, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(name, payload)) {
		return false
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && json.Unmarshal(data, v) == nil
}

func (c cookies) clear(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: c.name(name), Value: "", Path: c.path, MaxAge: -1,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// session returns the request's unexpired session, or nil.
func (c cookies) session(r *http.Request) *session {
	var s session
	if !c.get(r, sessionCookie, &s) || s.CSRF == "" || c.now().Unix() >= s.Exp {
		return nil
	}
	return &s
}

// start begins a session for p (nil: not signed in yet) with a new CSRF
// token, and sets its cookie.
func (c cookies) start(w http.ResponseWriter, p *abi.Principal) (*session, error) {
	exp := c.now().Add(c.ttl)
	s := &session{P: p, CSRF: randomHex(32), Exp: exp.Unix()}
	return s, c.set(w, sessionCookie, s, c.ttl)
}

func (c cookies) flow(r *http.Request) *flow {
	var f flow
	if !c.get(r, flowCookie, &f) || f.State == "" || c.now().Unix() >= f.Exp {
		return nil
	}
	return &f
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// throttle is a token bucket: burst attempts at once, then one per
// interval.
type throttle struct {
	mu       sync.Mutex
	tokens   float64
	last     time.Time
	burst    float64
	interval time.Duration
}

func (b *throttle) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = b.burst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+float64(d)/float64(b.interval))
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
