package server

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeLoad drives the two-gate pipeline (static-verify, then
// preconditions) over loopback at concurrency 1, 8 and 64, each level
// bounded in count and in time, and reports throughput and p50/p99. Every
// request must answer 200, and the event log must hold exactly one
// decision record per decision. Figures: go test -run TestServeLoad -v.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test (over a thousand requests): skipped under -short (make test runs it)")
	}
	dir := t.TempDir()
	p := variantParams(false)
	p.twoGate = true
	p.limits = "max_queued_runs: 256\nqueue_timeout: 60s"
	ts := startServe(t, writeServeConfig(t, dir, p), nil)
	a := ts.do(t, "POST", "/v1/pipelines/two-gate/check", readThenWrite)
	require.Equal(t, 200, a.status, string(a.body))
	require.Len(t, a.decision(t).Stages, 2)
	total := 1

	levels := []struct{ conc, count int }{{1, 200}, {8, 600}, {64, 960}}
	budget := 20 * time.Second
	if raceEnabled {
		levels = []struct{ conc, count int }{{1, 40}, {8, 160}, {64, 256}}
	}
	for _, lv := range levels {
		var (
			next    atomic.Int64
			errs    atomic.Int64
			mu      sync.Mutex
			lat     []time.Duration
			wg      sync.WaitGroup
			timeout = time.Now().Add(budget)
		)
		start := time.Now()
		for range lv.conc {
			wg.Go(func() {
				for next.Add(1) <= int64(lv.count) && time.Now().Before(timeout) {
					t0 := time.Now()
					resp, err := ts.client.Post(ts.url+"/v1/pipelines/two-gate/check", "application/json", strings.NewReader(string(readThenWrite)))
					if err != nil {
						errs.Add(1)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					d := time.Since(t0)
					if resp.StatusCode != http.StatusOK {
						errs.Add(1)
						continue
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		slices.Sort(lat)
		n := len(lat)
		require.NotZero(t, n)
		total += n
		pct := func(q float64) time.Duration { return lat[min(n-1, int(q*float64(n)))] }
		t.Logf("concurrency %2d: %5d requests in %6.2fs = %6.0f req/s, p50 %6.2fms, p99 %6.2fms, errors %d",
			lv.conc, n, elapsed.Seconds(), float64(n)/elapsed.Seconds(),
			float64(pct(0.50).Microseconds())/1000, float64(pct(0.99).Microseconds())/1000, errs.Load())
		assert.Zero(t, errs.Load(), "concurrency %d", lv.conc)
	}
	require.NoError(t, ts.stop(t))
	logged, _ := decisionRecords(t, filepath.Join(dir, "events.jsonl"))
	t.Logf("decisions answered %d, decision records in the event log %d", total, logged)
	assert.Equal(t, total, logged, fmt.Sprintf("lost %d event-log records", total-logged))
}
