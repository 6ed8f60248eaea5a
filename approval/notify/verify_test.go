package notify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval/notify"
)

// signed is a delivery's header and body, as a receiver gets them, sent at
// t0.
func signed(body string) (http.Header, []byte) {
	h := http.Header{}
	h.Set(notify.HeaderID, "wh-0")
	h.Set(notify.HeaderTimestamp, strconv.FormatInt(t0.Unix(), 10))
	h.Set(notify.HeaderSignature, notify.Sign(secret, t0.Unix(), []byte(body)))
	return h, []byte(body)
}

func TestSignIsTheDocumentedMAC(t *testing.T) {
	body := `{"type":"approval.requested"}`
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(t0.Unix(), 10) + "." + body))
	assert.Equal(t, "v1="+hex.EncodeToString(m.Sum(nil)), notify.Sign(secret, t0.Unix(), []byte(body)))
}

func TestVerify(t *testing.T) {
	const body = `{"type":"approval.requested","request_id":"rq-1"}`
	other := notify.Sign([]byte("another secret, sixteen bytes+"), t0.Unix(), []byte(body))
	tests := []struct {
		name   string
		edit   func(h http.Header, body []byte) []byte
		secret []byte
		now    time.Time
		want   error
	}{
		{name: "good", want: nil},
		{name: "good, four minutes late", now: t0.Add(4 * time.Minute), want: nil},
		{name: "tampered body", edit: func(_ http.Header, b []byte) []byte {
			return []byte(strings.Replace(string(b), "rq-1", "rq-2", 1))
		}, want: notify.ErrSignatureMismatch},
		{name: "wrong secret", secret: []byte("the wrong secret, but long enough"), want: notify.ErrSignatureMismatch},
		{name: "stale timestamp", now: t0.Add(6 * time.Minute), want: notify.ErrStaleTimestamp},
		{name: "future timestamp", now: t0.Add(-6 * time.Minute), want: notify.ErrStaleTimestamp},
		{name: "timestamp changed", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderTimestamp, strconv.FormatInt(t0.Unix()+1, 10))
			return b
		}, want: notify.ErrSignatureMismatch},
		{name: "rotation: one of two matches", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderSignature, other+" "+h.Get(notify.HeaderSignature))
			return b
		}, want: nil},
		{name: "other versions ignored", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderSignature, "v2=anything "+h.Get(notify.HeaderSignature))
			return b
		}, want: nil},
		{name: "only another secret's", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderSignature, other)
			return b
		}, want: notify.ErrSignatureMismatch},
		{name: "no signature", edit: func(h http.Header, b []byte) []byte { h.Del(notify.HeaderSignature); return b }, want: notify.ErrMissingHeader},
		{name: "no timestamp", edit: func(h http.Header, b []byte) []byte { h.Del(notify.HeaderTimestamp); return b }, want: notify.ErrMissingHeader},
		{name: "timestamp not a number", edit: func(h http.Header, b []byte) []byte { h.Set(notify.HeaderTimestamp, "yesterday"); return b }, want: notify.ErrMalformedHeader},
		{name: "timestamp with sign", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderTimestamp, "+"+h.Get(notify.HeaderTimestamp))
			return b
		}, want: notify.ErrMalformedHeader},
		{name: "signature not hex", edit: func(h http.Header, b []byte) []byte { h.Set(notify.HeaderSignature, "v1=zz"); return b }, want: notify.ErrMalformedHeader},
		{name: "signature without version", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderSignature, strings.TrimPrefix(h.Get(notify.HeaderSignature), "v1="))
			return b
		}, want: notify.ErrMalformedHeader},
		{name: "signature cut short", edit: func(h http.Header, b []byte) []byte {
			h.Set(notify.HeaderSignature, h.Get(notify.HeaderSignature)[:20])
			return b
		}, want: notify.ErrMalformedHeader},
		{name: "no secret", secret: []byte{}, want: notify.ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, b := signed(body)
			if tt.edit != nil {
				b = tt.edit(h, b)
			}
			key := secret
			if tt.secret != nil {
				key = tt.secret
			}
			now := t0
			if !tt.now.IsZero() {
				now = tt.now
			}
			err := notify.Verify(key, h, b, now, 0)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// FuzzVerify feeds Verify arbitrary timestamp and signature headers: it
// never panics, and accepts only the body's true signature.
func FuzzVerify(f *testing.F) {
	ts := strconv.FormatInt(t0.Unix(), 10)
	good := notify.Sign(secret, t0.Unix(), []byte("{}"))
	f.Add(ts, good, []byte("{}"))
	f.Add(ts, "v2=x "+good, []byte("{}"))
	f.Add(ts, good+" "+good, []byte("{}"))
	f.Add("0"+ts, good, []byte("{}"))
	f.Add("-1", "v1=", []byte(""))
	f.Add(ts, "v1==", []byte("x"))
	f.Add("99999999999999999999", "=v1", []byte("x"))
	f.Add(ts, "\tv1="+strings.Repeat("0", 64)+"\n", []byte("{}"))
	f.Fuzz(func(t *testing.T, tsHeader, sigHeader string, body []byte) {
		h := http.Header{}
		h.Set(notify.HeaderTimestamp, tsHeader)
		h.Set(notify.HeaderSignature, sigHeader)
		err := notify.Verify(secret, h, body, t0, time.Minute)
		if err != nil {
			return
		}
		n, perr := strconv.ParseInt(h.Get(notify.HeaderTimestamp), 10, 64)
		require.NoError(t, perr)
		assert.Contains(t, strings.Fields(h.Get(notify.HeaderSignature)), notify.Sign(secret, n, body))
	})
}
