package notify_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/gatehost/gatehost/approval/notify"
)

// A receiver verifies each delivery before it trusts the body.
func ExampleVerify() {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1767323045, 0)

	hook := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := notify.Verify(secret, r.Header, body, now, 5*time.Minute); err != nil {
			switch {
			case errors.Is(err, notify.ErrStaleTimestamp):
				fmt.Println("refused: stale")
			case errors.Is(err, notify.ErrSignatureMismatch):
				fmt.Println("refused: bad signature")
			default:
				fmt.Println("refused:", err)
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Println("accepted:", string(body))
		w.WriteHeader(http.StatusNoContent)
	}

	send := func(body string, sentAt time.Time, key []byte) {
		r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		r.Header.Set(notify.HeaderTimestamp, strconv.FormatInt(sentAt.Unix(), 10))
		r.Header.Set(notify.HeaderSignature, notify.Sign(key, sentAt.Unix(), []byte(body)))
		hook(httptest.NewRecorder(), r)
	}
	send(`{"type":"approval.requested"}`, now, secret)
	send(`{"type":"approval.requested"}`, now.Add(-time.Hour), secret)
	send(`{"type":"approval.requested"}`, now, []byte("not the receiver's secret at all"))
	// Output:
	// accepted: {"type":"approval.requested"}
	// refused: stale
	// refused: bad signature
}
