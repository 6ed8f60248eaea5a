package mcpgateway

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMessageBoundReaders: an HTTP body is bounded whole, an event stream
// per event (whatever ends its lines: LF, CRLF or CR), a stdio stream per
// line; many messages each under the bound pass, one over it fails with
// the upstream's MessageTooLargeError, read one byte at a time or whole.
func TestMessageBoundReaders(t *testing.T) {
	const bound = 64
	data := func(n int) string { return strings.Repeat("x", n) }
	event := func(n int, eol string) string { return "data: " + data(n-len("data: ")-2*len(eol)) + eol + eol }
	for _, tc := range []struct {
		name, contentType string // "" for a stdio stream
		in                string
		via               string // "" when it passes
	}{
		{"JSON body at the bound", "application/json", data(bound), ""},
		{"JSON body over the bound", "application/json", data(bound + 1), "an HTTP answer"},
		{"many events at the bound, LF", "text/event-stream", strings.Repeat(event(bound, "\n"), 10), ""},
		{"many events at the bound, CRLF", "text/event-stream", strings.Repeat(event(bound, "\r\n"), 10), ""},
		{"many events at the bound, CR", "text/event-stream", strings.Repeat(event(bound, "\r"), 10), ""},
		{"an event over the bound after good ones", "text/event-stream", event(bound, "\n") + event(bound+1, "\n"), "an event"},
		{"an event of many lines over the bound", "text/event-stream", strings.Repeat("data: "+data(20)+"\r\n", 4) + "\r\n", "an event"},
		{"a blank line of CRLF ends an event", "text/event-stream", "data: " + data(50) + "\r\n\r\ndata: " + data(50) + "\r\n\r\n", ""},
		{"many lines at the bound", "", strings.Repeat(data(bound)+"\n", 10), ""},
		{"a line over the bound", "", data(10) + "\n" + data(bound+1) + "\n", "a line"},
	} {
		for _, oneByte := range []bool{false, true} {
			name := tc.name
			if oneByte {
				name += ", a byte at a time"
			}
			t.Run(name, func(t *testing.T) {
				l := &messageLimit{upstream: "up", bound: bound, logger: slog.New(slog.DiscardHandler)}
				var src io.Reader = strings.NewReader(tc.in)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				var r io.Reader
				if tc.contentType == "" {
					r = &lineBounded{r: src, l: l}
				} else {
					resp := &http.Response{Header: http.Header{"Content-Type": {tc.contentType}}, Body: io.NopCloser(src)}
					l.boundBody(resp)
					r = resp.Body
				}
				got, err := io.ReadAll(r)
				if tc.via == "" {
					require.NoError(t, err)
					assert.Equal(t, tc.in, string(got))
					assert.NoError(t, l.err())
					return
				}
				var tooLarge *MessageTooLargeError
				require.ErrorAs(t, err, &tooLarge)
				assert.Equal(t, MessageTooLargeError{Upstream: "up", Bound: bound, Via: tc.via}, *tooLarge)
				assert.True(t, errors.Is(err, ErrUpstream) && errors.Is(err, ErrMessageTooLarge))
				assert.Less(t, len(got), len(tc.in), "the message over the bound was not read whole")
				assert.True(t, bytes.HasPrefix([]byte(tc.in), got))
				assert.ErrorIs(t, l.err(), ErrMessageTooLarge)
			})
		}
	}
}
