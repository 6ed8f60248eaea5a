package approval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// A Request is a call waiting for a person: what the approval page shows
// and an approver decides. It is opened by the front end that refused the
// call for want of a confirmation, once per Binding while it is
// unexpired (an agent retrying the identical call meets the same
// request), and decided at most once. An approval (Approval) is minted
// only when an approver approves it, and it is for the request's Binding
// alone.
type Request struct {
	// ID is "rq-" and 32 lowercase hex digits (NewRequestID).
	ID string `json:"request_id"`
	Binding
	// Upstream names the MCP server the call goes to (gatehost mcp), or
	// is empty.
	Upstream string `json:"upstream,omitempty"`
	// Effect is the tool's effect class in the catalog snapshot.
	Effect string `json:"effect,omitempty"`
	// Caller is the principal that made the call, when the front end
	// knows it: the one who may not approve it (Rule.AllowSelf).
	Caller *abi.Principal `json:"caller,omitempty"`
	// Findings say why approval is required: the pipeline's findings.
	Findings []abi.Finding `json:"findings,omitempty"`
	// Arguments are every argument that will be sent, as JSON, whole.
	Arguments json.RawMessage `json:"arguments"`
	// Front is the front end that opened it: "mcp" or "serve".
	Front string `json:"front,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt ends the request, and the approval minted for it.
	ExpiresAt time.Time `json:"expires_at"`

	// State is StatePending, StateApproved or StateDenied.
	State string `json:"state"`
	// DecidedBy, DecidedAt and Note are the approver's decision.
	DecidedBy *abi.Principal `json:"decided_by,omitempty"`
	DecidedAt time.Time      `json:"decided_at,omitzero"`
	Note      string         `json:"note,omitempty"`
	// ApprovalID is the approval minted when it was approved. Only the
	// front end that waits for the request, or the agent's retry of the
	// identical call, presents it; the page never shows it.
	ApprovalID string `json:"approval_id,omitempty"`
	// Ready: the approval of an approved request is recorded and stored,
	// so a front end may claim it (Desk.Use). Between the decision and
	// then it is approved but not ready: claimed then, the approval would
	// be presented before it exists, refused, and spent.
	Ready bool `json:"ready,omitempty"`
}

// Request states.
const (
	StatePending  = "pending"
	StateApproved = "approved"
	StateDenied   = "denied"
	// StateUsed: approved, and its approval presented once (Use).
	StateUsed = "used"
)

// CodeDenied is the reason of the approval_refused record of a request an
// approver denied.
const CodeDenied = "approval_denied"

// Limits of a request, checked before it is stored.
const (
	// MaxNoteBytes bounds an approver's note.
	MaxNoteBytes = 2000
	// MaxArgumentBytes bounds the arguments a request carries: a call
	// whose arguments are larger cannot be shown whole, so it cannot be
	// approved.
	MaxArgumentBytes = 256 << 10
	// DefaultMaxPending caps the requests held unexpired at once.
	DefaultMaxPending = 1000
)

// CallerShare is how many of max requests held unexpired one caller
// (Binding.CallerKey) may hold: a tenth, rounded up, at least one. Without
// it one agent opening distinct calls fills the desk and every other
// caller's call goes unasked; with it, ten callers are needed to fill it.
// Callers the front end cannot name are one caller ("anonymous").
func CallerShare(max int) int { return (max + 9) / 10 }

// Errors of requests, for callers to branch on.
var (
	// ErrNoRequest: no such request (never opened, or expired and
	// dropped).
	ErrNoRequest = errors.New("approval: no such request")
	// ErrDecided: the request was decided already.
	ErrDecided = errors.New("approval: request decided already")
	// ErrNotReady: the request is approved and its approval is still
	// being recorded and stored (Request.Ready); claim it a moment later.
	ErrNotReady = errors.New("approval: approved, and its approval not yet stored")
	// ErrRequestExpired: the request expired before it was decided.
	ErrRequestExpired = errors.New("approval: request expired")
	// ErrNotApprover: the principal is not one the config names as an
	// approver.
	ErrNotApprover = errors.New("approval: not an approver")
	// ErrSelfApproval: the principal made the call (separation of
	// duties).
	ErrSelfApproval = errors.New("approval: the caller may not approve their own call")
)

var requestIDRE = regexp.MustCompile(`^rq-[0-9a-f]{32}$`)

// ValidRequestID reports whether s has the form of a request id.
func ValidRequestID(s string) bool { return requestIDRE.MatchString(s) }

// NewRequestID returns a new random request id: "rq-" and 128 random
// bits in hex. The id names the page of the request; it grants nothing.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "rq-" + hex.EncodeToString(b[:])
}

// Open reports whether r is unexpired at now (now < ExpiresAt).
func (r Request) Open(now time.Time) bool { return now.Before(r.ExpiresAt) }

// Pending reports whether r waits for a decision at now.
func (r Request) Pending(now time.Time) bool { return r.State == StatePending && r.Open(now) }

// Check validates a request before it is stored.
func (r Request) Check() error {
	switch {
	case !ValidRequestID(r.ID):
		return fmt.Errorf("approval: request id %q: want rq- and 32 lowercase hex digits", r.ID)
	case r.Pipeline == "":
		return errors.New("approval: request: no pipeline")
	case r.Tool == "":
		return errors.New("approval: request: no tool")
	case !validSHA256(r.SubjectSHA256):
		return fmt.Errorf("approval: request: subject_sha256 %q: want 64 lowercase hex digits", r.SubjectSHA256)
	case r.ExpiresAt.IsZero() || r.CreatedAt.IsZero():
		return errors.New("approval: request: no creation or expiry time")
	case len(r.Arguments) > MaxArgumentBytes:
		return fmt.Errorf("approval: request: arguments are %d bytes, at most %d", len(r.Arguments), MaxArgumentBytes)
	case len(r.Arguments) > 0 && !json.Valid(r.Arguments):
		return errors.New("approval: request: arguments are not JSON")
	case len(r.Note) > MaxNoteBytes:
		return fmt.Errorf("approval: request: note is %d bytes, at most %d", len(r.Note), MaxNoteBytes)
	}
	switch r.State {
	case StatePending:
	case StateApproved:
		if !ValidID(r.ApprovalID) {
			return errors.New("approval: request: approved without an approval id")
		}
	case StateDenied:
	case StateUsed:
		if !ValidID(r.ApprovalID) {
			return errors.New("approval: request: used without an approval id")
		}
	default:
		return fmt.Errorf("approval: request: state %q: want %s, %s, %s or %s", r.State, StatePending, StateApproved, StateDenied, StateUsed)
	}
	return nil
}

// A Decision is an approver's answer to a request.
type Decision struct {
	Approve bool
	By      *abi.Principal
	Note    string
	// ApprovalID is the approval minted for an approval (Approve), and
	// ExpiresAt its expiry, which the request then takes when later.
	ApprovalID string
	ExpiresAt  time.Time
}

// RequestStore holds requests. Like Store, each operation is atomic
// across every process or replica sharing the store; the rule (dedup per
// binding, decided once, expiry) is this package's, applied the same way
// by every store (requestTable's methods, or the same functions under a
// row lock).
type RequestStore interface {
	// OpenRequest stores r (valid, StatePending) unless a request for the
	// same Binding is unexpired at now, pending or approved: then that one
	// is returned and created is false. At most max requests are held
	// unexpired, and at most CallerShare(max) of them with r's CallerKey
	// (ErrFull).
	OpenRequest(ctx context.Context, r Request, now time.Time, max int) (got Request, created bool, err error)
	// Request returns the request id, or ErrNoRequest.
	Request(ctx context.Context, id string, now time.Time) (Request, error)
	// Requests returns the requests unexpired at now, newest first.
	Requests(ctx context.Context, now time.Time) ([]Request, error)
	// UpdateRequest replaces request id with change(it), atomically (no
	// other change of id in between, on any handle): ErrNoRequest, or
	// change's error, and then nothing is changed. change is one of this
	// package's rules (Request.Apply, Request.Use).
	UpdateRequest(ctx context.Context, id string, now time.Time, change func(Request) (Request, error)) (Request, error)
}

// SameCall reports whether a request for b is the one open for binding
// want at now: unexpired, and pending or approved (a denied request does
// nor a used one, stops the agent from asking again).
func (r Request) SameCall(want Binding, now time.Time) bool {
	return r.Binding == want && r.Open(now) && (r.State == StatePending || r.State == StateApproved)
}

// Use marks an approved request used: the front end that does so, alone,
// presents its approval. ErrDecided when it is not approved (pending,
// denied, or used already).
func (r Request) Use(now time.Time) (Request, error) {
	switch {
	case r.State != StateApproved:
		return r, fmt.Errorf("%w: %s", ErrDecided, r.State)
	case !r.Open(now):
		return r, ErrRequestExpired
	}
	r.State = StateUsed
	return r, nil
}

// Apply applies the decision d to r at now: the one rule of every store.
func (r Request) Apply(d Decision, now time.Time) (Request, error) {
	switch {
	case r.State != StatePending:
		return r, fmt.Errorf("%w: %s", ErrDecided, r.State)
	case !r.Open(now):
		return r, ErrRequestExpired
	case len(d.Note) > MaxNoteBytes:
		return r, fmt.Errorf("approval: note is %d bytes, at most %d", len(d.Note), MaxNoteBytes)
	case d.Approve && !ValidID(d.ApprovalID):
		return r, errors.New("approval: an approval needs an approval id")
	}
	r.State = StateDenied
	if d.Approve {
		r.State, r.ApprovalID = StateApproved, d.ApprovalID
		if d.ExpiresAt.After(r.ExpiresAt) {
			r.ExpiresAt = d.ExpiresAt.UTC().Truncate(time.Microsecond)
		}
	}
	r.DecidedBy, r.DecidedAt, r.Note = d.By, now.UTC().Truncate(time.Microsecond), d.Note
	return r, nil
}

// requestTable is the requests of the memory and file stores.
type requestTable map[string]Request

func (t requestTable) sweep(now time.Time) (changed bool) {
	for id, r := range t {
		if !r.Open(now) {
			delete(t, id)
			changed = true
		}
	}
	return changed
}

func (t requestTable) open(r Request, now time.Time, max int) (Request, bool, error) {
	if err := r.Check(); err != nil {
		return Request{}, false, err
	}
	if r.State != StatePending {
		return Request{}, false, fmt.Errorf("approval: request %s: opened %s", r.ID, r.State)
	}
	t.sweep(now)
	for _, o := range t {
		if o.SameCall(r.Binding, now) {
			return o, false, nil
		}
	}
	if _, dup := t[r.ID]; dup {
		return Request{}, false, fmt.Errorf("approval: request id %s exists", r.ID)
	}
	if len(t) >= max {
		return Request{}, false, ErrFull
	}
	mine := 0
	for _, o := range t {
		if o.CallerKey == r.CallerKey {
			mine++
		}
	}
	if err := CheckShare(mine, max); err != nil {
		return Request{}, false, err
	}
	t[r.ID] = r
	return r, true, nil
}

// CheckShare is ErrFull when a caller holding n unexpired requests may
// open no more under max (CallerShare): the rule every store applies under
// its lock.
func CheckShare(n, max int) error {
	if share := CallerShare(max); n >= share {
		return fmt.Errorf("%w: the caller holds %d requests, its share of %d", ErrFull, n, share)
	}
	return nil
}

func (t requestTable) get(id string, now time.Time) (Request, error) {
	r, ok := t[id]
	if !ok || !r.Open(now) {
		return Request{}, fmt.Errorf("%w: %s", ErrNoRequest, id)
	}
	return r, nil
}

func (t requestTable) list(now time.Time) []Request {
	out := make([]Request, 0, len(t))
	for _, r := range t {
		if r.Open(now) {
			out = append(out, r)
		}
	}
	SortRequests(out)
	return out
}

func (t requestTable) update(id string, change func(Request) (Request, error)) (Request, error) {
	r, ok := t[id]
	if !ok {
		return Request{}, fmt.Errorf("%w: %s", ErrNoRequest, id)
	}
	r, err := change(r)
	if err != nil {
		return r, err
	}
	if err := r.Check(); err != nil {
		return r, err
	}
	t[id] = r
	return r, nil
}

// SortRequests orders requests newest first, then by id.
func SortRequests(rs []Request) {
	slices.SortFunc(rs, func(a, b Request) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Key is a string equal for equal bindings: the hex SHA-256 of its JSON,
// for stores that index requests by binding.
func (b Binding) Key() string {
	data, _ := json.Marshal(b) // a struct of strings always marshals
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
