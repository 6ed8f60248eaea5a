package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/engine"
)

// errStageDeadline is the cause of a stage's context when the stage's own
// deadline passed, as opposed to the caller's context ending.
var errStageDeadline = errors.New("stage deadline passed")

// answer is what one guest call produced. It is decided on the call's own
// goroutine, so everything in it is covered by the stage deadline.
type answer struct {
	// inst is the instance the call ran on; nil when creating it failed.
	inst *engine.Instance
	resp abi.Response
	// err is the call's failure: a fault of the guest when fault is set
	// (trap, timeout, out of memory, a bad buffer), else the host's
	// refusal of the answer (abi_violation).
	err   error
	fault bool
	// info describes the answer the guest returned, if it returned one.
	info *Answer
	// stdout and stderr are the guest's output tails after a fault.
	stdout, stderr string
}

// States of a stageCall: the call's goroutine and the stage race to move
// it out of callRunning, and the winner decides who owns the instance.
const (
	callRunning int32 = iota
	callFinished
	callAbandoned
)

type stageCall struct {
	state atomic.Int32
	done  chan struct{} // closed when the call finished in time
	ans   answer        // written before done is closed
	// abandonedAt is when the stage gave up on the call (UnixNano),
	// stored before the state says so.
	abandonedAt atomic.Int64
}

// lateCallWarning is how long after its stage ended a call may return
// before the host warns: a guest stopped at its next deadline check returns
// at once, one inside a long bulk-memory instruction does not.
const lateCallWarning = 100 * time.Millisecond

// evaluate runs one evaluation of s's plugin on a goroutine of its own (a
// parked worker's, h.workers) —
// creating the instance when inst is nil (acquire reserved a slot for it),
// gate_alloc, gate_evaluate and the check of the answer — and waits for it
// until ctx is done.
//
// ok is false when ctx ended first. The call is then abandoned: the stage
// ends now, and the goroutine discards the instance when the guest returns
// (at its next deadline check, or after a bulk-memory instruction that
// cannot be interrupted). Only then is the pool slot released, so the pool
// size still bounds the live instances.
func (h *Host) evaluate(ctx context.Context, s *stage, inst *engine.Instance, state *runContext, req []byte) (ans answer, ok bool) {
	p := s.plugin.pool
	c := &stageCall{done: make(chan struct{})}
	maxBytes := uint32(h.cfg.MaxResponseBytes)
	p.calls.Add(1)
	h.workers.run(func() {
		defer p.calls.Done()
		start := time.Now()
		c.ans = runCall(ctx, p, inst, state, req, maxBytes)
		if c.state.CompareAndSwap(callRunning, callFinished) {
			close(c.done)
			return
		}
		// Abandoned: nobody else holds the instance.
		if c.ans.inst != nil {
			p.put(c.ans.inst, false)
		}
		p.abandoned.Add(-1) // after put: a run that waited for this slot sees it was ours
		late := time.Since(time.Unix(0, c.abandonedAt.Load()))
		level := slog.LevelDebug
		if late > lateCallWarning {
			level = slog.LevelWarn
		}
		h.logger.Log(context.Background(), level, "host: guest call returned after its stage ended",
			"run_id", state.runID, "pipeline", state.pipeline, "stage", state.stage, "plugin", s.cfg.Plugin,
			"ran", time.Since(start), "late", late, "stdout", c.ans.stdout, "stderr", c.ans.stderr)
	})
	select {
	case <-c.done:
		return c.ans, true
	case <-ctx.Done():
		p.abandoned.Add(1) // before the swap, so the goroutine's decrement follows it
		c.abandonedAt.Store(time.Now().UnixNano())
		if c.state.CompareAndSwap(callRunning, callAbandoned) {
			return answer{}, false
		}
		p.abandoned.Add(-1)
		<-c.done // it finished as the deadline passed: use its answer
		return c.ans, true
	}
}

// runCall is the body of a guest call, on the call's goroutine.
func runCall(ctx context.Context, p *pool, inst *engine.Instance, state *runContext, req []byte, maxBytes uint32) answer {
	if inst == nil {
		var err error
		if inst, err = p.instantiate(ctx); err != nil {
			return answer{err: err, fault: true}
		}
	}
	if p.onRequest != nil {
		p.onRequest(req)
	}
	out, err := inst.Evaluate(ctx, state, req, maxBytes)
	if err != nil {
		stdout, stderr := inst.Output()
		return answer{inst: inst, err: err, fault: true, stdout: stdout, stderr: stderr}
	}
	if p.onAnswer != nil {
		p.onAnswer()
	}
	resp, err := checkAnswer(out)
	if err != nil {
		return answer{inst: inst, err: err, info: newAnswer(out)}
	}
	resp, info := boundAnswer(resp, out)
	return answer{inst: inst, resp: resp, info: info}
}

// checkAnswer checks a gate's answer: first its nesting depth, in one linear
// pass, so that no answer within the size cap makes the decoder or the
// schema validator work superlinearly; then the schema and the decoding.
func checkAnswer(out []byte) (abi.Response, error) {
	if err := checkDepth(out, abi.MaxAnswerDepth); err != nil {
		return abi.Response{}, err
	}
	return decodeResponse(out)
}

// DepthError is a JSON document nested deeper than its limit.
type DepthError struct {
	// Limit is the deepest nesting allowed; Offset the byte at which the
	// document went one level deeper.
	Limit  int
	Offset int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("answer nests deeper than %d levels (at byte %d)", e.Limit, e.Offset)
}

// checkDepth refuses b when its objects and arrays nest more than limit
// levels deep (the outermost value is level 1). It looks only at brackets
// outside strings; whether b is JSON at all is the decoder's concern.
func checkDepth(b []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return &DepthError{Limit: limit, Offset: i}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// expired is the reason and error of a stage whose context ended before it
// had an answer. Only the stage's own deadline is the gate's fault
// (plugin_timeout), and only when the stage did not first wait for capacity
// the host's load held (shortage, see pool.acquire): that wait shortened the
// time the gate had, so the timeout is the host's shortage (host_overloaded),
// which quarantine does not count. The caller's context ending first is
// canceled.
func expired(ctx context.Context, timeout time.Duration, shortage bool) (string, error) {
	switch {
	case context.Cause(ctx) != errStageDeadline:
		return abi.ReasonCanceled, fmt.Errorf("the caller's context ended before the stage answered: %w", context.Cause(ctx))
	case shortage:
		return abi.ReasonHostOverloaded, fmt.Errorf("stage deadline of %v passed after the stage waited for a free instance: %w", timeout, errStageDeadline)
	}
	return abi.ReasonPluginTimeout, fmt.Errorf("stage deadline of %v passed while the gate ran or its answer was checked: %w", timeout, errStageDeadline)
}
