package host_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestStageEndsAtDeadlineDuringAnswerCheck holds the host's check of a
// gate's answer past the stage's deadline. An answer checked apart (one
// above checkInlineBytes) is abandoned: the stage ends at its deadline with
// plugin_timeout while the check still runs. One checked on the stage's
// goroutine ends the stage when the check returns, plugin_timeout all the
// same: an answer counts only when checked in time. Either way the instance
// is discarded at once, so the pool's slot is free for the next run.
func TestStageEndsAtDeadlineDuringAnswerCheck(t *testing.T) {
	for _, apart := range []bool{true, false} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) {
			// The guest must answer before the deadline for the check to be
			// what the deadline interrupts; should a busy machine make it
			// slower than that, try again with a longer deadline rather than
			// assert on time.
			for _, timeout := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 5 * time.Second, 30 * time.Second} {
				if stageEndsDuringAnswerCheck(t, timeout, apart) {
					return
				}
				t.Logf("the guest did not answer within %v; trying a longer deadline", timeout)
			}
			t.Fatal("the guest never answered before its deadline")
		})
	}
}

func stageEndsDuringAnswerCheck(t *testing.T, timeout time.Duration, apart bool) (answered bool) {
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"g": {Path: flakyWasm}},
		Pipelines: map[string]host.PipelineConfig{
			"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "g", Timeout: timeout}}},
			// The same plugin (and pool) with time enough to instantiate
			// on a busy machine, for the run after the one under test.
			"long": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "g", Timeout: time.Minute}}},
		},
		PoolSize:   1,
		Quarantine: host.QuarantineConfig{Disabled: true},
	})
	if apart {
		host.CheckAnswersApart(h, "g")
	}
	entered, release := make(chan struct{}, 4), make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	var hold atomic.Bool
	hold.Store(true)
	host.OnAnswerCheck(h, "g", func() {
		if !hold.Load() {
			return
		}
		entered <- struct{}{}
		if apart {
			<-release // past the deadline: the stage does not wait
			return
		}
		time.Sleep(timeout) // the deadline, set before the guest ran, passes
	})
	waits := make(chan struct{}, 4)
	host.OnPoolWait(h, "g", func() { waits <- struct{}{} })

	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	st := d.Stages[0]
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	assert.Equal(t, abi.ReasonPluginTimeout, st.Reason, "evidence: %v", st.Evidence)
	assert.ErrorIs(t, d.Err(), host.ErrPluginTimeout)
	select {
	case <-entered:
	default:
		return false // the guest itself was too slow: not the case under test
	}
	assert.Contains(t, st.Evidence["error"], "while the gate ran or its answer was checked")
	_, discarded := host.InstanceCounts(h, "g")
	assert.EqualValues(t, 1, discarded, "the instance of a call that failed its deadline is discarded")

	// The slot is free at once: the next run gets a fresh instance without
	// waiting. It runs with a long deadline, so that a busy machine cannot
	// make its instantiation, which the count below needs, time out.
	hold.Store(false)
	d, err = h.Check(context.Background(), "long", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Verdict, "evidence: %v", d.Stages[0].Evidence)
	assert.Empty(t, waits, "no run waited for an instance")
	created, _ := host.InstanceCounts(h, "g")
	assert.EqualValues(t, 2, created)
	return true
}

// TestAnswerDepthCap: the nesting cap refuses a deep answer whatever its
// verdict, in any member, before schema validation; brackets in strings do
// not count, and exactly MaxAnswerDepth levels pass.
func TestAnswerDepthCap(t *testing.T) {
	nest := func(n int, inner string) string {
		s := inner
		for range n {
			s = "[" + s + "]"
		}
		return s
	}
	tests := []struct {
		name   string
		answer string
		ok     bool
	}{
		{"accepted, evidence at the cap", `{"verdict":"accepted","evidence":{"x":` + nest(abi.MaxAnswerDepth-2, "1") + `}}`, true},
		{"accepted, evidence one past the cap", `{"verdict":"accepted","evidence":{"x":` + nest(abi.MaxAnswerDepth-1, "1") + `}}`, false},
		{"deep objects", `{"verdict":"accepted","evidence":` + deepObjects(abi.MaxAnswerDepth) + `}`, false},
		{"deep finding details", `{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","details":{"d":` + nest(abi.MaxAnswerDepth, "0") + `}}]}`, false},
		{"brackets inside strings", `{"verdict":"accepted","evidence":{"x":"` + nest(1000, `\"`) + `"}}`, true},
		{"escaped backslash before a quote", `{"verdict":"accepted","evidence":{"x":"\\","y":` + nest(abi.MaxAnswerDepth-2, "1") + `}}`, true},
		{"unbalanced closers", `{"verdict":"accepted","evidence":{"x":1}}]]]]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.CheckAnswer([]byte(tt.answer))
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.name != "unbalanced closers" {
				var de *host.DepthError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, abi.MaxAnswerDepth, de.Limit)
			}
		})
	}
}

func deepObjects(n int) string {
	s := "1"
	for range n {
		s = `{"a":` + s + `}`
	}
	return s
}

// TestQuarantineIgnoresLoad: a gate whose stage first waited for a free
// instance and then ran out of time has not had its whole timeout, and the
// caller's own deadline is not the gate's either; neither counts toward
// quarantine. Timeouts the gate had all its time for do.
func TestQuarantineIgnoresLoad(t *testing.T) {
	loop, err := testwasm.WAT("testdata/hostile/infinite-loop.wat")
	require.NoError(t, err)
	h := hosttest.New(t, host.Config{
		Plugins:    map[string]host.PluginConfig{"loop": {Module: loop}},
		Pipelines:  map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "loop", Timeout: 50 * time.Millisecond}}}},
		PoolSize:   1,
		Quarantine: host.QuarantineConfig{Failures: 2, Window: time.Hour, Backoff: time.Hour, MaxBackoff: time.Hour},
	})
	waiting := make(chan struct{}, 1)
	host.OnPoolWait(h, "loop", func() { waiting <- struct{}{} })
	ctx := context.Background()
	check := func(ctx context.Context) host.StageResult {
		t.Helper()
		d, err := h.Check(ctx, "p", []byte(okProposal), host.RunOptions{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict)
		host.WaitCalls(h)
		return d.Stages[0]
	}

	// Under load: another run holds the only instance; this run waits, gets
	// it late (or never) and runs out of time. Five times, more than
	// Failures.
	for i := range 5 {
		release, err := host.HoldInstance(ctx, h, "loop")
		require.NoError(t, err)
		res := make(chan host.StageResult, 1)
		go func() {
			d, err := h.Check(ctx, "p", []byte(okProposal), host.RunOptions{})
			if err != nil || len(d.Stages) != 1 {
				res <- host.StageResult{Reason: "test: no decision"}
				return
			}
			res <- d.Stages[0]
		}()
		<-waiting // the run is waiting for the instance held above
		release()
		st := <-res
		host.WaitCalls(h)
		assert.Equal(t, abi.ReasonHostOverloaded, st.Reason, "run %d under load: %v", i, st.Evidence)
		assert.ErrorIs(t, st.Err(), host.ErrHostOverloaded)
	}

	// The caller's deadline, well before the stage's: canceled, not counted.
	for range 3 {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		long := check(cctx)
		cancel()
		assert.Equal(t, "canceled", long.Reason, "evidence: %v", long.Evidence)
	}

	// Without load the same gate's timeouts are its own: the first two
	// count, and quarantine it.
	assert.Equal(t, abi.ReasonPluginTimeout, check(ctx).Reason, "the load above counted nothing: not quarantined")
	assert.Equal(t, abi.ReasonPluginTimeout, check(ctx).Reason)
	assert.Equal(t, abi.ReasonPluginQuarantined, check(ctx).Reason, "two faults of its own quarantine it")
}

// TestStageEndsAtDeadlineDuringLargeHostCall holds the host's serving of a
// guest's 40,000-byte host call past the stage's deadline: a request above
// 32 KiB is served apart, so the stage ends at its deadline with
// plugin_timeout while the call is still being served.
func TestStageEndsAtDeadlineDuringLargeHostCall(t *testing.T) {
	wasm, err := testwasm.WAT("testdata/interrupt/large-host-call.wat")
	require.NoError(t, err)
	// The guest must make its host call before the deadline for the call
	// to be what the deadline interrupts; should a busy machine make it
	// slower than that, try again with a longer deadline.
	for _, timeout := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 5 * time.Second} {
		if stageEndsDuringHostCall(t, wasm, timeout) {
			return
		}
		t.Logf("the guest did not call the host within %v; trying a longer deadline", timeout)
	}
	t.Fatal("the guest never called the host before its deadline")
}

func stageEndsDuringHostCall(t *testing.T, wasm []byte, timeout time.Duration) (called bool) {
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"g": {Module: wasm}},
		Catalog: hosttest.GitHubCatalog(t),
		Pipelines: map[string]host.PipelineConfig{"p": {Subject: "proposal", Stages: []host.StageConfig{
			{Plugin: "g", Timeout: timeout, Capabilities: []string{"catalog"}}}}},
		Quarantine: host.QuarantineConfig{Disabled: true},
	})
	release := make(chan struct{})
	served := make(chan string, 1)
	host.OnServe(h, func(op string) {
		served <- op
		<-release
	})
	defer close(release)
	type result struct {
		d   *host.Decision
		err error
	}
	res := make(chan result, 1)
	go func() {
		d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
		res <- result{d, err}
	}()
	select {
	case r := <-res:
		require.NoError(t, r.err)
		assert.Equal(t, abi.Inconclusive, r.d.Verdict)
		assert.Equal(t, abi.ReasonPluginTimeout, r.d.Stages[0].Reason, "evidence: %v", r.d.Stages[0].Evidence)
	case <-time.After(time.Minute):
		t.Fatal("the stage did not end while its host call was held")
	}
	select {
	case op := <-served:
		assert.Equal(t, "catalog.list", op)
		return true
	default:
		return false // the guest itself was too slow: not the case under test
	}
}

// TestAnswerCheckPanicIsAHostError: a panic in the host's check of an
// answer checked apart is recovered on that goroutine (it would end the
// process) and makes the stage inconclusive with host_error: never an
// acceptance, and not the gate's abi_violation.
func TestAnswerCheckPanicIsAHostError(t *testing.T) {
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"g": {Path: flakyWasm}},
		Pipelines: map[string]host.PipelineConfig{
			"p": {Subject: "proposal", Stages: []host.StageConfig{{Plugin: "g", Timeout: time.Minute}}},
		},
		PoolSize:   1,
		Quarantine: host.QuarantineConfig{Disabled: true},
	})
	host.CheckAnswersApart(h, "g")
	host.OnAnswerCheck(h, "g", func() { panic("a bug in the host's check") })
	d, err := h.Check(context.Background(), "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	st := d.Stages[0]
	assert.Equal(t, abi.ReasonHostError, st.Reason, "evidence: %v", st.Evidence)
	assert.ErrorIs(t, d.Err(), host.ErrHostError)
	assert.Contains(t, st.Evidence["error"], "a bug in the host's check")
}
