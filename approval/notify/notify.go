// Package notify tells webhooks of a pending approval: a Slack channel, or
// any receiver of a signed JSON event (docs/WEBHOOKS.md). A Notifier's
// Notify is approval.DeskOptions.Notify. It only informs: a webhook that
// fails, or never answers, approves and denies nothing, and the request
// waits on the approval page all the same.
package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/oneline"
)

// Defaults and bounds of a webhook's delivery.
const (
	// DefaultTimeout bounds one attempt: connecting, sending and reading
	// the response's head.
	DefaultTimeout = 5 * time.Second
	// MaxTimeout bounds Webhook.Timeout.
	MaxTimeout = time.Minute
	// DefaultRetries is how many times a failed attempt is retried.
	DefaultRetries = 3
	// MaxRetries bounds Webhook.Retries.
	MaxRetries = 10
	// BaseBackoff is the wait before the first retry; each next wait
	// doubles, up to MaxBackoff, and is jittered (half fixed, half
	// random).
	BaseBackoff = 500 * time.Millisecond
	// MaxBackoff caps the wait between attempts.
	MaxBackoff = 30 * time.Second
	// MaxRetryAfter is the longest Retry-After honoured: a receiver asking
	// for a longer wait is not retried.
	MaxRetryAfter = 2 * time.Minute
	// MinSecretBytes is the shortest secret a json webhook takes.
	MinSecretBytes = 16
	// maxResponseBytes is how much of a response body is read (and
	// discarded), so that the connection can be reused.
	maxResponseBytes = 4 << 10
)

// Kinds of the audit record of each delivery's outcome (Options.Record).
const (
	KindNotified     = "approval_notified"
	KindNotifyFailed = "approval_notify_failed"
)

// A Webhook is one receiver told of each new request.
type Webhook struct {
	// Name names the webhook in logs and records (its URL may be a
	// secret, as Slack's are, and is never logged). Required, unique.
	Name string
	// URL is where the event is POSTed: https, or http only to a loopback
	// host.
	URL string
	// Format is FormatSlack or FormatJSON.
	Format string
	// Secret signs each delivery (HMAC-SHA256, HeaderSignature): required
	// for FormatJSON, at least MinSecretBytes; optional for FormatSlack.
	Secret []byte
	// Timeout bounds each attempt; 0 is DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a failed attempt is retried; 0 is
	// DefaultRetries, a negative value none.
	Retries int
}

// Options configure a Notifier.
type Options struct {
	// URL returns the approval page of a request (approval.Desk.URL); nil
	// or "" gives events without a link.
	URL func(id string) string
	// HTTPClient sends the deliveries; nil is a client of its own. Its
	// redirects are never followed (a copy is used).
	HTTPClient *http.Client
	// Logger receives a line per delivery, and per failed attempt; nil
	// discards.
	Logger *slog.Logger
	// Now is the clock of timestamps and expiry; nil is time.Now.
	Now func() time.Time
	// Sleep waits d between attempts, or returns ctx's error when ctx ends
	// first; nil is a timer. Tests give a fake that advances their Now.
	Sleep func(ctx context.Context, d time.Duration) error
	// Record writes an audit record of each delivery's outcome: kind
	// KindNotified or KindNotifyFailed, data an Outcome. Nil records
	// nothing; an error is logged.
	Record func(kind string, data any) error
}

// Outcome is the record of one delivery: to one webhook, of one request.
type Outcome struct {
	RequestID  string `json:"request_id"`
	Webhook    string `json:"webhook"`
	Format     string `json:"format"`
	DeliveryID string `json:"delivery_id"`
	// Attempts is how many requests were sent (0 when the approval request
	// expired first).
	Attempts int `json:"attempts"`
	// Status is the last response's HTTP status, or 0 without one.
	Status int `json:"status,omitempty"`
	// Error says why the delivery failed; empty when it was delivered.
	Error string `json:"error,omitempty"`
}

// Notifier sends each new request to its webhooks. It is safe for
// concurrent use.
type Notifier struct {
	hooks  []Webhook
	o      Options
	client *http.Client

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	closing context.Context
	close   context.CancelFunc
}

// New validates hooks and returns their Notifier. An error names the
// field: "webhooks[1].url: ...".
func New(hooks []Webhook, o Options) (*Notifier, error) {
	hs := make([]Webhook, len(hooks))
	names := make(map[string]int, len(hooks))
	for i, h := range hooks {
		h, err := checkWebhook(h)
		if err != nil {
			return nil, fmt.Errorf("notify: webhooks[%d].%w", i, err)
		}
		if j, dup := names[h.Name]; dup {
			return nil, fmt.Errorf("notify: webhooks[%d].name: %q is the name of webhooks[%d] too", i, h.Name, j)
		}
		names[h.Name] = i
		hs[i] = h
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	client := &http.Client{}
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	n := &Notifier{hooks: hs, o: o, client: client}
	n.closing, n.close = context.WithCancel(context.Background())
	return n, nil
}

// fieldError is a webhook's invalid field, named for New's message.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("%s: %w", field, fmt.Errorf(format, args...))
}

func checkWebhook(h Webhook) (Webhook, error) {
	if h.Name == "" {
		return h, fieldError("name", "empty")
	}
	u, err := url.Parse(h.URL)
	switch {
	case h.URL == "":
		return h, fieldError("url", "empty")
	case err != nil:
		// url.Parse's error quotes the URL, which may be a secret.
		return h, fieldError("url", "not a URL")
	case u.Host == "" || u.Opaque != "":
		return h, fieldError("url", "want an absolute http(s) URL")
	case u.User != nil:
		return h, fieldError("url", "credentials in the URL are not taken")
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	case u.Scheme == "http":
		return h, fieldError("url", "http only to a loopback host; want https")
	default:
		return h, fieldError("url", "scheme %q: want https", u.Scheme)
	}
	switch h.Format {
	case FormatSlack:
	case FormatJSON:
		if len(h.Secret) == 0 {
			return h, fieldError("secret", "required by the json format")
		}
	default:
		return h, fieldError("format", "%q: want %q or %q", h.Format, FormatSlack, FormatJSON)
	}
	if len(h.Secret) > 0 && len(h.Secret) < MinSecretBytes {
		return h, fieldError("secret", "%d bytes: want at least %d", len(h.Secret), MinSecretBytes)
	}
	switch {
	case h.Timeout == 0:
		h.Timeout = DefaultTimeout
	case h.Timeout < 0 || h.Timeout > MaxTimeout:
		return h, fieldError("timeout", "%s: want more than 0, at most %s", h.Timeout, MaxTimeout)
	}
	switch {
	case h.Retries == 0:
		h.Retries = DefaultRetries
	case h.Retries < 0:
		h.Retries = 0
	case h.Retries > MaxRetries:
		return h, fieldError("retries", "%d: want at most %d", h.Retries, MaxRetries)
	}
	h.Secret = append([]byte(nil), h.Secret...)
	return h, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify sends r to every webhook concurrently, retrying each as its
// policy allows, logs and records each outcome, and returns when every
// delivery is done. It is approval.DeskOptions.Notify. After Close it
// sends nothing.
func (n *Notifier) Notify(ctx context.Context, r approval.Request) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.o.Logger.Warn("approval not notified: notifier closed", "request_id", r.ID)
		return
	}
	n.wg.Add(1)
	n.mu.Unlock()
	defer n.wg.Done()

	page := ""
	if n.o.URL != nil {
		page = n.o.URL(r.ID)
	}
	var wg sync.WaitGroup
	for _, h := range n.hooks {
		wg.Go(func() { n.deliver(ctx, h, r, page) })
	}
	wg.Wait()
}

// Close stops retries at once (a delivery waiting to retry gives up) and
// waits for the attempts in flight, each bounded by its webhook's
// Timeout. Notify sends nothing after Close.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.close()
	n.wg.Wait()
}

// errStop ends a delivery without another attempt.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }

// deliver sends one request to one webhook.
func (n *Notifier) deliver(ctx context.Context, h Webhook, r approval.Request, pageURL string) {
	out := Outcome{RequestID: r.ID, Webhook: h.Name, Format: h.Format, DeliveryID: newDeliveryID()}
	body, err := n.body(h, r, pageURL)
	if err != nil {
		n.finish(out, fmt.Errorf("encoding the body: %w", err))
		return
	}
	// Waits between attempts end when the notifier closes.
	wait, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(n.closing, stop)()

	for attempt := 0; ; attempt++ {
		if !r.Open(n.o.Now()) {
			n.finish(out, errors.New("the approval request expired"))
			return
		}
		out.Attempts++
		status, retryAfter, err := n.attempt(ctx, h, body, out.DeliveryID)
		out.Status = status
		if err == nil {
			n.finish(out, nil)
			return
		}
		var stopErr errStop
		if errors.As(err, &stopErr) || attempt >= h.Retries {
			n.finish(out, err)
			return
		}
		d := backoff(attempt)
		if retryAfter > 0 {
			if retryAfter > MaxRetryAfter {
				n.finish(out, fmt.Errorf("%w; Retry-After %s is over %s", err, retryAfter, MaxRetryAfter))
				return
			}
			d = retryAfter
		}
		if !n.o.Now().Add(d).Before(r.ExpiresAt) {
			n.finish(out, fmt.Errorf("%w; the approval request expires before the next attempt", err))
			return
		}
		n.o.Logger.Warn("approval notification attempt failed", "request_id", r.ID, "webhook", h.Name,
			"delivery_id", out.DeliveryID, "attempt", out.Attempts, "status", status, "err", err, "retry_in", d)
		if serr := n.o.Sleep(wait, d); serr != nil || wait.Err() != nil {
			n.finish(out, fmt.Errorf("%w; not retried: %v", err, stopReason(ctx)))
			return
		}
	}
}

// stopReason says why a wait between attempts ended early.
func stopReason(ctx context.Context) string {
	if ctx.Err() != nil {
		return "the context ended"
	}
	return "the notifier closed"
}

// body is the request's body in h's format.
func (n *Notifier) body(h Webhook, r approval.Request, pageURL string) ([]byte, error) {
	if h.Format == FormatSlack {
		return NewSlackMessage(r, pageURL)
	}
	return marshal(NewEvent(r, pageURL))
}

// attempt POSTs body once. A nil error is a 2xx answer. An errStop is a
// failure not to retry; retryAfter is the receiver's Retry-After, or 0.
func (n *Notifier) attempt(ctx context.Context, h Webhook, body []byte, id string) (status int, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, errStop{errors.New("building the request failed")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gatehost-webhook/1")
	req.Header.Set(HeaderID, id)
	if len(h.Secret) > 0 {
		ts := n.o.Now().Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, Sign(h.Secret, ts, body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, 0, errors.New(transportError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	status = resp.StatusCode
	switch {
	case status >= 200 && status < 300:
		return status, 0, nil
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500:
		return status, parseRetryAfter(resp.Header.Get("Retry-After"), n.o.Now()), fmt.Errorf("HTTP %d", status)
	default:
		return status, 0, errStop{fmt.Errorf("HTTP %d, not retried", status)}
	}
}

// transportError is err without the URL an *url.Error quotes (a Slack
// webhook's URL is its secret).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return oneline.Of(err.Error())
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date. It returns 0 for none, or a malformed or past one.
func parseRetryAfter(s string, now time.Time) time.Duration {
	if s == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 1<<31)) * time.Second
	}
	if t, err := http.ParseTime(s); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// backoff is the wait after the failed attempt number attempt (from 0):
// BaseBackoff doubled attempt times, at most MaxBackoff, half of it
// random.
func backoff(attempt int) time.Duration {
	d := MaxBackoff
	if attempt < 16 {
		d = min(BaseBackoff<<attempt, MaxBackoff)
	}
	return d/2 + mrand.N(d/2+1)
}

// finish logs and records a delivery's outcome.
func (n *Notifier) finish(out Outcome, err error) {
	kind := KindNotified
	args := []any{"request_id", out.RequestID, "webhook", out.Webhook, "delivery_id", out.DeliveryID, "attempts", out.Attempts, "status", out.Status}
	if err != nil {
		kind, out.Error = KindNotifyFailed, err.Error()
		n.o.Logger.Error("approval notification failed", append(args, "err", out.Error)...)
	} else {
		n.o.Logger.Info("approval notified", args...)
	}
	if n.o.Record != nil {
		if rerr := n.o.Record(kind, out); rerr != nil {
			n.o.Logger.Error("approval notification not recorded", "request_id", out.RequestID, "webhook", out.Webhook, "err", rerr)
		}
	}
}

// newDeliveryID returns "wh-" and 128 random bits in hex.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "wh-" + hex.EncodeToString(b[:])
}
