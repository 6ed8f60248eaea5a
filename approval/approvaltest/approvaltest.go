// Package approvaltest is the behavioural test every approval.Store
// passes: the rule of package approval (expiry, single use, a mismatch
// burns, the cap) applied through approval.Approvals on the store, one
// table for all stores.
package approvaltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
)

// Instance is one empty store under test.
type Instance struct {
	Store approval.Store
	// Open returns another handle on the same store: another process's
	// File, another replica's database connection.
	Open func(t *testing.T) approval.Store
}

// Epoch is the tests' clock start.
var Epoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// Clock is a settable clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set sets it.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Log collects records.
type Log struct {
	mu   sync.Mutex
	recs []eventlog.Record
}

// Append records r.
func (l *Log) Append(r eventlog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}

// All returns every record, in order.
func (l *Log) All() []eventlog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// Of returns the records of run runID.
func (l *Log) Of(runID string) []eventlog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []eventlog.Record
	for _, r := range l.recs {
		if r.RunID == runID {
			out = append(out, r)
		}
	}
	return out
}

// SHA is the subject digest of s.
func SHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Call is the binding the tests approve: Caller's call.
var Call = approval.Binding{Pipeline: "exec", Session: "dev", CallerKey: approval.CallerOf(Caller), Tool: "mcp.github:merge_pull_request",
	SchemaDigest: SHA("schema"), SubjectSHA256: SHA(`{"tool":"merge_pull_request"}`)}

// callerOf is the principal of caller key k (approval.CallerOf), nil for
// an anonymous caller.
func callerOf(k string) *abi.Principal {
	var f []string
	if json.Unmarshal([]byte(k), &f) != nil || len(f) != 3 {
		return nil
	}
	return &abi.Principal{Method: f[0], Issuer: f[1], Subject: f[2]}
}

// Present is the confirmation request of a run presenting token for b
// (tool nil: not in the snapshot), made by b's caller.
func Present(runID, token string, b approval.Binding, inCatalog bool) host.ConfirmationRequest {
	req := host.ConfirmationRequest{Pipeline: b.Pipeline, Session: b.Session, Principal: callerOf(b.CallerKey), RunID: runID, ToolName: "merge_pull_request",
		SubjectSHA256: b.SubjectSHA256, Token: token}
	if inCatalog {
		req.Tool = &catalog.Tool{ID: b.Tool, SchemaDigest: b.SchemaDigest}
	}
	return req
}

// use is one presentation of a step: the binding (changed by edit), the
// time after the mint, and the expected refusal code ("" confirms).
type use struct {
	edit      func(*approval.Binding)
	notInCat  bool
	after     time.Duration
	token     string // "" is the minted id
	want      string
	otherOpen bool // presented through Open's handle
}

const ttl = 5 * time.Minute

// Run runs the behavioural table against fresh instances.
func Run(t *testing.T, open func(t *testing.T) Instance) {
	t.Run("rules", func(t *testing.T) { runRules(t, open) })
	t.Run("single use under concurrency", func(t *testing.T) { runConcurrent(t, open) })
	t.Run("cap", func(t *testing.T) { runCap(t, open) })
	t.Run("requests", func(t *testing.T) { runRequests(t, open) })
	t.Run("requests decided once under concurrency", func(t *testing.T) { runRequestRace(t, open) })
	t.Run("requests are the caller's", func(t *testing.T) { runRequestCallers(t, open) })
	t.Run("each caller its share of the requests", func(t *testing.T) { runRequestShare(t, open) })
	t.Run("stored without a caller: binds nothing", func(t *testing.T) { runLegacy(t, open) })
}

func runRules(t *testing.T, open func(t *testing.T) Instance) {
	set := func(f func(*approval.Binding)) func(*approval.Binding) { return f }
	for _, c := range []struct {
		name string
		uses []use
	}{
		{"exact match confirms once; a replay is used", []use{{}, {want: approval.CodeUsed}}},
		{"usable just before its expiry", []use{{after: ttl - time.Microsecond}}},
		{"expired at its expiry", []use{{after: ttl, want: approval.CodeExpired}, {want: approval.CodeUnknown}}},
		{"expired after it", []use{{after: time.Hour, want: approval.CodeExpired}}},
		{"unknown id", []use{{token: "ap-" + fmt.Sprintf("%032x", 7), want: approval.CodeUnknown}, {}}},
		{"free text is unknown", []use{{token: "yes", want: approval.CodeUnknown}, {}}},
		{"another pipeline burns it", []use{{edit: set(func(b *approval.Binding) { b.Pipeline = "other" }), want: approval.CodePipelineMismatch}, {want: approval.CodeUsed}}},
		{"another session burns it", []use{{edit: set(func(b *approval.Binding) { b.Session = "" }), want: approval.CodeSessionMismatch}, {want: approval.CodeUsed}}},
		{"another caller in the same session burns it", []use{{edit: set(func(b *approval.Binding) { b.CallerKey = approval.CallerOf(Other) }), want: approval.CodeCallerMismatch}, {want: approval.CodeUsed}}},
		{"an anonymous caller burns it", []use{{edit: set(func(b *approval.Binding) { b.CallerKey = approval.CallerOf(nil) }), want: approval.CodeCallerMismatch}, {want: approval.CodeUsed}}},
		{"another subject burns it", []use{{edit: set(func(b *approval.Binding) { b.SubjectSHA256 = SHA("b") }), want: approval.CodeSubjectMismatch}, {want: approval.CodeUsed}}},
		{"another tool burns it", []use{{edit: set(func(b *approval.Binding) { b.Tool = "mcp.github:create_issue" }), want: approval.CodeToolMismatch}, {want: approval.CodeUsed}}},
		{"another schema burns it", []use{{edit: set(func(b *approval.Binding) { b.SchemaDigest = SHA("s2") }), want: approval.CodeSchemaDigestMismatch}, {want: approval.CodeUsed}}},
		{"a tool not in the snapshot burns it", []use{{notInCat: true, want: approval.CodeToolNotInCatalog}, {want: approval.CodeUsed}}},
		{"used on another handle", []use{{otherOpen: true}, {want: approval.CodeUsed}}},
		{"replayed on another handle", []use{{}, {otherOpen: true, want: approval.CodeUsed}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := open(t)
			clock := &Clock{now: Epoch}
			log := &Log{}
			mk := func(st approval.Store) *approval.Approvals {
				a, err := approval.New(approval.Options{Store: st, TTL: ttl, Now: clock.Now, Record: log.Append,
					Agent: func(context.Context) string { return "bot" }})
				require.NoError(t, err)
				return a
			}
			apps := mk(in.Store)
			ap, err := apps.Mint(context.Background(), Call, "", approval.Origin{RequestID: "mint"})
			require.NoError(t, err)
			assert.Equal(t, Epoch.Add(ttl), ap.ExpiresAt)
			for i, u := range c.uses {
				b := Call
				if u.edit != nil {
					u.edit(&b)
				}
				if u.after != 0 {
					clock.Set(Epoch.Add(u.after))
				}
				token := ap.ID
				if u.token != "" {
					token = u.token
				}
				by := apps
				if u.otherOpen {
					by = mk(in.Open(t))
				}
				runID := fmt.Sprintf("run-%d", i)
				conf, err := by.Confirm(context.Background(), Present(runID, token, b, !u.notInCat))
				require.NoError(t, err, "use %d", i)
				recs := log.Of(runID)
				require.Len(t, recs, 1, "use %d: one record under the run's id", i)
				var data approval.Record
				require.NoError(t, json.Unmarshal(recs[0].Data, &data))
				assert.Equal(t, "bot", data.Agent)
				require.NotNil(t, data.Presented)
				want := b
				if u.notInCat { // the tool as the call names it, no schema
					want.Tool, want.SchemaDigest = "merge_pull_request", ""
				}
				assert.Equal(t, want, *data.Presented, "use %d: the presented binding", i)
				if u.want == "" {
					require.NotNil(t, conf, "use %d confirms", i)
					assert.Equal(t, Call.Tool, conf.Tool)
					assert.Equal(t, ap.ID, conf.Token)
					assert.Equal(t, approval.KindUsed, recs[0].Kind)
					assert.Equal(t, ap, data.Approval, "the approval as minted")
					continue
				}
				assert.Nil(t, conf, "use %d confirms nothing", i)
				assert.Equal(t, approval.KindRefused, recs[0].Kind)
				assert.Equal(t, u.want, recs[0].Reason, "use %d", i)
				if !approval.ValidID(token) {
					assert.Empty(t, data.ID, "free text is not copied into the log")
				}
			}
		})
	}
}

func runConcurrent(t *testing.T, open func(t *testing.T) Instance) {
	in := open(t)
	stores := []approval.Store{in.Store, in.Open(t)}
	log := &Log{}
	apps := make([]*approval.Approvals, len(stores))
	for i, st := range stores {
		var err error
		apps[i], err = approval.New(approval.Options{Store: st, Record: log.Append})
		require.NoError(t, err)
	}
	ap, err := apps[0].Mint(context.Background(), Call, "", approval.Origin{})
	require.NoError(t, err)
	const n = 16
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			conf, err := apps[i%len(apps)].Confirm(context.Background(), Present(fmt.Sprint("race-", i), ap.ID, Call, true))
			if assert.NoError(t, err) && conf != nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, ok.Load(), "exactly one of %d presentations confirms", n)
	used := 0
	for i := range n {
		for _, r := range log.Of(fmt.Sprint("race-", i)) {
			if r.Kind == approval.KindUsed {
				used++
			} else {
				assert.Equal(t, approval.CodeUsed, r.Reason)
			}
		}
	}
	assert.Equal(t, 1, used)
}

func runCap(t *testing.T, open func(t *testing.T) Instance) {
	in := open(t)
	clock := &Clock{now: Epoch}
	apps, err := approval.New(approval.Options{Store: in.Store, TTL: ttl, MaxOutstanding: 3, Now: clock.Now})
	require.NoError(t, err)
	other, err := approval.New(approval.Options{Store: in.Open(t), TTL: ttl, MaxOutstanding: 3, Now: clock.Now})
	require.NoError(t, err)
	ctx := context.Background()
	var ids []string
	for range 2 {
		ap, err := apps.Mint(ctx, Call, "", approval.Origin{})
		require.NoError(t, err)
		ids = append(ids, ap.ID)
	}
	clock.Set(Epoch.Add(time.Minute))
	_, err = other.Mint(ctx, Call, "", approval.Origin{})
	require.NoError(t, err, "the cap counts across handles")
	_, err = apps.Mint(ctx, Call, "", approval.Origin{})
	require.ErrorIs(t, err, approval.ErrFull)
	// A used approval still counts until it expires.
	conf, err := apps.Confirm(ctx, Present("use", ids[0], Call, true))
	require.NoError(t, err)
	require.NotNil(t, conf)
	_, err = other.Mint(ctx, Call, "", approval.Origin{})
	require.ErrorIs(t, err, approval.ErrFull)
	// At the first two's expiry there is room for two.
	clock.Set(Epoch.Add(ttl))
	for range 2 {
		_, err = other.Mint(ctx, Call, "", approval.Origin{})
		require.NoError(t, err)
	}
	_, err = apps.Mint(ctx, Call, "", approval.Origin{})
	require.ErrorIs(t, err, approval.ErrFull)
}

// Caller and Approver are the principals of the request tests; Other is
// another agent, sharing Caller's sessions.
var (
	Caller   = &abi.Principal{Issuer: "agents", Subject: "agent1", Method: abi.MethodToken}
	Other    = &abi.Principal{Issuer: "agents", Subject: "agent2", Method: abi.MethodToken}
	Approver = &abi.Principal{Issuer: "https://id.example", Subject: "alice", Method: abi.MethodOIDC,
		Claims: map[string]any{"groups": []any{"approvers"}}}
	Rule = approval.Rule{Approvers: []approval.Approver{{Claims: map[string]string{"groups": "approvers"}}}}
)

// Desks returns a Desk on each handle of in, sharing clock and log.
func Desks(t *testing.T, in Instance, clock *Clock, log *Log) (a, b *approval.Desk) {
	t.Helper()
	mk := func(st approval.Store) *approval.Desk {
		apps, err := approval.New(approval.Options{Store: st, TTL: ttl, Now: clock.Now, Record: log.Append})
		require.NoError(t, err)
		d, err := approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: Rule, PageURL: "https://gate.example/approvals",
			Poll: time.Millisecond})
		require.NoError(t, err)
		return d
	}
	return mk(in.Store), mk(in.Open(t))
}

func request() approval.Request {
	return approval.Request{Binding: Call, Upstream: "github", Effect: "non_idempotent", Caller: Caller,
		Findings:  []abi.Finding{{Code: "confirmation_required", Message: "merging needs a person"}},
		Arguments: json.RawMessage(`{"owner":"o","repo":"r","pull_number":7}`), Front: "mcp"}
}

func runRequests(t *testing.T, open func(t *testing.T) Instance) {
	ctx := context.Background()
	in := open(t)
	clock := &Clock{now: Epoch}
	log := &Log{}
	a, b := Desks(t, in, clock, log)

	r, created, err := a.Open(ctx, request())
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, approval.StatePending, r.State)
	assert.Equal(t, "https://gate.example/approvals/requests/"+r.ID, a.URL(r.ID))

	// The identical call, through the other handle, meets the same request.
	again, created, err := b.Open(ctx, request())
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, r.ID, again.ID)

	list, err := b.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.JSONEq(t, string(request().Arguments), string(list[0].Arguments), "arguments kept whole")
	assert.Equal(t, Caller, list[0].Caller)

	// Who may decide.
	_, err = b.Decide(ctx, r.ID, &abi.Principal{Issuer: "https://id.example", Subject: "mallory", Method: abi.MethodOIDC}, true, "")
	require.ErrorIs(t, err, approval.ErrNotApprover)
	self := *Caller
	self.Claims = map[string]any{"groups": []any{"approvers"}}
	_, err = b.Decide(ctx, r.ID, &self, true, "")
	require.ErrorIs(t, err, approval.ErrSelfApproval)
	_, err = b.Decide(ctx, "rq-00000000000000000000000000000000", Approver, true, "")
	require.ErrorIs(t, err, approval.ErrNoRequest)

	// Approved on b; a waits and finds the approval, which confirms the call once.
	done := make(chan approval.Request, 1)
	go func() {
		got, _ := a.Wait(ctx, r.ID)
		done <- got
	}()
	dec, err := b.Decide(ctx, r.ID, Approver, true, "looks right")
	require.NoError(t, err)
	assert.Equal(t, approval.StateApproved, dec.State)
	assert.Equal(t, Approver.Subject, dec.DecidedBy.Subject)
	waited := <-done
	require.Equal(t, approval.StateApproved, waited.State)
	require.True(t, approval.ValidID(waited.ApprovalID))
	_, err = a.Decide(ctx, r.ID, Approver, false, "")
	require.ErrorIs(t, err, approval.ErrDecided)
	// Approved, the identical call meets it again until one front end
	// uses it; then the next identical call asks anew.
	again, created, err = a.Open(ctx, request())
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, approval.StateApproved, again.State)
	used, err := b.Use(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, approval.StateUsed, used.State)
	_, err = a.Use(ctx, r.ID)
	require.ErrorIs(t, err, approval.ErrDecided, "used once, on any handle")
	fresh, created, err := a.Open(ctx, request())
	require.NoError(t, err)
	require.True(t, created)
	assert.NotEqual(t, r.ID, fresh.ID)
	_, err = a.Decide(ctx, fresh.ID, Approver, false, "")
	require.NoError(t, err)

	apps, err := approval.New(approval.Options{Store: in.Store, TTL: ttl, Now: clock.Now, Record: log.Append})
	require.NoError(t, err)
	conf, err := apps.Confirm(ctx, Present("run-1", waited.ApprovalID, Call, true))
	require.NoError(t, err)
	require.NotNil(t, conf)
	conf, err = apps.Confirm(ctx, Present("run-2", waited.ApprovalID, Call, true))
	require.NoError(t, err)
	require.Nil(t, conf, "single use")
	var minted *eventlog.Record
	log.mu.Lock()
	for i := range log.recs {
		if log.recs[i].Kind == approval.KindMinted {
			minted = &log.recs[i]
		}
	}
	log.mu.Unlock()
	require.NotNil(t, minted)
	var rec approval.Record
	require.NoError(t, json.Unmarshal(minted.Data, &rec))
	assert.Equal(t, "alice", rec.ApprovedBy.Subject, "the record names the approver")
	assert.Equal(t, r.ID, rec.Request)
	assert.Equal(t, "looks right", rec.Note)

	// A denied request is recorded with its approver; the agent may ask again.
	other := request()
	other.SubjectSHA256 = SHA("another call")
	r2, _, err := a.Open(ctx, other)
	require.NoError(t, err)
	d2, err := b.Decide(ctx, r2.ID, Approver, false, "no")
	require.NoError(t, err)
	assert.Equal(t, approval.StateDenied, d2.State)
	assert.Empty(t, d2.ApprovalID)
	r3, created, err := a.Open(ctx, other)
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEqual(t, r2.ID, r3.ID)

	// Expiry: undecided at ExpiresAt, it is gone.
	clock.Set(r3.ExpiresAt)
	_, err = b.Decide(ctx, r3.ID, Approver, true, "")
	require.ErrorIs(t, err, approval.ErrNoRequest)
	got, err := a.Wait(ctx, r3.ID)
	require.ErrorIs(t, err, approval.ErrNoRequest)
	assert.Empty(t, got.ApprovalID)
}

func runRequestRace(t *testing.T, open func(t *testing.T) Instance) {
	ctx := context.Background()
	in := open(t)
	clock := &Clock{now: Epoch}
	log := &Log{}
	a, b := Desks(t, in, clock, log)
	r, _, err := a.Open(ctx, request())
	require.NoError(t, err)
	const n = 8
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := []*approval.Desk{a, b}[i%2]
			if _, err := d.Decide(ctx, r.ID, Approver, i%3 != 0, ""); err == nil {
				ok.Add(1)
			} else {
				assert.ErrorIs(t, err, approval.ErrDecided)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, ok.Load(), "exactly one decision of %d", n)
	got, err := a.Get(ctx, r.ID)
	require.NoError(t, err)
	// The log holds the one decision taken, and no other.
	decisions := log.decisions(t, r.ID)
	require.Len(t, decisions, 1, "one decision recorded")
	if got.State == approval.StateApproved {
		assert.Equal(t, approval.KindMinted, decisions[0].Kind)
		var rec approval.Record
		require.NoError(t, json.Unmarshal(decisions[0].Data, &rec))
		assert.Equal(t, got.ApprovalID, rec.ID, "the approval recorded is the request's")
		// Only the winner's approval exists.
		apps, err := approval.New(approval.Options{Store: in.Store, TTL: ttl, Now: clock.Now})
		require.NoError(t, err)
		conf, err := apps.Confirm(ctx, Present("run", got.ApprovalID, Call, true))
		require.NoError(t, err)
		assert.NotNil(t, conf)
	} else {
		assert.Equal(t, approval.StateDenied, got.State)
		assert.Equal(t, approval.KindRefused, decisions[0].Kind)
		assert.Equal(t, approval.CodeDenied, decisions[0].Reason)
	}
}

// decisions returns the decision records of request id: approval_minted,
// and approval_refused as denied.
func (l *Log) decisions(t *testing.T, id string) []eventlog.Record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []eventlog.Record
	for _, r := range l.recs {
		var rec approval.Record
		require.NoError(t, json.Unmarshal(r.Data, &rec))
		if rec.Request == id && (r.Kind == approval.KindMinted || r.Reason == approval.CodeDenied) {
			out = append(out, r)
		}
	}
	return out
}

// runRequestCallers: one call made by two principals sharing a session is
// two requests, and the approval of one confirms only its caller's call;
// the caller may not decide their own.
func runRequestCallers(t *testing.T, open func(t *testing.T) Instance) {
	ctx := context.Background()
	in := open(t)
	clock := &Clock{now: Epoch}
	log := &Log{}
	a, b := Desks(t, in, clock, log)
	mine, created, err := a.Open(ctx, request())
	require.NoError(t, err)
	require.True(t, created)
	other := request()
	other.Caller, other.CallerKey = Other, approval.CallerOf(Other)
	theirs, created, err := b.Open(ctx, other)
	require.NoError(t, err)
	require.True(t, created, "another caller's identical call is a request of its own")
	require.NotEqual(t, mine.ID, theirs.ID)

	// The binding names the request's caller, whatever a front end set.
	forged := request()
	forged.Caller = Other
	got, created, err := a.Open(ctx, forged)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, theirs.ID, got.ID)

	// The caller, signed in as an approver, may not approve their own
	// call, nor take another's approval of the same call.
	self := *Other
	self.Claims = map[string]any{"groups": []any{"approvers"}}
	_, err = a.Decide(ctx, theirs.ID, &self, true, "")
	require.ErrorIs(t, err, approval.ErrSelfApproval)
	dec, err := b.Decide(ctx, mine.ID, &self, true, "")
	require.NoError(t, err, "Other approves Caller's call")
	again, created, err := b.Open(ctx, other)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, theirs.ID, again.ID, "Other meets its own request, still pending, not Caller's approved one")
	assert.Equal(t, approval.StatePending, again.State)

	apps, err := approval.New(approval.Options{Store: in.Store, TTL: ttl, Now: clock.Now, Record: log.Append})
	require.NoError(t, err)
	theirCall := Call
	theirCall.CallerKey = approval.CallerOf(Other)
	conf, err := apps.Confirm(ctx, Present("other-presents", dec.ApprovalID, theirCall, true))
	require.NoError(t, err)
	assert.Nil(t, conf, "an approval of Caller's call confirms nothing for Other")
	assert.Equal(t, approval.CodeCallerMismatch, log.Of("other-presents")[0].Reason)
}

// runRequestShare: one caller opening distinct calls holds at most its
// share (approval.CallerShare) of max_pending, on every handle, so that
// others' calls are still asked; the desk-wide cap stays the ceiling.
func runRequestShare(t *testing.T, open func(t *testing.T) Instance) {
	ctx := context.Background()
	in := open(t)
	clock := &Clock{now: Epoch}
	const max = 12 // a share of 2
	require.Equal(t, 2, approval.CallerShare(max))
	mk := func(st approval.Store) *approval.Desk {
		apps, err := approval.New(approval.Options{Store: st, TTL: ttl, Now: clock.Now})
		require.NoError(t, err)
		d, err := approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: Rule, MaxPending: max})
		require.NoError(t, err)
		return d
	}
	a, b := mk(in.Store), mk(in.Open(t))
	call := func(p *abi.Principal, n int) approval.Request {
		r := request()
		r.Caller, r.SubjectSHA256 = p, SHA(fmt.Sprintf("call %d", n))
		return r
	}
	agent := func(i int) *abi.Principal {
		return &abi.Principal{Issuer: "agents", Subject: fmt.Sprintf("agent-%d", i), Method: abi.MethodToken}
	}
	first, created, err := a.Open(ctx, call(Caller, 0))
	require.NoError(t, err)
	require.True(t, created)
	clock.Set(Epoch.Add(time.Minute))
	_, created, err = b.Open(ctx, call(Caller, 1))
	require.NoError(t, err)
	require.True(t, created)
	for _, d := range []*approval.Desk{a, b} {
		_, _, err = d.Open(ctx, call(Caller, 2))
		require.ErrorIs(t, err, approval.ErrFull, "beyond the caller's share, on any handle")
	}
	again, created, err := b.Open(ctx, call(Caller, 0))
	require.NoError(t, err, "a call already asked is met, whatever the share")
	assert.False(t, created)
	assert.Equal(t, first.ID, again.ID)
	_, created, err = a.Open(ctx, call(Other, 0))
	require.NoError(t, err, "another caller is still asked")
	require.True(t, created)
	_, created, err = b.Open(ctx, call(nil, 0))
	require.NoError(t, err, "so is an anonymous one")
	require.True(t, created)

	// Many callers still fill the desk: its cap is the ceiling.
	for i := range max - 4 {
		_, _, err = a.Open(ctx, call(agent(i), 0))
		require.NoError(t, err)
	}
	_, _, err = b.Open(ctx, call(agent(max), 0))
	require.ErrorIs(t, err, approval.ErrFull)

	// At its first request's expiry the caller has room for one again.
	clock.Set(first.ExpiresAt)
	_, created, err = b.Open(ctx, call(Caller, 3))
	require.NoError(t, err)
	require.True(t, created)
}

// runLegacy: an approval or a request an earlier version stored, whose
// binding names no caller, confirms, matches and approves nothing.
func runLegacy(t *testing.T, open func(t *testing.T) Instance) {
	ctx := context.Background()
	in := open(t)
	clock := &Clock{now: Epoch}
	log := &Log{}
	old := Call
	old.CallerKey = ""
	ap := approval.Approval{ID: approval.NewID(), Binding: old, ExpiresAt: Epoch.Add(ttl), Approver: "alice"}
	require.NoError(t, in.Store.Add(ctx, ap, Epoch, 10))
	apps, err := approval.New(approval.Options{Store: in.Store, TTL: ttl, Now: clock.Now, Record: log.Append})
	require.NoError(t, err)
	for _, caller := range []*abi.Principal{Caller, nil} {
		b := Call
		b.CallerKey = approval.CallerOf(caller)
		runID := "legacy-" + b.CallerKey
		conf, err := apps.Confirm(ctx, Present(runID, ap.ID, b, true))
		require.NoError(t, err)
		assert.Nil(t, conf)
		assert.Equal(t, approval.KindRefused, log.Of(runID)[0].Kind)
	}
	assert.Equal(t, approval.CodeCallerMismatch, log.Of("legacy-" + approval.CallerOf(Caller))[0].Reason)

	legacy := request()
	legacy.ID, legacy.State, legacy.Binding = approval.NewRequestID(), approval.StatePending, old
	legacy.CreatedAt, legacy.ExpiresAt = Epoch, Epoch.Add(ttl)
	_, created, err := in.Store.OpenRequest(ctx, legacy, Epoch, 10)
	require.NoError(t, err)
	require.True(t, created)
	a, _ := Desks(t, in, clock, log)
	r, created, err := a.Open(ctx, request())
	require.NoError(t, err)
	assert.True(t, created, "the caller's call does not meet a request that names no caller")
	assert.NotEqual(t, legacy.ID, r.ID)
	_, err = a.Decide(ctx, legacy.ID, Approver, true, "")
	require.Error(t, err, "a request that names no caller is approved for nobody")
	got, err := a.Get(ctx, legacy.ID)
	require.NoError(t, err)
	assert.Equal(t, approval.StatePending, got.State)
	assert.Empty(t, log.decisions(t, legacy.ID))
}
