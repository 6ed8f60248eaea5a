package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/counter"
)

// The counters capability (abi.CapabilityCounters) lets a stage read the
// counts of the accepted calls of the run's own session and principal
// (operation counters.get; abi/SPEC.md §7.14). Like the session, the counts
// are read once, when the run starts, so every stage of a run sees the
// same. The host counts a tool call when a decision accepts it, before the
// decision is recorded; gates cannot change counts.
func init() { registerCapability(abi.CapabilityCounters, countersCapability{}) }

type countersCapability struct{}

// MaxCounterWindows caps Config.CounterWindows.
const MaxCounterWindows = 8

// CodeCountersUnavailable is the host's finding, and a stage's reason, when
// the counters store failed: an accepted call that could not be counted is
// inconclusive, so a rate limit never lets a call through uncounted.
const CodeCountersUnavailable = "counters_unavailable"

// errCounterStore is what a stage is answered when the counters store
// failed: a fixed text; the cause goes to the host's log with the run id.
var errCounterStore = &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "counters store unavailable"}

// pinnedCounts are the run's counts, read at the start of the run.
type pinnedCounts struct {
	counts counter.Counts
	err    error
}

func checkWindows(ws []time.Duration) error {
	if len(ws) > MaxCounterWindows {
		return cfgErr("counters.windows", "at most %d windows", MaxCounterWindows)
	}
	seen := map[string]bool{}
	for i, w := range ws {
		f := fmt.Sprintf("counters.windows[%d]", i)
		if err := abi.ValidWindow(w); err != nil {
			return &ConfigError{Field: f, Reason: "bad window", Err: err}
		}
		n := abi.WindowName(w)
		if seen[n] {
			return cfgErr(f, "window %s given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// maxWindow is the longest of ws, 0 for none.
func maxWindow(ws []time.Duration) time.Duration {
	if len(ws) == 0 {
		return 0
	}
	return slices.Max(ws)
}

// principalKey is the run principal's counting key; "" when anonymous.
func principalKey(p *abi.Principal) string {
	if p == nil {
		return ""
	}
	return counter.PrincipalKey(p.Issuer, p.Subject)
}

// pinCounters reads the counts of a run whose pipeline grants the counters
// capability to some stage; otherwise it reads nothing. A store failure is
// logged with runID and pinned as errCounterStore.
// readsCounters reports whether some stage of some pipeline is granted the
// counters capability: a host whose gates read no counts counts nothing,
// and adds no store write to an accepted call.
func (h *Host) readsCounters() bool {
	for _, p := range h.pipelines {
		for _, s := range p.stages {
			if slices.Contains(s.cfg.Capabilities, abi.CapabilityCounters) {
				return true
			}
		}
	}
	return false
}

func (h *Host) pinCounters(ctx context.Context, rn *run) *pinnedCounts {
	granted := false
	for _, s := range rn.p.stages {
		granted = granted || slices.Contains(s.cfg.Capabilities, abi.CapabilityCounters)
	}
	if !granted {
		return nil
	}
	c, err := h.counters.Counts(ctx, counter.Query{Session: rn.opts.counterSession(), Principal: principalKey(rn.opts.Principal),
		Windows: h.windows, Now: rn.now})
	if err != nil {
		h.logger.Error("host: counters store unavailable; the run's counters stages are inconclusive",
			"run_id", rn.id, "pipeline", rn.p.name, "session", rn.opts.Session, "err", err)
		return &pinnedCounts{err: errCounterStore}
	}
	return &pinnedCounts{counts: c}
}

// countAccepted counts the call of an accepted tool call decision under
// its canonical tool id (the name as called when the catalog does not hold
// it). It returns the store's error.
// counterSession is the key of the run's session counters
// (RunOptions.CounterSession).
func (o RunOptions) counterSession() string {
	if o.CounterSession != "" {
		return o.CounterSession
	}
	return o.Session
}

func (h *Host) countAccepted(ctx context.Context, rn *run) error {
	var call abi.ToolCall
	if err := json.Unmarshal(rn.subject, &call); err != nil {
		return fmt.Errorf("host: counters: decode tool call: %w", err)
	}
	tool := call.Tool
	if t, ok := rn.snap.Get(call.Tool); ok {
		tool = t.ID
	}
	err := h.counters.Add(ctx, counter.Call{Session: rn.opts.counterSession(), Principal: principalKey(rn.opts.Principal), Tool: tool, At: rn.now})
	if err != nil {
		return fmt.Errorf("host: counters: %w", err)
	}
	return nil
}

// count counts d's call when d accepts a tool call and the host's gates
// read counts (readsCounters). When the store fails
// the decision is made inconclusive with a host finding: a call that could
// not be counted is not accepted.
func (h *Host) count(ctx context.Context, rn *run, d *Decision) {
	if !h.counting || d.Verdict != abi.Accepted || rn.p.cfg.Subject != abi.SubjectToolCall {
		return
	}
	err := h.countAccepted(ctx, rn)
	if err == nil {
		return
	}
	h.logger.Error("host: accepted call not counted; verdict forced to inconclusive", "run_id", rn.id, "pipeline", rn.p.name, "err", err)
	d.Verdict = abi.Inconclusive
	d.Findings = append(d.Findings, Finding{Stage: HostStage, Finding: abi.Finding{Code: CodeCountersUnavailable, Severity: abi.Blocking,
		Tier: abi.DecisionProcedure, Message: "the call could not be counted: counters store unavailable"}})
}

func (countersCapability) call(_ context.Context, rc *runContext, op string, request []byte) (any, error) {
	if op != abi.OpCountersGet {
		return nil, unknownOperation(op)
	}
	var req abi.CountersGetRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, badRequest(op, err)
	}
	pc := rc.counts
	if pc == nil { // granted to no stage at the start of the run; unreachable
		return nil, errCounterStore
	}
	if pc.err != nil {
		return nil, pc.err
	}
	return countsAnswer(rc, pc.counts), nil
}

// countsAnswer names every tool of the run's snapshot in every map, so a
// policy can read any tool's count.
func countsAnswer(rc *runContext, c counter.Counts) abi.CountersGetAnswer {
	var ids []string
	if rc.snap != nil {
		for _, t := range rc.snap.List() {
			ids = append(ids, t.ID)
		}
	}
	fill := func(m map[string]int64) map[string]int64 {
		out := make(map[string]int64, len(ids)+len(m))
		for _, id := range ids {
			out[id] = 0
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	a := abi.CountersGetAnswer{Session: rc.session, Calls: fill(c.Session),
		Windows: map[string]abi.CounterWindow{}, Principal: map[string]abi.CounterWindow{}}
	for _, w := range rc.host.windows {
		n := abi.WindowName(w)
		a.Windows[n] = abi.CounterWindow{Calls: fill(c.Window[w])}
		a.Principal[n] = abi.CounterWindow{Calls: fill(c.Principal[w])}
	}
	return a
}

// Counters returns the host's counters store: Config.Counters, or the
// in-memory store the host made when it was nil.
func (h *Host) Counters() counter.Store { return h.counters }

// CounterWindows returns the windows the host counts (Config.CounterWindows),
// shortest first: a policy that reads a window not among them makes every
// call it applies to inconclusive, so a front end checks the windows its
// policy stages declare against them.
func (h *Host) CounterWindows() []time.Duration { return slices.Clone(h.windows) }
