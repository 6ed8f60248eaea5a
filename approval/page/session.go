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
	"net"
	"net/http"
	"net/netip"
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

// bucket is a token bucket: burst at once, then one per interval.
type bucket struct {
	tokens float64
	last   time.Time
}

// level is what the bucket holds at now.
func (b *bucket) level(now time.Time, burst float64, interval time.Duration) float64 {
	if b.last.IsZero() {
		return burst
	}
	return min(burst, b.tokens+float64(max(now.Sub(b.last), 0))/float64(interval))
}

// fill adds what interval has earned since the bucket was last filled.
func (b *bucket) fill(now time.Time, burst float64, interval time.Duration) {
	b.tokens = b.level(now, burst, interval)
	if now.After(b.last) {
		b.last = now
	}
}

// throttle bounds attempts per client, and in all: a client may make
// burst at once, then one per interval; all clients together allBurst at
// once, then one per allInterval. allInterval is shorter than interval,
// so no one client can spend what all share and lock the others out; the
// ceiling bounds what many clients together can try.
type throttle struct {
	mu                    sync.Mutex
	burst, allBurst       float64
	interval, allInterval time.Duration
	// maxClients bounds the table of clients: when it is full, a client
	// whose bucket has filled again (as good as new) makes room, else the
	// one idle longest.
	maxClients int
	all        bucket
	clients    map[string]*bucket
}

// allow reports whether client may make an attempt now, and takes it.
// Otherwise it says whether the client's own limit or the shared one
// refused it ("client" or "all").
func (t *throttle) allow(client string, now time.Time) (ok bool, limit string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients == nil {
		t.clients = make(map[string]*bucket)
	}
	b := t.clients[client]
	if b == nil {
		t.makeRoom(now)
		b = &bucket{}
		t.clients[client] = b
	}
	b.fill(now, t.burst, t.interval)
	t.all.fill(now, t.allBurst, t.allInterval)
	switch {
	case b.tokens < 1:
		return false, "client"
	case t.all.tokens < 1:
		return false, "all"
	}
	b.tokens--
	t.all.tokens--
	return true, ""
}

func (t *throttle) makeRoom(now time.Time) {
	if len(t.clients) < t.maxClients {
		return
	}
	oldest := ""
	for k, b := range t.clients {
		if b.level(now, t.burst, t.interval) >= t.burst {
			delete(t.clients, k)
		} else if oldest == "" || b.last.Before(t.clients[oldest].last) {
			oldest = k
		}
	}
	if len(t.clients) >= t.maxClients {
		delete(t.clients, oldest)
	}
}

// clientOf names the client of r for the throttle: its remote address,
// an IPv6 address by its /64 (what one host is usually given). Behind a
// reverse proxy every client is the proxy; the shared ceiling still holds.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
