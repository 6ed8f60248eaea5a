package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// DeskOptions configure a Desk.
type DeskOptions struct {
	// Approvals mints the approval of an approved request and records
	// refusals; its Store holds the requests too. Required.
	Approvals *Approvals
	// Rule is who may decide. With no approvers nobody can, and every
	// request expires undecided.
	Rule Rule
	// PageURL is the approval page's absolute base URL, as a person's
	// browser reaches it (approvals.page.url): a request's page is
	// PageURL/requests/ID. Empty: requests have no URL.
	PageURL string
	// MaxPending caps the requests held unexpired; 0 is
	// DefaultMaxPending. Each caller may hold CallerShare(MaxPending) of
	// them.
	MaxPending int
	// Notify is told of each new request, in its own goroutine, after the
	// request is stored; it decides nothing. Nil notifies nobody.
	Notify func(context.Context, Request)
	// Poll is how often Wait and Watch read a store another process
	// shares; 0 is DefaultPoll.
	Poll time.Duration
	// Logger receives a line per request and decision; nil discards.
	Logger *slog.Logger
}

// DefaultPoll is how often a waiter reads the store for a decision made
// by another process or replica. A decision in this process wakes its
// waiters at once.
const DefaultPoll = 500 * time.Millisecond

// Desk is where calls wait for a person: front ends open requests, the
// approval page lists and decides them, and the front end that waits (or
// the agent's retry of the identical call) finds the approval an approver
// minted. It is safe for concurrent use, and every process sharing the
// Approvals' store sees the same requests.
type Desk struct {
	o       DeskOptions
	a       *Approvals
	st      Store
	rule    atomic.Pointer[Rule]
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each change
	page    atomic.Pointer[string]
}

// NewDesk returns a Desk.
func NewDesk(o DeskOptions) (*Desk, error) {
	if o.Approvals == nil {
		return nil, errors.New("approval: desk: no approvals")
	}
	if err := o.Rule.Check(); err != nil {
		return nil, fmt.Errorf("approval: desk: %w", err)
	}
	page, err := checkPageURL(o.PageURL)
	if err != nil {
		return nil, err
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Desk{o: o, a: o.Approvals, st: o.Approvals.o.Store, changed: make(chan struct{})}
	d.page.Store(&page)
	d.rule.Store(&o.Rule)
	return d, nil
}

func checkPageURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("approval: desk: page URL %q: want an absolute http(s) URL without user, query or fragment", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// SetPageURL sets the page's base URL (DeskOptions.PageURL), as a front
// end learns it once the page's listener is bound.
func (d *Desk) SetPageURL(s string) error {
	page, err := checkPageURL(s)
	if err != nil {
		return err
	}
	d.page.Store(&page)
	return nil
}

// Rule returns who may decide now.
func (d *Desk) Rule() Rule { return *d.rule.Load() }

// SetRule replaces who may decide, as a front end's reload reads the
// approvers and their credentials again: every decision and every page
// request after it applies r.
func (d *Desk) SetRule(r Rule) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("approval: desk: %w", err)
	}
	d.rule.Store(&r)
	return nil
}

// TTL is how long a request waits, and its approval lasts.
func (d *Desk) TTL() time.Duration { return d.a.TTL() }

// URL returns the page of request id, or "" without a page URL.
func (d *Desk) URL(id string) string {
	page := d.PageURL()
	if page == "" {
		return ""
	}
	return page + "/requests/" + id
}

// PageURL returns the page's base URL, or "".
func (d *Desk) PageURL() string { return *d.page.Load() }

// Open opens a request for the call r describes (its ID, State and times
// are set here), or returns the one already open for the same binding
// (created false): the same call by the same caller. The binding's caller
// is set here from r.Caller, so that a request is always bound to the
// principal it shows. r.Arguments are the call's, whole.
func (d *Desk) Open(ctx context.Context, r Request) (Request, bool, error) {
	r.CallerKey = CallerOf(r.Caller)
	now := d.a.Now()
	r.ID, r.State = NewRequestID(), StatePending
	r.CreatedAt = now.UTC().Truncate(time.Microsecond)
	r.ExpiresAt = now.Add(d.a.TTL()).UTC().Truncate(time.Microsecond)
	r.DecidedBy, r.DecidedAt, r.Note, r.ApprovalID = nil, time.Time{}, "", ""
	got, created, err := d.st.OpenRequest(ctx, r, now, d.o.MaxPending)
	if err != nil {
		return Request{}, false, err
	}
	if created {
		d.o.Logger.Info("approval requested", "request_id", got.ID, "pipeline", got.Pipeline, "tool", got.Tool,
			"upstream", got.Upstream, "caller", PrincipalName(got.Caller), "expires_at", got.ExpiresAt)
		d.broadcast()
		if d.o.Notify != nil {
			go d.o.Notify(context.WithoutCancel(ctx), got)
		}
	}
	return got, created, nil
}

// Get returns request id (ErrNoRequest).
func (d *Desk) Get(ctx context.Context, id string) (Request, error) {
	if !ValidRequestID(id) {
		return Request{}, fmt.Errorf("%w: malformed id", ErrNoRequest)
	}
	return d.st.Request(ctx, id, d.a.Now())
}

// List returns the requests unexpired now, newest first.
func (d *Desk) List(ctx context.Context) ([]Request, error) {
	return d.st.Requests(ctx, d.a.Now())
}

// Decide is an approver's answer to request id: the one way an
// approver's decision is made, whatever route it comes through (the
// approval page, gatehost serve's POST /v1/approvals). The rule
// (Rule.MayDecide) is applied first. Then the decision is taken, once
// across every process sharing the store (Request.Apply under the store's
// lock: of concurrent decisions one wins, the others get ErrDecided and
// neither record nor mint anything); then it is recorded (approval_minted
// naming the approver, or approval_refused with CodeDenied); and only then
// is an approval stored, so none is usable before the log shows it. A
// decision that cannot be recorded, or whose approval cannot be stored,
// is undone (the request is pending again) and the error returned
// (ErrNotRecorded, ErrFull, the store's): nothing is decided unrecorded.
// Errors also: ErrNoRequest, ErrDecided, ErrRequestExpired,
// ErrNotApprover, ErrSelfApproval.
func (d *Desk) Decide(ctx context.Context, id string, by *abi.Principal, approve bool, note string) (Request, error) {
	if len(note) > MaxNoteBytes {
		return Request{}, fmt.Errorf("approval: note is %d bytes, at most %d", len(note), MaxNoteBytes)
	}
	r, err := d.Get(ctx, id)
	if err != nil {
		return Request{}, err
	}
	if err := d.Rule().MayDecide(by, r); err != nil {
		return r, err
	}
	now := d.a.Now()
	if !r.Pending(now) {
		if r.State != StatePending {
			return r, fmt.Errorf("%w: %s", ErrDecided, r.State)
		}
		return r, ErrRequestExpired
	}
	by = withoutCredential(by)
	dec := Decision{Approve: approve, By: by, Note: note}
	rec := Record{Approval: Approval{Binding: r.Binding, Approver: PrincipalName(by), ApprovedBy: by, Request: r.ID}, Note: note}
	kind, code := KindRefused, CodeDenied
	if approve {
		if err := checkCaller(r.Binding); err != nil {
			return r, err // stored by an earlier version: it approves nothing
		}
		// The approval lasts the TTL from the decision, so that a person
		// deciding late leaves the agent time to retry.
		rec.ID, rec.ExpiresAt = NewID(), now.Add(d.a.TTL()).UTC().Truncate(time.Microsecond)
		if err := rec.Approval.Check(); err != nil {
			return r, err
		}
		dec.ApprovalID, dec.ExpiresAt = rec.ID, rec.ExpiresAt
		kind, code = KindMinted, ""
	}
	got, err := d.st.UpdateRequest(ctx, id, now, func(r Request) (Request, error) { return r.Apply(dec, now) })
	if err != nil {
		return r, err
	}
	decided := got
	err = d.a.record(kind, code, Origin{}, now, rec)
	if err == nil && approve {
		err = d.st.Add(ctx, rec.Approval, now, d.a.MaxOutstanding())
		if err == nil {
			got, err = d.st.UpdateRequest(ctx, id, now, func(r Request) (Request, error) {
				if r.State != StateApproved || r.ApprovalID != rec.ID {
					return r, fmt.Errorf("%w: %s since", ErrDecided, r.State)
				}
				r.Ready = true
				return r, nil
			})
			if err != nil {
				// Never claimable now: spend the stored approval too.
				_, _, _ = d.st.Take(context.WithoutCancel(ctx), rec.ID, now)
			}
		}
	}
	if err != nil {
		d.undo(ctx, decided, r.ExpiresAt, now)
		d.o.Logger.Error("approval: decision not recorded or not stored; undone", "request_id", id, "approver", PrincipalName(by), "err", err)
		return r, err
	}
	if approve {
		d.a.logMinted(rec.Approval)
	}
	d.o.Logger.Info("approval decided", "request_id", id, "state", got.State, "approver", PrincipalName(by))
	d.broadcast()
	return got, nil
}

// undo makes request decided, as Decide left it, pending again with its
// expiry, unless it changed since (used by a front end that read it in
// between: its approval was never stored, so it confirmed nothing).
func (d *Desk) undo(ctx context.Context, decided Request, expires, now time.Time) {
	_, err := d.st.UpdateRequest(context.WithoutCancel(ctx), decided.ID, now, func(r Request) (Request, error) {
		if r.State != decided.State || r.ApprovalID != decided.ApprovalID || !r.DecidedAt.Equal(decided.DecidedAt) {
			return r, fmt.Errorf("%w: %s since", ErrDecided, r.State)
		}
		r.State, r.ExpiresAt, r.Ready = StatePending, expires, false
		r.DecidedBy, r.DecidedAt, r.Note, r.ApprovalID = nil, time.Time{}, "", ""
		return r, nil
	})
	if err != nil {
		d.o.Logger.Error("approval: a decision not recorded could not be undone; it approves nothing", "request_id", decided.ID, "err", err)
	}
}

// Use claims the approval of request id, approved and ready: the caller
// alone presents it (Request.Use). ErrDecided when the request is not
// approved or was used; ErrNotReady while its approval is being recorded
// and stored (Wait waits that out).
func (d *Desk) Use(ctx context.Context, id string) (Request, error) {
	now := d.a.Now()
	r, err := d.st.UpdateRequest(ctx, id, now, func(r Request) (Request, error) {
		if r.State == StateApproved && !r.Ready {
			return r, ErrNotReady
		}
		return r.Use(now)
	})
	if err == nil {
		d.broadcast()
	}
	return r, err
}

// ReadyWait bounds how long UseReady waits for an approval being stored:
// storing it takes milliseconds, and an approval not stored by then is
// refused as ErrNotReady, as Use refuses it.
const ReadyWait = 10 * time.Second

// UseReady is Use that waits out ErrNotReady, the moment between an
// approver's decision and its approval being stored, for at most ReadyWait
// and while ctx lasts: a caller who makes the call again just as it is
// approved has it run, instead of refused a second time. Any other error,
// and ErrNotReady past the wait, is Use's.
func (d *Desk) UseReady(ctx context.Context, id string) (Request, error) {
	wctx, cancel := context.WithTimeout(ctx, ReadyWait)
	defer cancel()
	for {
		r, err := d.Use(ctx, id)
		if !errors.Is(err, ErrNotReady) {
			return r, err
		}
		if _, werr := d.Wait(wctx, id); werr != nil {
			return r, err
		}
	}
}

// Wait waits until request id is decided or expires, or ctx ends, and
// returns it as it then is: StatePending means it expired (or ctx ended:
// the error says which).
func (d *Desk) Wait(ctx context.Context, id string) (Request, error) {
	for {
		ch := d.watch()
		r, err := d.Get(ctx, id)
		if err != nil {
			return r, err
		}
		if r.State != StatePending && (r.State != StateApproved || r.Ready) {
			return r, nil
		}
		left := r.ExpiresAt.Sub(d.a.Now())
		if left <= 0 {
			return r, ErrRequestExpired
		}
		t := time.NewTimer(min(left, d.o.Poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return r, context.Cause(ctx)
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// Changed returns a channel closed at the next change this process makes
// (a request opened or decided). Another process's changes show only when
// the store is read again: a page polls as well.
func (d *Desk) Changed() <-chan struct{} { return d.watch() }

// Poll returns how often a reader should read the store again.
func (d *Desk) Poll() time.Duration { return d.o.Poll }

func (d *Desk) watch() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

func (d *Desk) broadcast() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.changed)
	d.changed = make(chan struct{})
}
