package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehost/gatehost/internal/oneline"
)

// Sink delivers events to a receiver. The Exporter calls Send from one
// goroutine, with batches in seq order, and retries on error; a Sink does
// not retry itself.
type Sink interface {
	// Send delivers events and returns nil only once the receiver has
	// acknowledged all of them. An error wrapping ErrRejected means the
	// receiver refused the content for good (the Exporter then splits the
	// batch, and drops a single refused event, counted); any other error
	// is retried. A *StatusError may say how long to wait (RetryAfter).
	Send(ctx context.Context, events []Event) error
	// Close releases the sink; the Exporter calls it last.
	Close(ctx context.Context) error
}

// ErrRejected is wrapped by a Sink's error when retrying the same events
// cannot succeed (HTTP 400, 413 or 422).
var ErrRejected = errors.New("decisionlog: receiver rejected the events")

// StatusError is an HTTP receiver's non-2xx answer.
type StatusError struct {
	Code int
	// RetryAfter is the receiver's Retry-After, 0 if none.
	RetryAfter time.Duration
	// Body is the start of the answer's body, on one line.
	Body string
}

func (e *StatusError) Error() string {
	msg := "decisionlog: receiver answered " + strconv.Itoa(e.Code) + " " + http.StatusText(e.Code)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Unwrap is ErrRejected for the statuses that say the content is refused:
// 400, 413 and 422. Every other status is retried: 408, 429 and 5xx are
// passing, and 401, 403, 404 and the like are fixed by fixing the config,
// after which the events must still be there.
func (e *StatusError) Unwrap() error {
	switch e.Code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return ErrRejected
	}
	return nil
}

// HTTPSink posts events to an OPA decision-log service: one POST per
// batch, the body a gzip-compressed JSON array of the events
// (Content-Type application/json, Content-Encoding gzip). 2xx
// acknowledges the batch.
type HTTPSink struct {
	url     string
	headers http.Header
	client  *http.Client
	gz      sync.Pool
}

// maxAnswerBytes caps what is read of an answer's body (to reuse the
// connection and quote the start of an error).
const maxAnswerBytes = 64 << 10

// NewHTTPSink returns a sink posting to rawURL (http or https) with the
// given extra headers (such as Authorization; never logged). A nil client
// is a client of its own on a clone of http.DefaultTransport; the
// Exporter bounds each attempt by its context.
func NewHTTPSink(rawURL string, headers map[string]string, client *http.Client) (*HTTPSink, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("decisionlog: url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("decisionlog: url %q: want http:// or https:// and a host", rawURL)
	}
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &HTTPSink{url: u.String(), headers: h, client: client}, nil
}

// Send implements Sink.
func (s *HTTPSink) Send(ctx context.Context, events []Event) error {
	var body bytes.Buffer
	zw, _ := s.gz.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(&body)
	} else {
		zw.Reset(&body)
	}
	_, _ = zw.Write([]byte{'['})
	for i, ev := range events {
		if i > 0 {
			_, _ = zw.Write([]byte{','})
		}
		_, _ = zw.Write(ev.JSON)
	}
	_, _ = zw.Write([]byte{']'})
	if err := zw.Close(); err != nil { // writes to a bytes.Buffer cannot fail
		return fmt.Errorf("decisionlog: gzip: %w", err)
	}
	s.gz.Put(zw)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, &body)
	if err != nil {
		return fmt.Errorf("decisionlog: %w", err)
	}
	for k, v := range s.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("decisionlog: post: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	se := &StatusError{Code: resp.StatusCode, Body: oneline.Of(strings.ToValidUTF8(string(answer[:min(len(answer), 200)]), ""))}
	se.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return se
}

// parseRetryAfter reads a Retry-After value in either form RFC 9110
// §10.2.3 allows, delay-seconds or an HTTP-date, as a wait of at most an
// hour; 0 when absent, unreadable or not in the future.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if secs, err := strconv.Atoi(v); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 3600)) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	// Whole seconds, as the delay form has: an HTTP-date has no finer.
	return min(max(t.Sub(now).Truncate(time.Second), 0), time.Hour)
}

// Close implements Sink.
func (s *HTTPSink) Close(context.Context) error {
	s.client.CloseIdleConnections()
	return nil
}
