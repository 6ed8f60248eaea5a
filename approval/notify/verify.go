package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a signed delivery (docs/WEBHOOKS.md).
const (
	// HeaderID names the delivery: the same on every attempt of one
	// delivery, so that a receiver can drop a repeat.
	HeaderID = "Gatehost-Webhook-Id"
	// HeaderTimestamp is the attempt's time in Unix seconds, signed with
	// the body.
	HeaderTimestamp = "Gatehost-Webhook-Timestamp"
	// HeaderSignature is one or more space-separated "v1=<hex>" entries:
	// each the HMAC-SHA256 of "<timestamp>.<body>" under a secret.
	HeaderSignature = "Gatehost-Webhook-Signature"
)

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock when Verify is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// maxSignatureHeader bounds the signature header Verify parses.
const maxSignatureHeader = 4 << 10

// Errors of Verify, for receivers to branch on with errors.Is.
var (
	// ErrNoSecret: Verify was given no secret.
	ErrNoSecret = errors.New("notify: no webhook secret")
	// ErrMissingHeader: the timestamp or signature header is absent.
	ErrMissingHeader = errors.New("notify: webhook header missing")
	// ErrMalformedHeader: the timestamp is not Unix seconds, or the
	// signature header holds no well-formed v1 entry.
	ErrMalformedHeader = errors.New("notify: webhook header malformed")
	// ErrStaleTimestamp: the timestamp is further than the tolerance from
	// now, in the past or the future (a replay, or a skewed clock).
	ErrStaleTimestamp = errors.New("notify: webhook timestamp outside tolerance")
	// ErrSignatureMismatch: no v1 entry is the signature of the body under
	// the secret (a changed body, or another secret).
	ErrSignatureMismatch = errors.New("notify: webhook signature does not match")
)

// signingString is what is signed: the timestamp, a dot, the body.
func signingString(ts string, body []byte) []byte {
	b := make([]byte, 0, len(ts)+1+len(body))
	b = append(b, ts...)
	b = append(b, '.')
	return append(b, body...)
}

// Sign returns the HeaderSignature value of body sent at ts (Unix
// seconds) under secret: "v1=" and the hex HMAC-SHA256 of
// "<ts>.<body>".
func Sign(secret []byte, ts int64, body []byte) string {
	return "v1=" + hex.EncodeToString(mac(secret, strconv.FormatInt(ts, 10), body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(signingString(ts, body))
	return m.Sum(nil)
}

// Verify checks a delivery as its receiver got it: header is the request's
// header, body its body exactly as read (before any JSON decoding), now
// the receiver's clock. The timestamp must be within tolerance of now
// (tolerance <= 0 is DefaultTolerance), and one of the signature header's
// v1 entries must be the body's signature under secret; entries of other
// versions are ignored. Signatures are compared in constant time. Errors
// wrap ErrNoSecret, ErrMissingHeader, ErrMalformedHeader,
// ErrStaleTimestamp or ErrSignatureMismatch.
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	tsText, sigText := header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	switch {
	case tsText == "":
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderTimestamp)
	case sigText == "":
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
	}
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return err
	}
	sigs, err := parseSignatures(sigText)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s is %s from now, at most %s", ErrStaleTimestamp, HeaderTimestamp, d.Round(time.Second), tolerance)
	}
	want := mac(secret, tsText, body)
	ok := false
	for _, s := range sigs {
		// Every entry is compared, so the time taken does not say which
		// one matched.
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return ErrSignatureMismatch
	}
	return nil
}

// parseTimestamp reads Unix seconds written canonically: decimal digits,
// no sign, no leading zero.
func parseTimestamp(s string) (int64, error) {
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ts < 0 || strconv.FormatInt(ts, 10) != s {
		return 0, fmt.Errorf("%w: %s: want Unix seconds", ErrMalformedHeader, HeaderTimestamp)
	}
	return ts, nil
}

// parseSignatures returns the v1 entries of a signature header: each
// "v1=" and 64 hex digits, separated by spaces. Entries of another version
// ("v2=...") are skipped; a malformed v1 entry, or none, is an error.
func parseSignatures(s string) ([][]byte, error) {
	if len(s) > maxSignatureHeader {
		return nil, fmt.Errorf("%w: %s: over %d bytes", ErrMalformedHeader, HeaderSignature, maxSignatureHeader)
	}
	var out [][]byte
	for _, f := range strings.Fields(s) {
		version, value, found := strings.Cut(f, "=")
		if !found {
			return nil, fmt.Errorf("%w: %s: entry without \"=\"", ErrMalformedHeader, HeaderSignature)
		}
		if version != "v1" {
			continue
		}
		sig, err := hex.DecodeString(value)
		if err != nil || len(sig) != sha256.Size {
			return nil, fmt.Errorf("%w: %s: v1 wants %d hex digits", ErrMalformedHeader, HeaderSignature, 2*sha256.Size)
		}
		out = append(out, sig)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no v1 entry", ErrMalformedHeader, HeaderSignature)
	}
	return out, nil
}
