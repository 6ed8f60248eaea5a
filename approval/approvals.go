package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
)

// Options configure Approvals. Zero fields take the defaults.
type Options struct {
	// Store holds the approvals; nil is NewMemory().
	Store Store
	// TTL is how long a minted approval is usable; 0 is DefaultTTL. At
	// most MaxTTL (the configured setting is checked with CheckTTL).
	TTL time.Duration
	// MaxOutstanding caps the approvals held unexpired; 0 is
	// DefaultMaxOutstanding.
	MaxOutstanding int
	// Now is the clock of minting and expiry; nil is time.Now.
	Now func() time.Time
	// Record appends a record to the event log; nil records nothing (an
	// embedder's host without a log).
	Record func(eventlog.Record) error
	// Agent names who presents a token, from the run's context (the
	// request's credential); nil names nobody.
	Agent func(context.Context) string
	// Logger receives a line per mint and presentation; nil discards.
	Logger *slog.Logger
}

// Approvals mints approvals into a Store and resolves presented ones: it
// is the host.Confirmer both front ends install (host.Config.Confirmer).
// It is safe for concurrent use.
type Approvals struct{ o Options }

// New returns Approvals with o's defaults filled in.
func New(o Options) (*Approvals, error) {
	switch {
	case o.TTL < 0 || o.TTL > MaxTTL:
		return nil, fmt.Errorf("approval: TTL %s: want at most %s", o.TTL, MaxTTL)
	case o.MaxOutstanding < 0:
		return nil, fmt.Errorf("approval: MaxOutstanding %d: negative", o.MaxOutstanding)
	}
	if o.Store == nil {
		o.Store = NewMemory()
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxOutstanding == 0 {
		o.MaxOutstanding = DefaultMaxOutstanding
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Approvals{o: o}, nil
}

// TTL returns how long a minted approval is usable.
func (s *Approvals) TTL() time.Duration { return s.o.TTL }

// MaxOutstanding returns the cap of approvals held.
func (s *Approvals) MaxOutstanding() int { return s.o.MaxOutstanding }

// Now returns the approvals' clock.
func (s *Approvals) Now() time.Time { return s.o.Now() }

// Record is the Data of every approval record (KindMinted, KindUsed,
// KindRefused): the approval as minted, when there is one (on a refusal
// of an unknown id only its id, and only when it has an id's form, so
// that a caller's free text is never copied into the log), and:
type Record struct {
	Approval
	// Presented is the call the approval was presented for (KindUsed,
	// KindRefused of a presentation): the run's binding.
	Presented *Binding `json:"presented,omitempty"`
	// Agent is who presented it (Options.Agent), when known.
	Agent string `json:"agent,omitempty"`
	// Answer is the person's answer to an elicitation (gatehost mcp):
	// approved, declined, cancelled, timeout or failed.
	Answer string `json:"answer,omitempty"`
	// Note is the approver's note with a decision on the approval page.
	Note string `json:"note,omitempty"`
}

// Origin is where a record comes from: the request or run it is part of.
type Origin struct {
	RunID     string
	RequestID string
}

// Mint makes the approval of the call b that a person gave at the MCP
// client (approvals.elicitation: form), approver ApproverMCPClient, usable
// for the TTL. No principal approves it, so no rule applies: an
// approver's approval is minted only by Desk.Decide, which applies the
// desk's Rule, whatever route the approver comes through. The approval is
// stored, then recorded (KindMinted, the answer): its id is returned only
// once both are done, so nobody can present an approval that is not in
// the log; if the record fails it is taken again (burned) and the error
// wraps ErrNotRecorded. Other errors: ErrFull, ErrStore, or an invalid
// binding.
func (s *Approvals) Mint(ctx context.Context, b Binding, answer string, from Origin) (Approval, error) {
	if err := checkCaller(b); err != nil {
		return Approval{}, err
	}
	now := s.o.Now()
	// To the microsecond, as every store keeps it.
	a := Approval{ID: NewID(), Binding: b, ExpiresAt: now.Add(s.o.TTL).UTC().Truncate(time.Microsecond), Approver: ApproverMCPClient}
	if err := s.o.Store.Add(ctx, a, now, s.o.MaxOutstanding); err != nil {
		return Approval{}, err
	}
	if err := s.record(KindMinted, "", from, now, Record{Approval: a, Answer: answer}); err != nil {
		if _, _, terr := s.o.Store.Take(context.WithoutCancel(ctx), a.ID, now); terr != nil {
			s.o.Logger.Error("approval: not recorded, and not burned: unusable only once expired", "approval_id", a.ID, "err", terr)
		}
		return Approval{}, err
	}
	s.logMinted(a)
	return a, nil
}

func (s *Approvals) logMinted(a Approval) {
	s.o.Logger.Info("approval minted", "approval_id", a.ID, "pipeline", a.Pipeline, "session", a.Session,
		"caller", a.CallerKey, "tool", a.Tool, "approver", a.Approver, "expires_at", a.ExpiresAt)
}

// checkCaller refuses a binding that names no caller: it would match no
// call (Binding.Mismatch).
func checkCaller(b Binding) error {
	if b.CallerKey == "" {
		return errors.New("approval: the binding names no caller")
	}
	return nil
}

// Refuse records that a person's approval of b was asked and not given
// (KindRefused with code, one of CodeDeclined … CodeNotShown, and the
// answer): no approval exists.
func (s *Approvals) Refuse(b Binding, code, answer string, from Origin) error {
	return s.record(KindRefused, code, from, s.o.Now(), Record{Approval: Approval{Binding: b}, Answer: answer})
}

// Confirm implements host.Confirmer: it takes the approval req.Token for
// the run req describes and applies the rule (package doc). Only an
// approval unexpired, unused and minted for this very pipeline, session,
// subject, tool and schema digest confirms; anything else is refused
// (nil: the gates deny what needs a confirmation). The use or the refusal
// is recorded under req.RunID before it returns; an error (ErrStore,
// ErrNotRecorded) means the run must not happen.
func (s *Approvals) Confirm(ctx context.Context, req host.ConfirmationRequest) (*abi.Confirmation, error) {
	now := s.o.Now()
	presented := Binding{Pipeline: req.Pipeline, Session: req.Session, CallerKey: CallerOf(req.Principal),
		SubjectSHA256: req.SubjectSHA256, Tool: req.ToolName}
	if req.Tool != nil {
		presented.Tool, presented.SchemaDigest = req.Tool.ID, req.Tool.SchemaDigest
	}
	rec := Record{Presented: &presented}
	if s.o.Agent != nil {
		rec.Agent = s.o.Agent(ctx)
	}
	code := CodeUnknown
	if ValidID(req.Token) {
		rec.ID = req.Token
		st, found, err := s.o.Store.Take(ctx, req.Token, now)
		if err != nil {
			return nil, fmt.Errorf("approval %s: %w", req.Token, err)
		}
		if found {
			rec.Approval = st.Approval
			code = verdict(st, presented, req.Tool != nil, now)
			if st.Request != "" && !st.Used {
				s.useRequest(ctx, st.Approval, now)
			}
		}
	}
	from := Origin{RunID: req.RunID, RequestID: req.RequestID}
	if code != "" {
		if err := s.record(KindRefused, code, from, now, rec); err != nil {
			return nil, err
		}
		s.o.Logger.Warn("approval refused; the call runs without a confirmation", "pipeline", req.Pipeline,
			"run_id", req.RunID, "request_id", req.RequestID, "reason", code, "approval_id", rec.ID)
		return nil, nil
	}
	if err := s.record(KindUsed, "", from, now, rec); err != nil {
		return nil, err
	}
	s.o.Logger.Info("approval used", "approval_id", rec.ID, "pipeline", req.Pipeline, "run_id", req.RunID,
		"session", req.Session, "tool", rec.Tool)
	return &abi.Confirmation{Tool: rec.Tool, Token: rec.ID}, nil
}

// useRequest marks the request an approval was minted for used once the
// approval is taken, whatever the presentation's outcome, when it was
// presented directly (X-Gatehost-Confirmation) rather than claimed
// through Desk.Use: the caller's next identical call then asks anew
// instead of meeting a request whose approval is spent. A failure costs
// only that: the approval is spent either way.
func (s *Approvals) useRequest(ctx context.Context, a Approval, now time.Time) {
	_, err := s.o.Store.UpdateRequest(context.WithoutCancel(ctx), a.Request, now, func(r Request) (Request, error) {
		if r.ApprovalID != a.ID {
			return r, fmt.Errorf("%w: another approval", ErrDecided)
		}
		return r.Use(now)
	})
	if err != nil && !errors.Is(err, ErrDecided) && !errors.Is(err, ErrNoRequest) && !errors.Is(err, ErrRequestExpired) {
		s.o.Logger.Warn("approval: used, and its request not marked used", "approval_id", a.ID, "request_id", a.Request, "err", err)
	}
}

// verdict is the rule applied to an approval just taken: "" when it
// confirms presented, else the refusal code. It was taken whatever the
// outcome.
func verdict(st Stored, presented Binding, inCatalog bool, now time.Time) string {
	switch {
	case !st.Usable(now):
		return CodeExpired
	case st.Used:
		return CodeUsed
	case !inCatalog:
		return CodeToolNotInCatalog
	}
	return st.Mismatch(presented)
}

// record appends one approval record, under the pipeline of the run it
// was presented to, else the approval's; a failure wraps ErrNotRecorded.
func (s *Approvals) record(kind, code string, from Origin, now time.Time, r Record) error {
	if s.o.Record == nil {
		return nil
	}
	pipeline := r.Pipeline
	if r.Presented != nil {
		pipeline = r.Presented.Pipeline
	}
	data, err := json.Marshal(r)
	if err == nil {
		err = s.o.Record(eventlog.Record{Kind: kind, RunID: from.RunID, RequestID: from.RequestID,
			Pipeline: pipeline, Reason: code, Time: now, Data: data})
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotRecorded, kind, err)
	}
	return nil
}
