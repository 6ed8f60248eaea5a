package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// fakeClock is an injectable clock for Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestQuarantineTimeline: a Go guest that keeps crashing is quarantined after
// 5 faults in 30s; quarantined runs do not call it; it is probed after 1s, the
// failed probe doubles the backoff to 2s, and a healthy probe lifts the
// quarantine. Each change is in the event log.
func TestQuarantineTimeline(t *testing.T) {
	goGuest, err := testwasm.Go("internal/testing/testguests/hostile")
	require.NoError(t, err)
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	logPath := filepath.Join(t.TempDir(), "events.jsonl")
	h := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"hostile": {Path: goGuest}},
		Pipelines:    hosttest.OnePipeline("hostile"),
		PoolSize:     1,
		Now:          clock.Now,
		EventLogPath: logPath,
	})
	start := clock.Now()
	run := func(id, wantReason string, wantVerdict abi.Verdict) {
		t.Helper()
		before, _ := host.InstanceCounts(h, "hostile")
		d, err := h.Check(context.Background(), "p", []byte(`{"id":"`+id+`","actions":[]}`), host.RunOptions{})
		require.NoError(t, err)
		after, _ := host.InstanceCounts(h, "hostile")
		st := d.Stages[0]
		t.Logf("t=+%-4v %-16s → %-12s %-20s guest called: %v", clock.Now().Sub(start), id, st.Verdict, st.Reason, after > before || st.Reason != abi.ReasonPluginQuarantined)
		require.Equal(t, wantVerdict, d.Verdict)
		require.Equal(t, wantReason, st.Reason)
		if wantReason == abi.ReasonPluginQuarantined {
			assert.Equal(t, before, after, "a quarantined stage does not instantiate or call the guest")
			assert.ErrorIs(t, d.Err(), host.ErrPluginQuarantined)
			assert.NotEmpty(t, st.Evidence["quarantined_until"])
		}
	}
	for range 4 {
		run("goroutine-panic", abi.ReasonPluginTrap, abi.Inconclusive)
		clock.Advance(time.Second)
	}
	run("goroutine-panic", abi.ReasonPluginTrap, abi.Inconclusive) // 5th fault in 30s
	run("fine", abi.ReasonPluginQuarantined, abi.Inconclusive)
	clock.Advance(999 * time.Millisecond)
	run("fine", abi.ReasonPluginQuarantined, abi.Inconclusive)
	clock.Advance(time.Millisecond)                                // backoff of 1s over: one probe
	run("goroutine-panic", abi.ReasonPluginTrap, abi.Inconclusive) // the probe faults: 2s
	clock.Advance(1500 * time.Millisecond)
	run("fine", abi.ReasonPluginQuarantined, abi.Inconclusive)
	clock.Advance(500 * time.Millisecond)
	run("fine", "", abi.Accepted) // healthy probe: lifted
	run("fine", "", abi.Accepted)

	require.NoError(t, h.Close(context.Background()))
	_, err = eventlog.Verify(logPath, eventlog.VerifyOptions{})
	require.NoError(t, err)
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, eventlog.MaxRecordBytes+1)
	for sc.Scan() {
		var r eventlog.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Kind == "quarantine" || r.Kind == "quarantine_lifted" {
			kinds = append(kinds, r.Kind)
			assert.Equal(t, "hostile", r.Plugin)
			if r.Kind == "quarantine" {
				assert.Equal(t, abi.ReasonPluginQuarantined, r.Reason)
				t.Logf("log: %s %s", r.Kind, r.Data)
			}
		}
	}
	assert.Equal(t, []string{"quarantine", "quarantine", "quarantine_lifted"}, kinds)
}

// TestOverloaded: over the cap of concurrent runs a run waits for its
// deadline (or the queue timeout) and is then inconclusive with
// host_overloaded; beyond the queue cap it is refused at once; a canceled
// caller gets canceled. None of them calls a guest. The run holding the one
// slot loops until the test cancels it, so no step depends on how fast the
// machine is.
func TestOverloaded(t *testing.T) {
	loop, err := testwasm.WAT("testdata/hostile/infinite-loop.wat")
	require.NoError(t, err)
	newOverloadHost := func(queueTimeout time.Duration) *host.Host {
		return hosttest.New(t, host.Config{
			Plugins: map[string]host.PluginConfig{"loop": {Module: loop}, "flaky": {Path: flakyWasm}},
			Pipelines: map[string]host.PipelineConfig{
				"loop": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "loop", Timeout: 10 * time.Minute}}},
				"good": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "flaky"}}},
			},
			MaxConcurrentRuns: 1,
			MaxQueuedRuns:     1,
			QueueTimeout:      queueTimeout,
		})
	}
	// hold runs the looping gate in the one run slot until release is
	// called, which waits for the run to end.
	hold := func(h *host.Host) (release func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			d, err := h.Check(ctx, "loop", []byte(okProposal), host.RunOptions{})
			assert.NoError(t, err)
			assert.Equal(t, "canceled", d.Stages[0].Reason)
		}()
		require.Eventually(t, func() bool { return host.RunsInProgress(h) == 1 }, time.Minute, time.Millisecond)
		return func() { cancel(); <-done }
	}
	check := func(h *host.Host, ctx context.Context, want string) *host.Decision {
		t.Helper()
		d, err := h.Check(ctx, "good", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict)
		assert.Equal(t, want, d.Stages[0].Reason, "%v", d.Stages[0].Evidence)
		return d
	}

	h := newOverloadHost(200 * time.Millisecond)
	release := hold(h)
	// Queue timeout.
	check(h, context.Background(), abi.ReasonHostOverloaded)
	// The caller's deadline, earlier than the queue timeout.
	dctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	check(h, dctx, abi.ReasonHostOverloaded)
	cancel()
	// Canceled while waiting.
	cctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	check(h, cctx, "canceled")
	release()
	// Capacity is back: served.
	d, err := h.Check(context.Background(), "good", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)

	// Queue full: refused at once ("queue full", not a queue timeout). The
	// queued run waits until the test cancels it.
	h = newOverloadHost(10 * time.Minute)
	release = hold(h)
	qctx, cancelQueued := context.WithCancel(context.Background())
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		check(h, qctx, "canceled")
	}()
	require.Eventually(t, func() bool { return host.RunsQueued(h) == 1 }, time.Minute, time.Millisecond)
	d = check(h, context.Background(), abi.ReasonHostOverloaded)
	assert.ErrorIs(t, d.Err(), host.ErrHostOverloaded)
	assert.Contains(t, d.Stages[0].Evidence["error"], "queue full")
	cancelQueued()
	<-queued
	release()
}

// TestPoolWaitIsOverload: a run that waits past its deadline for an instance
// of a busy plugin is host_overloaded, not plugin_timeout, and does not count
// toward the plugin's quarantine.
func TestPoolWaitIsOverload(t *testing.T) {
	loop, err := testwasm.WAT("testdata/hostile/infinite-loop.wat")
	require.NoError(t, err)
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"loop": {Module: loop}},
		Pipelines: map[string]host.PipelineConfig{
			"slow": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "loop", Timeout: 1500 * time.Millisecond}}},
			"fast": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "loop", Timeout: 100 * time.Millisecond}}},
		},
		PoolSize:   1,
		Quarantine: host.QuarantineConfig{Failures: 2},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.Check(context.Background(), "slow", []byte(okProposal), host.RunOptions{})
	}()
	require.Eventually(t, func() bool { c, _ := host.InstanceCounts(h, "loop"); return host.RunsInProgress(h) == 1 && c >= 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	for range 3 {
		d, err := h.Check(context.Background(), "fast", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.ReasonHostOverloaded, d.Stages[0].Reason)
		assert.Contains(t, d.Stages[0].Evidence["error"], "no free instance")
	}
	<-done
	d, err := h.Check(context.Background(), "fast", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.ReasonPluginTimeout, d.Stages[0].Reason, "3 overloads and 1 timeout: not quarantined")
}

// TestLimitConfigErrors: each limit refuses a bad value, naming its field.
func TestLimitConfigErrors(t *testing.T) {
	for field, cfg := range map[string]host.Config{
		"max_subject_bytes":      {MaxSubjectBytes: -1},
		"max_concurrent_runs":    {MaxConcurrentRuns: -1},
		"max_queued_runs":        {MaxQueuedRuns: -1},
		"queue_timeout":          {QueueTimeout: -time.Second},
		"pool_size":              {PoolSize: host.MaxPoolSize + 1},
		"quarantine.failures":    {Quarantine: host.QuarantineConfig{Failures: -1}},
		"quarantine.max_backoff": {Quarantine: host.QuarantineConfig{Backoff: time.Hour, MaxBackoff: time.Minute}},
	} {
		_, err := host.New(context.Background(), cfg)
		var ce *host.ConfigError
		require.ErrorAs(t, err, &ce, field)
		assert.Equal(t, field, ce.Field)
	}
}

// TestSubjectCap: the configured subject cap refuses larger subjects before
// any stage runs.
func TestSubjectCap(t *testing.T) {
	h := hosttest.New(t, host.Config{
		Plugins:         map[string]host.PluginConfig{"flaky": {Path: flakyWasm}},
		Pipelines:       hosttest.OnePipeline("flaky"),
		MaxSubjectBytes: 64,
	})
	_, err := h.Check(context.Background(), "p", []byte(`{"id":"x","actions":[],"context":{"pad":"`+string(make([]byte, 0))+`0123456789012345678901234567890123456789"}}`), host.RunOptions{})
	assert.ErrorIs(t, err, host.ErrBadSubject)
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict)
}
