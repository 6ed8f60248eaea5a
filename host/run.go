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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/host/subject"
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
	// ErrSubjectKind: the input is a valid subject of another kind than
	// the pipeline's, such as a tool call sent to a proposal pipeline.
	// Wrapped, with ErrBadSubject, by the *SubjectError, whose Looks names
	// that kind.
	ErrSubjectKind = errors.New("subject of another kind")
	// ErrBadOptions: a RunOptions field is invalid, or does not apply to
	// the pipeline (an agent format for a merge pipeline, a confirmation
	// for a pipeline that does not check tool calls). The error is an
	// *OptionError naming the field.
	ErrBadOptions = errors.New("invalid run options")
	// ErrConfirmation: Config.Confirmer failed to resolve the confirmation
	// token; the run did not happen. The error wraps the Confirmer's.
	ErrConfirmation = errors.New("confirmation not resolved")
	// ErrEventLog: the decision could not be recorded. The Decision
	// returned with it is inconclusive whatever the stages said: an
	// unaudited acceptance is not an acceptance.
	ErrEventLog = errors.New("event log append failed")
)

// SubjectError is a subject refused at the edge.
type SubjectError struct {
	// Kind is the kind of subject the pipeline checks.
	Kind abi.SubjectKind
	// Pointer is a JSON Pointer (RFC 6901) to the offending value, when
	// known; "" is the whole subject.
	Pointer string
	Reason  string
	// Looks, when set, is the kind of subject the input is a valid subject
	// of instead: a tool call sent to a proposal pipeline, or the reverse.
	// The error then also wraps ErrSubjectKind.
	Looks abi.SubjectKind
	Err   error
}

func (e *SubjectError) Error() string {
	s := fmt.Sprintf("invalid %s subject: %s", e.Kind, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SubjectError) Unwrap() []error {
	errs := []error{ErrBadSubject, e.Err}
	if e.Looks != "" {
		errs = append(errs, ErrSubjectKind)
	}
	return errs
}

// RunOptions are per-run inputs. The zero value is valid.
type RunOptions struct {
	// Format is the format of the input given to Check: subject.FormatAuto
	// ("", detect it), FormatNative, or for proposal and tool_call
	// pipelines an agent's format (FormatMCP, FormatOpenAI,
	// FormatAnthropic). Another format for a merge pipeline, or an unknown
	// one, is refused with ErrBadOptions.
	Format subject.Format
	// Session is the agent session the subject belongs to.
	Session string
	// CounterSession is the key the session's call counters are kept
	// under ("" means Session). A front end whose sessions are shorter
	// than its callers' sets one that outlives them, so that a limit on a
	// session's calls is not reset by every session: MCP 2026-07-28 over
	// HTTP is one gatehost session per request, and the gateway counts
	// such a caller's calls per principal.
	CounterSession string
	// RequestID is the caller's id, recorded in the Decision and the log.
	RequestID string
	// ConfirmationToken is a person's confirmation of the tool call being
	// checked, as presented by the caller; blank (only white space) is
	// none. The host resolves it against the run's pinned catalog
	// snapshot through Config.Confirmer (see Confirmer for the default),
	// and gates see the result as Request.Context.Confirmation. Only
	// tool_call pipelines take one; another pipeline refuses it with
	// ErrBadOptions.
	ConfirmationToken string

	// Worktree is the directory the check capability runs commands in,
	// such as a checkout of a merge subject's head. "" means none: a check
	// then answers unavailable.
	Worktree string

	// Now, when set, is the run's clock instead of Config.Now: for
	// replaying a check as of a past time. Gates see it as
	// Request.Context.Now.
	Now time.Time

	// Principal is who asked for the check, as the caller's front end
	// authenticated it (package identity); nil is anonymous. Gates see it
	// as Request.Context.Principal and the decision record carries it as
	// "principal". Its Subject must be non-empty, its Method one of
	// abi.MethodOIDC, MethodMTLS, MethodToken, and its JSON at most
	// abi.MaxPrincipalBytes; otherwise Check refuses it with ErrBadOptions.
	Principal *abi.Principal

	// RunID, when set, is the run's id instead of a fresh one: 32
	// lowercase hex digits. With Now it makes a run's requests
	// byte-identical to an earlier run's, for replaying a check exactly
	// (the conformance kit's determinism check). Ids in one event log
	// should stay unique.
	RunID string

	// Refusals are blocking findings of the caller's front end, made
	// before the run: for example the MCP gateway's tool_drifted when the
	// definition the upstream lists differs from its trust baseline. The
	// run still calls every stage, and the decision is recorded as usual,
	// but it is rejected whatever the gates say, with these findings
	// (Stage HostStage) after the gates'. Each must have a Code and a
	// Message; at most MaxRefusals are taken (ErrBadOptions otherwise).
	Refusals []abi.Finding
}

// MaxRefusals caps RunOptions.Refusals.
const MaxRefusals = 16

// run is the state of one Check, fixed at its start: what every stage of
// the run sees.
type run struct {
	p       *pipeline
	id      string
	now     time.Time
	subject []byte            // the compacted native subject
	snap    *catalog.Snapshot // pinned for the whole run
	session *pinnedSession    // the session read at the start of the run
	counts  *pinnedCounts     // the counts read at the start of the run
	// confirmation is the resolved ConfirmationToken; nil is none.
	confirmation *abi.Confirmation
	opts         RunOptions
}

// Check runs the named pipeline on input, a subject of the pipeline's kind
// in opts.Format (detected when ""): the native JSON of the kind (for
// proposals see abi.Proposal) or, for proposal and tool_call pipelines, an
// agent's format as host/subject describes it. It returns the Decision.
//
// The input is read once: its size is capped by Config.MaxSubjectBytes,
// whatever the format; an agent's format is converted to the native
// subject, which is then validated once against the ABI's schema of the
// kind. A native subject reaches the gates as given, compacted.
//
// A stage that traps, times out, runs out of memory or answers outside the
// ABI is inconclusive with a reason code; that is a Decision, not an error.
// A subject flagged as undecodable (parse_error on the tool call or on any
// action) is rejected whatever the stages say, with a blocking finding of
// code CodeUndecodableArguments per flagged part.
// Check returns an error and no Decision, before any stage runs, for an
// unknown pipeline (ErrUnknownPipeline), invalid options (ErrBadOptions),
// a bad subject (ErrBadSubject, a *SubjectError; ErrSubjectKind when the
// input is a subject of another kind) or a confirmation token the
// Confirmer could not resolve (ErrConfirmation); and with the inconclusive
// Decision for a failed event log append (ErrEventLog).
//
// With Config.TracerProvider set, the run is a span (SpanDecision) in the
// trace of ctx's span, with a child span per stage.
func (h *Host) Check(ctx context.Context, pipelineName string, input []byte, opts RunOptions) (*Decision, error) {
	if h.tracer != nil {
		return h.tracedCheck(ctx, pipelineName, input, opts)
	}
	return h.check(ctx, pipelineName, input, opts)
}

// check is Check, untraced.
func (h *Host) check(ctx context.Context, pipelineName string, input []byte, opts RunOptions) (*Decision, error) {
	if h.closed.Load() {
		return nil, ErrClosed
	}
	p, ok := h.pipelines[pipelineName]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPipeline, pipelineName)
	}
	if err := checkOptions(p, opts); err != nil {
		return nil, err
	}
	native, decoded, err := h.decodeSubject(p, input, opts.Format)
	if err != nil {
		return nil, err
	}
	undecodable := undecodableFindings(p.cfg.Subject, decoded)
	release, refused := h.admit(ctx)
	defer release()
	rn := &run{p: p, subject: compact(native), snap: h.catalog.Snapshot(), opts: opts}
	rn.now = h.cfg.Now().UTC()
	if !opts.Now.IsZero() {
		rn.now = opts.Now.UTC()
	}
	rn.id = opts.RunID
	if rn.id == "" {
		rn.id = newRunID(rn.now)
	}
	rn.session = h.pinSession(ctx, p, opts.Session, rn.id)
	rn.counts = h.pinCounters(ctx, rn)
	// A run refused admission calls no stage: its token is not spent.
	if refused == nil {
		if err := h.confirm(ctx, rn, decoded); err != nil {
			return nil, err
		}
	}
	d := &Decision{
		RunID:             rn.id,
		Pipeline:          p.name,
		RequestID:         opts.RequestID,
		CatalogGeneration: rn.snap.Generation(),
		CatalogDigest:     rn.snap.Digest(),
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
		r := h.tracedStage(ctx, rn, s)
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
	if len(opts.Refusals) > 0 {
		// The front end's refusal, whatever the gates said: a run whose
		// gates could not know why it must not happen is still recorded.
		d.Verdict = abi.Rejected
		for _, f := range opts.Refusals {
			f.Severity = abi.Blocking
			d.Findings = append(d.Findings, Finding{Finding: f, Stage: HostStage})
		}
	}
	h.count(ctx, rn, d)
	if err := h.record(rn, d); err != nil {
		d.Verdict = abi.Inconclusive
		h.logger.Error("host: decision not recorded; verdict forced to inconclusive", "run_id", d.RunID, "err", err)
		err = fmt.Errorf("%w: %w", ErrEventLog, err)
		h.decided(d, err)
		return d, err
	}
	h.decided(d, nil)
	return d, nil
}

// OptionError is a RunOptions field that is invalid or does not apply to
// the pipeline. It wraps ErrBadOptions.
type OptionError struct {
	// Field is the RunOptions field: "Format", "ConfirmationToken",
	// "Principal", "Refusals" or "RunID".
	Field  string
	Reason string
}

func (e *OptionError) Error() string { return "RunOptions." + e.Field + ": " + e.Reason }

func (e *OptionError) Unwrap() error { return ErrBadOptions }

// checkOptions refuses options that do not apply to p.
func checkOptions(p *pipeline, opts RunOptions) error {
	switch opts.Format {
	case subject.FormatAuto, subject.FormatNative:
	case subject.FormatMCP, subject.FormatOpenAI, subject.FormatAnthropic:
		if !hasAgentFormats(p.cfg.Subject) {
			return &OptionError{Field: "Format", Reason: fmt.Sprintf("%s: pipeline %s checks %s; formats other than native apply to proposals and tool calls only",
				opts.Format, p.name, kindNoun(p.cfg.Subject, true))}
		}
	default:
		return &OptionError{Field: "Format", Reason: fmt.Sprintf("%q is not native, mcp, openai or anthropic", clip(string(opts.Format), 32))}
	}
	if strings.TrimSpace(opts.ConfirmationToken) != "" && p.cfg.Subject != abi.SubjectToolCall {
		return &OptionError{Field: "ConfirmationToken", Reason: fmt.Sprintf("pipeline %s checks %s; confirmations apply to tool calls only", p.name, kindNoun(p.cfg.Subject, true))}
	}
	if err := checkPrincipal(opts.Principal); err != nil {
		return err
	}
	if len(opts.Refusals) > MaxRefusals {
		return &OptionError{Field: "Refusals", Reason: fmt.Sprintf("%d findings; at most %d", len(opts.Refusals), MaxRefusals)}
	}
	for i, f := range opts.Refusals {
		if f.Code == "" || f.Message == "" {
			return &OptionError{Field: "Refusals", Reason: fmt.Sprintf("[%d]: a refusal needs a code and a message", i)}
		}
	}
	if opts.RunID != "" && !runIDRE.MatchString(opts.RunID) {
		return &OptionError{Field: "RunID", Reason: fmt.Sprintf("%q: want 32 lowercase hex digits", clip(opts.RunID, 64))}
	}
	return nil
}

// checkPrincipal refuses a principal gates could not rely on: no subject,
// an unknown method, or an encoding over abi.MaxPrincipalBytes.
func checkPrincipal(p *abi.Principal) error {
	if p == nil {
		return nil
	}
	switch {
	case p.Subject == "":
		return &OptionError{Field: "Principal", Reason: "no subject"}
	case p.Method != abi.MethodOIDC && p.Method != abi.MethodMTLS && p.Method != abi.MethodToken:
		return &OptionError{Field: "Principal", Reason: fmt.Sprintf("method %q is not oidc, mtls or token", clip(p.Method, 32))}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return &OptionError{Field: "Principal", Reason: "does not encode as JSON: " + err.Error()}
	}
	if len(b) > abi.MaxPrincipalBytes {
		return &OptionError{Field: "Principal", Reason: fmt.Sprintf("%d bytes of JSON; at most %d", len(b), abi.MaxPrincipalBytes)}
	}
	return nil
}

// CheckProposal runs the named pipeline, which must check proposals, on p.
// It is Check with the proposal encoded as native JSON; see Check for
// errors.
func (h *Host) CheckProposal(ctx context.Context, pipelineName string, p abi.Proposal, opts RunOptions) (*Decision, error) {
	if pl, ok := h.pipelines[pipelineName]; ok && pl.cfg.Subject != abi.SubjectProposal {
		return nil, kindMismatch(pl, abi.SubjectProposal)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, &SubjectError{Kind: abi.SubjectProposal, Reason: "cannot encode", Err: err}
	}
	opts.Format = subject.FormatNative
	return h.Check(ctx, pipelineName, b, opts)
}

// NativeSubject returns the native subject a Check of input on the named
// pipeline would run on and record (compacted JSON), or the error Check
// would refuse the input or its format f with, without running anything.
// Its SHA-256 is ConfirmationRequest.SubjectSHA256: a service that mints
// approvals binds them to it.
func (h *Host) NativeSubject(pipelineName string, input []byte, f subject.Format) ([]byte, error) {
	p, ok := h.pipelines[pipelineName]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPipeline, pipelineName)
	}
	if err := checkOptions(p, RunOptions{Format: f}); err != nil {
		return nil, err
	}
	native, _, err := h.decodeSubject(p, input, f)
	if err != nil {
		return nil, err
	}
	return compact(native), nil
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)) // compacting never grows: one allocation
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func (h *Host) runStage(ctx context.Context, rn *run, s *stage) (r StageResult) {
	p := rn.p
	start := time.Now()
	r = StageResult{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Mode: s.cfg.Mode, Findings: []abi.Finding{}}
	defer func() { r.DurationMicros = time.Since(start).Microseconds() }()
	req := stageRequest{r: abi.Request{
		ABIVersion:   abi.MajorVersion,
		MinorVersion: abi.MinorVersion,
		RunID:        rn.id,
		Pipeline:     p.name,
		Stage:        s.cfg.Name,
		SubjectKind:  p.cfg.Subject,
		Subject:      rn.subject,
		Context: abi.Context{
			CatalogGeneration: rn.snap.Generation(),
			Session:           rn.opts.Session,
			Now:               rn.now.Format(time.RFC3339Nano),
			Capabilities:      s.cfg.Capabilities,
			Confirmation:      rn.confirmation,
			Principal:         rn.opts.Principal,
		},
	}}
	// The digest goes only where session.get may be asked, so that a gate
	// keeps answers only of a session it was granted.
	if rn.session != nil && slices.Contains(s.cfg.Capabilities, abi.CapabilitySession) {
		req.r.Context.SessionDigest = rn.session.digest
	}
	// The domains' digest likewise goes only where query.capability may be
	// asked: the domains are fixed for the host's life, so it is computed
	// once, at New.
	if slices.Contains(s.cfg.Capabilities, abi.CapabilityQuery) {
		req.r.Context.QueryDigest = h.queryDigest
	}
	state := &runContext{host: h, snap: rn.snap, granted: s.cfg.Capabilities, pipeline: p.name, stage: s.cfg.Name, runID: rn.id,
		session: rn.opts.Session, subject: p.cfg.Subject, pinned: rn.session, counts: rn.counts, worktree: rn.opts.Worktree}
	return h.callStage(ctx, s, r, req, state)
}

// stageRequest is what a stage's call is sent: the bytes of raw when
// fixed (EvaluateRequest), else r encoded with the stage's config for the
// instance the call runs on (encode).
type stageRequest struct {
	fixed bool
	raw   []byte
	r     abi.Request
}

// encode encodes the request for inst (nil: an instance the call
// creates). It sets config_digest with the stage's config, and leaves the
// config out when the gate declares config_cache and inst holds it
// (abi/SPEC.md §5.3); full reports that the config went in full, to be
// recorded when the gate answers.
func (q stageRequest) encode(s *stage, inst *engine.Instance) (req []byte, full bool, err error) {
	if q.fixed {
		return q.raw, false, nil
	}
	q.r.ConfigDigest = s.wireDigest
	config := s.configWire
	if config != nil && s.plugin.descriptor.ConfigCache && inst != nil && inst.HoldsConfig(s.wireDigest) {
		config = nil
	}
	req, err = encodeRequest(q.r, config)
	return req, config != nil, err
}

// callStage hands the request to an instance of s's plugin and turns what
// comes back into the stage's result, fail-closed.
func (h *Host) callStage(ctx context.Context, s *stage, r0 StageResult, q stageRequest, state *runContext) (r StageResult) {
	r = r0
	ok, probe, until := s.quarantine.admit(h.cfg.Now())
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
	req, full, err := q.encode(s, inst)
	if err != nil {
		if inst != nil {
			s.plugin.pool.put(inst, true)
		} else {
			s.plugin.pool.release()
		}
		return failStage(r, abi.ReasonHostError, err, nil)
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
			reason := abi.ReasonABIViolation
			if errors.Is(ans.err, ErrHostError) {
				reason = abi.ReasonHostError
			}
			return failStage(r, reason, ans.err, nil)
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
	switch {
	case resp.Verdict == abi.Inconclusive && resp.Reason == abi.ReasonConfigNotHeld:
		inst.ForgetConfigs()
	case full && s.plugin.descriptor.ConfigCache:
		inst.SentConfig(s.wireDigest)
	}
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
// finding, and that a rejection carries a blocking finding. The answer is
// decoded once: the value the schema checked becomes the response.
func decodeResponse(out []byte) (abi.Response, error) { return decodeAnswer(out, nil) }

// decodeAnswer is decodeResponse, with the schema and the member names
// checked only for bytes memo does not hold; an answer that passes is
// added to memo. memo may be nil.
func decodeAnswer(out []byte, memo *answerMemo) (abi.Response, error) {
	v, err := abischema.Decode(out)
	if err != nil {
		return abi.Response{}, err
	}
	checked := memo.holds(out)
	if !checked {
		if err := abischema.ValidateValue(abi.SchemaResponse, v); err != nil {
			return abi.Response{}, err
		}
		// The schema matches member names exactly, and the names of a
		// decoded value are the document's last of each: without this
		// check {"verdict":"rejected",…,"Verdict":"accepted"}, or a member
		// given twice, could read one way to the schema and another to a
		// reader of the record.
		if err := abischema.CheckNames(out, abischema.ResponseStructs); err != nil {
			return abi.Response{}, err
		}
	}
	resp, err := responseOf(v)
	if err != nil {
		return abi.Response{}, err
	}
	if !resp.Verdict.Valid() { // the schema already says so; belt and braces
		return abi.Response{}, fmt.Errorf("unknown verdict %q", resp.Verdict)
	}
	if !checked {
		memo.add(out)
	}
	return resp, nil
}

// responseOf builds the response from v, an answer abischema.Decode
// decoded and the response schema accepted: what encoding/json would decode
// from the same bytes into an abi.Response with UseNumber (numbers in
// evidence and details stay json.Number, digit for digit). A value of
// another shape, which the schema should have refused, is an error, never
// a panic.
func responseOf(v any) (abi.Response, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return abi.Response{}, errors.New("answer is not an object")
	}
	var r abi.Response
	var err error
	str := func(m map[string]any, key string) string {
		if err != nil {
			return ""
		}
		x, present := m[key]
		if !present {
			return ""
		}
		s, ok := x.(string)
		if !ok {
			err = fmt.Errorf("answer: %s is not a string", key)
		}
		return s
	}
	obj := func(m map[string]any, key string) map[string]any {
		if err != nil {
			return nil
		}
		x, present := m[key]
		if !present {
			return nil
		}
		o, ok := x.(map[string]any)
		if !ok {
			err = fmt.Errorf("answer: %s is not an object", key)
		}
		return o
	}
	r.Verdict = abi.Verdict(str(m, "verdict"))
	r.Basis = str(m, "basis")
	r.Reason = str(m, "reason")
	r.Evidence = obj(m, "evidence")
	if x, present := m["findings"]; present && err == nil {
		list, ok := x.([]any)
		if !ok {
			return abi.Response{}, errors.New("answer: findings is not an array")
		}
		r.Findings = make([]abi.Finding, len(list))
		for i, e := range list {
			fm, ok := e.(map[string]any)
			if !ok {
				return abi.Response{}, fmt.Errorf("answer: findings[%d] is not an object", i)
			}
			f := &r.Findings[i]
			f.Code = str(fm, "code")
			f.Severity = abi.Severity(str(fm, "severity"))
			f.Tier = abi.Tier(str(fm, "tier"))
			f.Message = str(fm, "message")
			f.ActionID = str(fm, "action_id")
			f.Path = str(fm, "path")
			f.Keyword = str(fm, "keyword")
			f.Suggestion = str(fm, "suggestion")
			f.Details = obj(fm, "details")
			if x, present := fm["action_index"]; present && err == nil {
				// As encoding/json decodes into an int: decimal digits
				// only, within int's range (the schema's "integer" also
				// admits 1e2 and 1.0, which it refuses).
				n, ok := x.(json.Number)
				if !ok {
					return abi.Response{}, fmt.Errorf("answer: findings[%d].action_index is not a number", i)
				}
				idx, perr := strconv.Atoi(string(n))
				if perr != nil {
					return abi.Response{}, fmt.Errorf("answer: findings[%d].action_index: %s is not an int", i, n)
				}
				f.ActionIndex = &idx
			}
		}
	}
	if err != nil {
		return abi.Response{}, err
	}
	return r, nil
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
// write and one fsync.
func (h *Host) record(rn *run, d *Decision) error {
	p := rn.p
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
		CatalogDigest     string    `json:"catalog_digest"`
		SubjectSHA256     string    `json:"subject_sha256"`
		Session           string    `json:"session,omitempty"`
		Findings          []Finding `json:"findings"`
		FindingsTotal     int       `json:"findings_total,omitempty"`
		// Principal is who asked: an audit names the caller, not only
		// the session.
		Principal *abi.Principal `json:"principal,omitempty"`
	}{d.CatalogGeneration, d.CatalogDigest, digest(rn.subject), rn.opts.Session, findings, total, rn.opts.Principal})
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
