package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/engine"
	"github.com/gatehost/gatehost/internal/ijson"
	"github.com/gatehost/gatehost/internal/runecut"
)

var runIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Errors of Check, for errors.Is.
var (
	// ErrClosed: the host has been closed.
	ErrClosed = errors.New("host closed")
	// ErrUnknownPipeline: no pipeline has the given name.
	ErrUnknownPipeline = errors.New("unknown pipeline")
	// ErrBadSubject: the subject is not a valid subject of the pipeline's
	// kind. The error is a *SubjectError.
	ErrBadSubject = errors.New("invalid subject")
	// ErrNotIJSON: the subject is not I-JSON (RFC 7493 §2.1): a string or
	// member name holds an escaped lone surrogate or bytes that are not
	// UTF-8. Wrapped, with ErrBadSubject, by the *SubjectError, whose
	// Pointer names the value (the object, for a member name).
	ErrNotIJSON = ijson.ErrNotIJSON
	// ErrEventLog: the decision could not be recorded. The Decision
	// returned with it is inconclusive whatever the stages said: an
	// unaudited acceptance is not an acceptance.
	ErrEventLog = errors.New("event log append failed")
)

// SubjectError is a subject refused at the edge.
type SubjectError struct {
	Kind abi.SubjectKind
	// Pointer is a JSON Pointer (RFC 6901) to the offending value, when
	// known; "" is the whole subject.
	Pointer string
	Reason  string
	Err     error
}

func (e *SubjectError) Error() string {
	s := fmt.Sprintf("invalid %s subject: %s", e.Kind, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SubjectError) Unwrap() []error { return []error{ErrBadSubject, e.Err} }

// RunOptions are per-run inputs. The zero value is valid.
type RunOptions struct {
	// Session is the agent session the subject belongs to.
	Session string
	// RequestID is the caller's id, recorded in the Decision and the log.
	RequestID string
	// Confirmation is a person's confirmation of the tool call being
	// checked; gates see it as Request.Context.Confirmation.
	Confirmation *abi.Confirmation

	pinned *pinnedSession // the session read at the start of the run

	// Worktree is the directory the check capability runs commands in,
	// such as a checkout of a merge subject's head. "" means none: a check
	// then answers unavailable.
	Worktree string

	// Now, when set, is the run's clock instead of Config.Now: for
	// replaying a check as of a past time. Gates see it as
	// Request.Context.Now.
	Now time.Time

	// RunID, when set, is the run's id instead of a fresh one: 32
	// lowercase hex digits. With Now it makes a run's requests
	// byte-identical to an earlier run's, for replaying a check exactly
	// (the conformance kit's determinism check). Ids in one event log
	// should stay unique.
	RunID string
}

// Check runs the named pipeline on subject, the native JSON of the
// pipeline's subject kind (for proposals see abi.Proposal; host/subject
// converts agents' formats), and returns the Decision.
//
// A stage that traps, times out, runs out of memory or answers outside the
// ABI is inconclusive with a reason code; that is a Decision, not an error.
// A subject flagged as undecodable (parse_error on the tool call or on any
// action) is rejected whatever the stages say, with a blocking finding of
// code CodeUndecodableArguments per flagged part.
// Check returns an error only for an unknown pipeline (ErrUnknownPipeline),
// a bad subject (ErrBadSubject, before any stage runs), or a failed event
// log append (ErrEventLog, with the inconclusive Decision).
func (h *Host) Check(ctx context.Context, pipelineName string, subject []byte, opts RunOptions) (*Decision, error) {
	if h.closed.Load() {
		return nil, ErrClosed
	}
	p, ok := h.pipelines[pipelineName]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPipeline, pipelineName)
	}
	decoded, err := validateSubject(p.cfg.Subject, subject, h.cfg.MaxSubjectBytes)
	if err != nil {
		return nil, err
	}
	undecodable := undecodableFindings(p.cfg.Subject, decoded)
	release, refused := h.admit(ctx)
	defer release()
	subject = compact(subject)
	snap := h.catalog.Snapshot() // pinned for the whole run
	opts.pinned = h.pinSession(ctx, p, opts.Session)
	now := h.cfg.Now().UTC()
	if !opts.Now.IsZero() {
		now = opts.Now.UTC()
	}
	runID := opts.RunID
	if runID == "" {
		runID = newRunID(now)
	} else if !runIDRE.MatchString(runID) {
		return nil, fmt.Errorf("host: RunOptions.RunID %q: want 32 lowercase hex digits", runID)
	}
	d := &Decision{
		RunID:             runID,
		Pipeline:          p.name,
		RequestID:         opts.RequestID,
		CatalogGeneration: snap.Generation(),
		Stages:            make([]StageResult, 0, len(p.stages)),
		Findings:          []Finding{},
	}
	stopped := false
	for _, s := range p.stages {
		if refused != nil {
			r := StageResult{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Mode: s.cfg.Mode, Findings: []abi.Finding{}}
			d.Stages = append(d.Stages, failStage(r, faultReason(refused), refused, nil))
			continue
		}
		if stopped {
			d.Stages = append(d.Stages, StageResult{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Mode: s.cfg.Mode, Skipped: true, Findings: []abi.Finding{}})
			continue
		}
		r := h.runStage(ctx, p, s, d.RunID, subject, snap, now, opts)
		d.Stages = append(d.Stages, r)
		for _, f := range r.Findings {
			d.Findings = append(d.Findings, Finding{Finding: f, Stage: r.Name, Advisory: r.Mode == Advisory})
		}
		if p.cfg.StopOnReject && r.Mode == Enforce && r.Verdict == abi.Rejected {
			stopped = true
		}
	}
	d.Verdict = Combine(d.Stages)
	if len(undecodable) > 0 {
		// The host's own rule, whatever the gates said (abi/SPEC.md §9.4).
		d.Verdict = abi.Rejected
		d.Findings = append(d.Findings, undecodable...)
	}
	if err := h.record(p, d, subject, opts); err != nil {
		d.Verdict = abi.Inconclusive
		h.logger.Error("host: decision not recorded; verdict forced to inconclusive", "run_id", d.RunID, "err", err)
		err = fmt.Errorf("%w: %w", ErrEventLog, err)
		h.decided(d, err)
		return d, err
	}
	h.decided(d, nil)
	return d, nil
}

// CheckProposal runs the named pipeline, which must check proposals, on p.
// It is Check with the proposal encoded; see Check for errors.
func (h *Host) CheckProposal(ctx context.Context, pipelineName string, p abi.Proposal, opts RunOptions) (*Decision, error) {
	if pl, ok := h.pipelines[pipelineName]; ok && pl.cfg.Subject != abi.SubjectProposal {
		return nil, &SubjectError{Kind: abi.SubjectProposal, Reason: fmt.Sprintf("pipeline %s checks %s subjects", pipelineName, pl.cfg.Subject)}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, &SubjectError{Kind: abi.SubjectProposal, Reason: "cannot encode", Err: err}
	}
	return h.Check(ctx, pipelineName, b, opts)
}

var (
	subjectSchemas = map[abi.SubjectKind]string{abi.SubjectProposal: abi.SchemaProposal, abi.SubjectToolCall: abi.SchemaToolCall, abi.SubjectMerge: abi.SchemaMerge}
	subjectStructs = map[abi.SubjectKind]abischema.Structs{abi.SubjectProposal: abischema.ProposalStructs, abi.SubjectToolCall: abischema.ToolCallStructs, abi.SubjectMerge: abischema.MergeStructs}
)

// validateSubject refuses a subject that is not a valid subject of kind and
// returns it decoded (numbers as json.Number).
func validateSubject(kind abi.SubjectKind, subject []byte, maxBytes int) (any, error) {
	if len(subject) > maxBytes {
		return nil, &SubjectError{Kind: kind, Reason: fmt.Sprintf("%d bytes exceeds the cap of %d", len(subject), maxBytes)}
	}
	v, err := abischema.Decode(subject)
	if err != nil {
		return nil, &SubjectError{Kind: kind, Reason: "not JSON", Err: err}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &SubjectError{Kind: kind, Reason: "not a JSON object"}
	}
	// Readers decode lone surrogates and bad bytes differently; the gates
	// and the executor must read one value (RFC 7493 §2.1).
	if err := ijson.Check(subject); err != nil {
		return nil, ijsonSubjectError(kind, err)
	}
	// Every reader of the subject (schema, gates, the executor) must see
	// the same members: no duplicate or case-variant names.
	if err := abischema.CheckNames(subject, subjectStructs[kind]); err != nil {
		return nil, &SubjectError{Kind: kind, Reason: "ambiguous member names", Err: err}
	}
	schema := subjectSchemas[kind]
	if schema != "" {
		if err := abischema.ValidateValue(schema, v); err != nil { // decoded once, above
			return nil, &SubjectError{Kind: kind, Reason: "does not match the " + string(kind) + " schema", Err: err}
		}
	}
	return v, nil
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func (h *Host) runStage(ctx context.Context, p *pipeline, s *stage, runID string, subject []byte, snap *catalog.Snapshot, now time.Time, opts RunOptions) (r StageResult) {
	start := time.Now()
	r = StageResult{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Mode: s.cfg.Mode, Findings: []abi.Finding{}}
	defer func() { r.DurationMicros = time.Since(start).Microseconds() }()
	req, err := json.Marshal(abi.Request{
		ABIVersion:   abi.MajorVersion,
		MinorVersion: abi.MinorVersion,
		RunID:        runID,
		Pipeline:     p.name,
		Stage:        s.cfg.Name,
		SubjectKind:  p.cfg.Subject,
		Subject:      subject,
		Config:       s.config,
		Context: abi.Context{
			CatalogGeneration: snap.Generation(),
			Session:           opts.Session,
			Now:               now.Format(time.RFC3339Nano),
			Capabilities:      s.cfg.Capabilities,
			Confirmation:      opts.Confirmation,
		},
	})
	if err != nil {
		return failStage(r, abi.ReasonHostError, err, nil)
	}
	state := &runContext{host: h, snap: snap, granted: s.cfg.Capabilities, pipeline: p.name, stage: s.cfg.Name, runID: runID, session: opts.Session, subject: p.cfg.Subject, pinned: opts.pinned, worktree: opts.Worktree}
	return h.callStage(ctx, s, r, req, state)
}

// callStage hands the encoded request req to an instance of s's plugin and
// turns what comes back into the stage's result, fail-closed.
func (h *Host) callStage(ctx context.Context, s *stage, r0 StageResult, req []byte, state *runContext) (r StageResult) {
	r = r0
	ok, probe, until := s.breaker.admit(h.cfg.Now())
	if !ok {
		return failStage(r, abi.ReasonPluginQuarantined,
			fmt.Errorf("plugin %s failed too often; not called until %s", s.cfg.Plugin, until.UTC().Format(time.RFC3339Nano)),
			map[string]any{"quarantined_until": until.UTC().Format(time.RFC3339Nano)})
	}
	defer func() { h.reportOutcome(s, probe, r) }()
	// The deadline covers waiting for an instance, the guest's code and the
	// host's check of its answer; evaluate returns at it whatever runs.
	sctx, cancel := context.WithTimeoutCause(ctx, s.cfg.Timeout, errStageDeadline)
	defer cancel()
	inst, shortage, err := s.plugin.pool.acquire(sctx)
	if err != nil {
		return failStage(r, faultReason(err), err, nil)
	}
	ans, ok := h.evaluate(sctx, s, inst, state, req)
	if !ok {
		reason, err := expired(sctx, s.cfg.Timeout, shortage)
		return failStage(r, reason, err, deniedEvidence(state, nil))
	}
	if ans.err != nil {
		if ans.inst != nil {
			s.plugin.pool.put(ans.inst, false)
		}
		if !ans.fault {
			r.Answer = ans.info
			return failStage(r, abi.ReasonABIViolation, ans.err, nil)
		}
		reason := faultReason(ans.err)
		if sctx.Err() != nil && (reason == abi.ReasonPluginTimeout || reason == abi.ReasonCanceled) {
			reason, _ = expired(sctx, s.cfg.Timeout, shortage)
		}
		ev := map[string]any{}
		if ans.stdout != "" {
			ev["stdout"] = ans.stdout
		}
		if ans.stderr != "" {
			ev["stderr"] = ans.stderr
		}
		return failStage(r, reason, ans.err, deniedEvidence(state, ev))
	}
	inst, resp := ans.inst, ans.resp
	r.Answer = ans.info
	r.Verdict, r.Reason, r.Basis, r.Evidence = resp.Verdict, resp.Reason, resp.Basis, resp.Evidence
	if resp.Findings != nil {
		r.Findings = resp.Findings
	}
	// capability_denied is the host's evidence; a gate cannot forge it.
	delete(r.Evidence, "capability_denied")
	if d := state.deniedOps(); len(d) > 0 {
		if r.Evidence == nil {
			r.Evidence = map[string]any{}
		}
		r.Evidence["capability_denied"] = d
		if r.Verdict == abi.Accepted {
			// The gate asked for something it was not given, then
			// accepted anyway: it cannot have checked what it meant to.
			r.Verdict, r.Reason, r.Basis = abi.Inconclusive, abi.ReasonCapabilityDenied, ""
		}
		if r.Verdict == abi.Inconclusive && r.Reason == "" {
			r.Reason = abi.ReasonCapabilityDenied
		}
	}
	if r.Verdict == abi.Inconclusive && r.Reason == "" {
		r.Reason = abi.ReasonUnspecified
	}
	// An inconclusive answer may come from a recovered panic, after which
	// the guest's state cannot be trusted: start afresh.
	s.plugin.pool.put(inst, r.Verdict != abi.Inconclusive)
	return r
}

// decodeResponse checks a gate's answer against the ABI's response schema,
// which also enforces that acceptance carries evidence and no blocking
// finding, and that a rejection carries a blocking finding.
func decodeResponse(out []byte) (abi.Response, error) {
	if err := abischema.Validate(abi.SchemaResponse, out); err != nil {
		return abi.Response{}, err
	}
	// The schema matches member names exactly and encoding/json does not:
	// without this check {"verdict":"rejected",…,"Verdict":"accepted"}
	// would pass as a rejection and decode as an acceptance.
	if err := abischema.CheckNames(out, abischema.ResponseStructs); err != nil {
		return abi.Response{}, err
	}
	// Numbers stay json.Number: evidence and finding details reach the
	// Decision and the event log digit for digit, not rounded to float64.
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var resp abi.Response
	if err := dec.Decode(&resp); err != nil {
		return abi.Response{}, err
	}
	if !resp.Verdict.Valid() { // the schema already says so; belt and braces
		return abi.Response{}, fmt.Errorf("unknown verdict %q", resp.Verdict)
	}
	return resp, nil
}

// deniedEvidence adds to ev (nil: a new map) the operations the guest was
// refused during the call, if any.
func deniedEvidence(state *runContext, ev map[string]any) map[string]any {
	if ev == nil {
		ev = map[string]any{}
	}
	if d := state.deniedOps(); len(d) > 0 {
		ev["capability_denied"] = d
	}
	return ev
}

func faultReason(err error) string {
	var f *engine.Fault
	if errors.As(err, &f) {
		return f.Reason
	}
	return abi.ReasonHostError
}

// waitReason is the reason of a run that gave up waiting for capacity (a
// run slot or a pool instance): the host's shortage, not the plugin's fault.
func waitReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.Canceled) {
		return abi.ReasonCanceled
	}
	return abi.ReasonHostOverloaded
}

// maxErrorEvidence caps error text recorded as evidence.
const maxErrorEvidence = 2048

func failStage(r StageResult, reason string, err error, ev map[string]any) StageResult {
	r.Verdict, r.Reason = abi.Inconclusive, reason
	r.err = &PluginError{Plugin: r.Plugin, Stage: r.Name, Code: reason, Cause: err}
	if ev == nil {
		ev = map[string]any{}
	}
	ev["error"] = runecut.Cut(err.Error(), maxErrorEvidence, "…")
	r.Evidence = ev
	return r
}

// record appends one record per stage and one for the decision, in one
// write and one fsync. subject is the compacted subject the stages saw.
func (h *Host) record(p *pipeline, d *Decision, subject []byte, opts RunOptions) error {
	if h.log == nil {
		return nil
	}
	recs := make([]eventlog.Record, 0, len(d.Stages)+1)
	for i, r := range d.Stages {
		s := p.stages[i]
		data, err := stageRecordData(r)
		if err != nil {
			return err
		}
		recs = append(recs, eventlog.Record{
			Kind: "stage", RunID: d.RunID, Pipeline: d.Pipeline, Stage: r.Name, Plugin: r.Plugin,
			ModuleSHA256: s.plugin.sha256, ConfigDigest: s.configDigest, ABIVersion: abi.MajorVersion,
			Verdict: string(r.Verdict), Reason: r.Reason, RequestID: d.RequestID, Data: data,
		})
	}
	// The decision record names what was decided on: the subject's digest
	// and the session, so an audit can match it to the agent's action.
	// Its findings repeat the stages', bounded whatever the number of
	// stages; findings_total then says how many there were.
	findings, cut := decisionFindings(d.Findings)
	total := 0
	if cut {
		total = len(d.Findings)
	}
	data, err := json.Marshal(struct {
		CatalogGeneration uint64    `json:"catalog_generation"`
		SubjectSHA256     string    `json:"subject_sha256"`
		Session           string    `json:"session,omitempty"`
		Findings          []Finding `json:"findings"`
		FindingsTotal     int       `json:"findings_total,omitempty"`
	}{d.CatalogGeneration, digest(subject), opts.Session, findings, total})
	if err != nil {
		return err
	}
	recs = append(recs, eventlog.Record{
		Kind: "decision", RunID: d.RunID, Pipeline: d.Pipeline, ABIVersion: abi.MajorVersion,
		Verdict: string(d.Verdict), RequestID: d.RequestID, Data: data,
	})
	_, err = h.log.Append(recs...)
	return err
}

// newRunID returns a 128-bit id, hex: 48 bits of milliseconds (so ids sort by
// time, as UUIDv7's do) and 80 random bits.
func newRunID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

func digest(b []byte) string {
	if b == nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
