package page

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestThrottleTableBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		// at is when each client makes one attempt, in order.
		at   []time.Duration
		want []string // the clients remembered after
	}{
		{"the one idle longest makes room", []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			[]string{"c1", "c2", "c3"}},
		{"buckets filled again make room first", []time.Duration{0, time.Second, 2 * time.Second, time.Hour},
			[]string{"c3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := &throttle{burst: 2, interval: time.Minute, allBurst: 100, allInterval: time.Millisecond, maxClients: 3}
			for i, d := range c.at {
				ok, _ := th.allow("c"+string(rune('0'+i)), t0.Add(d))
				assert.True(t, ok)
				assert.LessOrEqual(t, len(th.clients), 3)
			}
			var got []string
			for k := range th.clients {
				got = append(got, k)
			}
			assert.ElementsMatch(t, c.want, got)
		})
	}
}

func TestClientOf(t *testing.T) {
	for _, c := range []struct{ remote, want string }{
		{"203.0.113.7:4000", "203.0.113.7"},
		{"[2001:db8::1]:4000", "2001:db8::/64"},
		{"[2001:db8::ffff:1]:1", "2001:db8::/64"},
		{"[::ffff:203.0.113.7]:4000", "203.0.113.7"},
		{"@", "@"}, // a Unix socket
	} {
		assert.Equal(t, c.want, clientOf(&http.Request{RemoteAddr: c.remote}), c.remote)
	}
}
