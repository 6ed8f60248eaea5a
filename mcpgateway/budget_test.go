package mcpgateway_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// TestUpstreamRequestFlood: an upstream that asks the client for its roots
// again and again gets its budget (MaxUpstreamRequestsPerMinute) and then
// refusals, which never reach the client; the event log holds a record of
// each request relayed or answered and few records of the refusals, which
// together count every one.
func TestUpstreamRequestFlood(t *testing.T) {
	const budget, flood = 5, 200
	for _, tc := range []struct {
		name    string
		scoped  bool
		outcome string // of a request within the budget
	}{
		{"session-scoped", true, "relayed"},
		{"shared", false, "answered: no roots (shared upstream)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = tc.scoped
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
				MaxUpstreamRequestsPerMinute: budget})
			cs := connect(t, g, nil)
			toolNames(t, cs)
			start := time.Now()
			r := call(t, cs, "ask", map[string]any{"via": "roots_flood", "n": flood})
			elapsed := time.Since(start)
			require.False(t, r.IsError, text(r))
			var ok, refused int
			_, err := fmt.Sscanf(text(r), "ok %d refused %d", &ok, &refused)
			require.NoError(t, err, text(r))
			assert.Equal(t, flood, ok+refused)
			// The bucket refills one request every 60/budget seconds.
			assert.GreaterOrEqual(t, ok, budget)
			assert.LessOrEqual(t, ok, budget+1+int(elapsed/(time.Minute/budget)), "within the budget")

			require.NoError(t, g.Close()) // records the refusals not yet recorded
			var within, refusalRecords, counted int
			for _, rec := range logRecords(t, f.logPath, "mcp_upstream_request") {
				var d struct {
					Method, Outcome string
					Refused         int
				}
				require.NoError(t, json.Unmarshal(rec.Data, &d))
				switch {
				case d.Outcome == tc.outcome:
					assert.Equal(t, "roots/list", d.Method)
					within++
				case d.Refused > 0:
					assert.Contains(t, d.Outcome, "over the upstream's request budget")
					refusalRecords++
					counted += d.Refused
				default:
					t.Errorf("unexpected record %s", rec.Data)
				}
			}
			assert.Equal(t, ok, within, "each request within the budget recorded")
			assert.Equal(t, refused, counted, "every refusal counted")
			// One record a second at most, and the one at close.
			assert.LessOrEqual(t, refusalRecords, 2+int(elapsed/time.Second))
		})
	}
}

// TestUpstreamAnnouncementFlood: an upstream that announces a change of
// its tools thousands of times costs a few listings, not one each, and a
// call after it is decided on a listing read after the last announcement.
func TestUpstreamAnnouncementFlood(t *testing.T) {
	const flood = 2000
	for _, scoped := range []bool{true, false} {
		t.Run(fmt.Sprintf("session-scoped=%v", scoped), func(t *testing.T) {
			f := newFixture(t, nil, nil)
			up := stdioUpstream(t, "notes")
			up.SessionScoped = scoped
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}})
			cs := connect(t, g, nil)
			toolNames(t, cs)
			lists := func() int {
				var n int
				_, err := fmt.Sscanf(text(call(t, cs, "ask", map[string]any{"via": "lists"})), "lists %d", &n)
				require.NoError(t, err)
				return n
			}
			before := lists()
			assert.Equal(t, "announced", text(call(t, cs, "ask", map[string]any{"via": "announce", "n": flood})))
			r := call(t, cs, "read_note", map[string]any{"name": "a"})
			assert.False(t, r.IsError, text(r))
			// Listings run one at a time, and the announcements that come
			// during one cost one more; without that, one listing each.
			assert.Less(t, lists()-before, flood/20)
		})
	}
}
