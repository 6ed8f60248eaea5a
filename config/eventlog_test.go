package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventLogHeadInterval: event_log.head_interval defaults to a second,
// 0 asks for the head in every commit, and a value outside 1ms..1m (or not
// a duration) stops the load naming the key.
func TestEventLogHeadInterval(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		want          time.Duration
		err           string
	}{
		{name: "unset", section: "{path: e.jsonl}", want: DefaultLogHeadInterval},
		{name: "every commit", section: "{path: e.jsonl, head_interval: 0s}", want: 0},
		{name: "bare zero", section: "{path: e.jsonl, head_interval: 0}", want: 0},
		{name: "lowest", section: "{path: e.jsonl, head_interval: 1ms}", want: time.Millisecond},
		{name: "highest", section: "{path: e.jsonl, head_interval: 1m}", want: time.Minute},
		{name: "negative", section: "{path: e.jsonl, head_interval: -1s}", err: "event_log.head_interval: -1s: want 0 (the head in every commit) or 1ms to 1m0s"},
		{name: "too long", section: "{path: e.jsonl, head_interval: 1h}", err: "event_log.head_interval: 1h0m0s: want"},
		{name: "under a millisecond", section: "{path: e.jsonl, head_interval: 10us}", err: "event_log.head_interval: 10µs: want"},
		{name: "not a duration", section: "{path: e.jsonl, head_interval: soon}", err: "event_log.head_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(write(t, "gatehost.yaml", "event_log: "+tc.section+"\n"))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, tc.want, l.LogHeadInterval)
		})
	}
}
