package decisionlog

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":     0,
		"0":    0,
		"-5":   0,
		"120":  2 * time.Minute,
		"7200": time.Hour,
		"soon": 0,
		"1.5":  0,
		now.Add(90 * time.Second).Format(http.TimeFormat):                      90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):                          0,
		now.Add(3 * time.Hour).Format(http.TimeFormat):                         time.Hour,
		now.Add(30 * time.Second).Format(time.RFC850):                          30 * time.Second, // obsolete forms too
		"Sun, 01 Mar 2026 12:00:45 GMT":                                        45 * time.Second,
		now.Add(10*time.Second + 500*time.Millisecond).Format(http.TimeFormat): 10 * time.Second,
	} {
		assert.Equal(t, want, parseRetryAfter(v, now), "%q", v)
	}
}
