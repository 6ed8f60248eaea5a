package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/apart"
	"github.com/gatehost/gatehost/internal/engine"
)

// errStageDeadline is the cause of a stage's context when the stage's own
// deadline passed, as opposed to the caller's context ending.
var errStageDeadline = errors.New("stage deadline passed")

// answer is what one guest call produced.
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

// checkInlineBytes is the largest answer the host checks on the stage's own
// goroutine. Checking an answer (decode, schema, member names) is linear in
// its size but not cheap: about 3 ms for 64 KiB of small values and 100 ms
// for 1 MiB on the reference machine (docs/PERFORMANCE.md), and
// max_response_bytes allows 64 MiB. So an answer above this size is checked
// on a goroutine of its own, which the stage abandons at its deadline;
// below it, the check ends within a millisecond or so of the deadline, and
// the hand-off to another goroutine would cost more than it bounds.
const checkInlineBytes = 32 << 10

// lateCallWarning is how long after its stage deadline a guest call may
// return before the host warns: a guest stopped at its next deadline test
// returns at once, so a late one means a step that does not end with its
// context (docs/RATIONALE.md, "Stage deadline").
const lateCallWarning = 100 * time.Millisecond

// evaluate runs one evaluation of s's plugin on the stage's goroutine:
// creating the instance when inst is nil (acquire reserved a slot for it),
// gate_alloc, gate_evaluate and the check of the answer, all under ctx,
// the stage's deadline.
//
// Each step ends soon after ctx does: guest code at its next interrupt test
// (the rewrite puts one at every function entry, loop header and return
// from a call, and between 1 MiB chunks of memory.copy, memory.fill and
// random_get; the other WASI calls the guest sizes are capped), a host call
// because every capability serves under ctx (a request above
// callInlineBytes is served apart), and the check of an answer of at most
// checkInlineBytes in about a millisecond; a larger answer's check is
// abandoned at the deadline (pool.checkAnswer).
//
// ok is false when ctx ended before the answer was checked; the stage
// then fails as expired says, and the instance is discarded, as after any
// failure of the gate.
func (h *Host) evaluate(ctx context.Context, s *stage, inst *engine.Instance, state *runContext, req []byte) (ans answer, ok bool) {
	p := s.plugin.pool
	p.calls.Add(1)
	defer p.calls.Done()
	if inst == nil {
		var err error
		if inst, err = p.instantiate(ctx); err != nil {
			return answer{err: err, fault: true}, true
		}
	}
	if p.onRequest != nil {
		p.onRequest(req)
	}
	out, err := inst.Evaluate(ctx, state, req, uint32(h.cfg.MaxResponseBytes))
	if err != nil {
		h.warnLate(ctx, s, state)
		stdout, stderr := inst.Output()
		return answer{inst: inst, err: err, fault: true, stdout: stdout, stderr: stderr}, true
	}
	if ended(ctx) { // answered, but after the deadline
		h.warnLate(ctx, s, state)
		p.put(inst, false)
		return answer{}, false
	}
	checked, ok := p.checkAnswer(ctx, out)
	if !ok {
		p.put(inst, false)
		return answer{}, false
	}
	checked.inst = inst
	return checked, true
}

// checkAnswer checks out, a guest's answer, on the calling goroutine when
// it is small and on a goroutine of its own otherwise (checkInlineBytes);
// ok is false when ctx ended first. The answer's info is set either way a
// check ends.
func (p *pool) checkAnswer(ctx context.Context, out []byte) (ans answer, ok bool) {
	if len(out) <= p.checkInline {
		ans = p.checkOut(out)
		return ans, !ended(ctx)
	}
	ans, err := apart.Run(ctx, func() answer { return p.checkOut(out) })
	var pe *apart.PanicError
	switch {
	case errors.As(err, &pe): // the check is the host's: its panic is a host error, not the gate's
		return answer{err: fmt.Errorf("%w: checking the answer: %v", ErrHostError, pe.Value), info: newAnswer(out)}, true
	case err != nil:
		return answer{}, false
	}
	return ans, true
}

// checkOut is the host's check of an answer; the instance is not needed
// (out is a copy of the guest's bytes).
func (p *pool) checkOut(out []byte) answer {
	if p.onAnswer != nil {
		p.onAnswer()
	}
	resp, err := checkAnswerMemo(out, &p.passed)
	if err != nil {
		return answer{err: err, info: newAnswer(out)}
	}
	resp, info := boundAnswer(resp, out)
	return answer{resp: resp, info: info}
}

// ended reports whether ctx is done or its deadline has passed. A passed
// deadline is waited on until ctx says so, which is at once: a context's
// Err and Cause are set by a timer that may not have run yet, and expired
// reads the cause.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		<-ctx.Done()
		return true
	}
	return false
}

// warnLate logs a guest call that returned more than lateCallWarning after
// its stage deadline.
func (h *Host) warnLate(ctx context.Context, s *stage, state *runContext) {
	dl, has := ctx.Deadline()
	if !has || ctx.Err() == nil {
		return
	}
	if late := time.Since(dl); late > lateCallWarning {
		h.logger.Warn("host: guest call returned long after its stage deadline",
			"run_id", state.runID, "pipeline", state.pipeline, "stage", state.stage, "plugin", s.cfg.Plugin, "late", late)
	}
}

// checkAnswer checks a gate's answer: first its nesting depth, in one linear
// pass, so that no answer within the size cap makes the decoder or the
// schema validator work superlinearly; then the schema and the decoding.
func checkAnswer(out []byte) (abi.Response, error) { return checkAnswerMemo(out, nil) }

// checkAnswerMemo is checkAnswer, skipping the response schema and the
// member-name check for bytes memo holds (answerMemo); memo may be nil.
func checkAnswerMemo(out []byte, memo *answerMemo) (abi.Response, error) {
	if err := checkDepth(out, abi.MaxAnswerDepth); err != nil {
		return abi.Response{}, err
	}
	return decodeAnswer(out, memo)
}

// Bounds of an answerMemo: answers up to answerMemoBytes long, at most
// answerMemoEntries of them (then it starts afresh).
const (
	answerMemoBytes   = 4 << 10
	answerMemoEntries = 64
)

// answerMemo holds answers, byte for byte, that passed the response schema
// and the member-name check. Both are pure functions of the bytes, so an
// answer seen before is only decoded: a warm gate often answers the same
// bytes again (the exec gate, for a tool called again in a session under the
// same catalog generation), and the two checks are most of the host's work
// on a small answer (docs/PERFORMANCE.md). The key is the bytes themselves,
// not a digest of them, so no answer can pass as another.
type answerMemo struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (a *answerMemo) holds(out []byte) bool {
	if a == nil || len(out) > answerMemoBytes {
		return false
	}
	a.mu.Lock()
	_, ok := a.m[string(out)]
	a.mu.Unlock()
	return ok
}

func (a *answerMemo) add(out []byte) {
	if a == nil || len(out) > answerMemoBytes {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m) >= answerMemoEntries {
		a.m = make(map[string]struct{}, answerMemoEntries)
	}
	a.m[string(out)] = struct{}{}
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
