package approval_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/host/eventlog"
)

func TestMemoryStore(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approvaltest.Instance {
		st := approval.NewMemory()
		return approvaltest.Instance{Store: st, Open: func(*testing.T) approval.Store { return st }}
	})
}

func TestFileStore(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approvaltest.Instance {
		path := filepath.Join(t.TempDir(), "approvals.json")
		open := func(t *testing.T) approval.Store {
			f, err := approval.OpenFile(path)
			require.NoError(t, err)
			return f
		}
		return approvaltest.Instance{Store: open(t), Open: open}
	})
}

// TestFileStoreFailsClosed: a file that is not an approvals file, or
// too large, fails every operation; a missing directory fails the open.
func TestFileStoreFailsClosed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := approval.OpenFile(filepath.Join(dir, "missing", "approvals.json"))
	require.ErrorIs(t, err, approval.ErrStore)

	for name, content := range map[string][]byte{
		"not JSON":      []byte("{"),
		"other version": []byte(`{"version": 2, "approvals": []}`),
		"unknown field": []byte(`{"version": 1, "approvals": [], "x": 1}`),
		"bad entry":     []byte(`{"version": 1, "approvals": [{"approval_id": "nope"}]}`),
		"too large":     make([]byte, approval.MaxFileBytes+1),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "approvals.json")
			f, err := approval.OpenFile(path)
			require.NoError(t, err, "a missing file is an empty store")
			require.NoError(t, os.WriteFile(path, content, 0o600))
			_, err = approval.OpenFile(path)
			require.ErrorIs(t, err, approval.ErrStore)
			a := approval.Approval{ID: approval.NewID(), Binding: approvaltest.Call, ExpiresAt: approvaltest.Epoch.Add(time.Hour)}
			require.ErrorIs(t, f.Add(ctx, a, approvaltest.Epoch, 10), approval.ErrStore)
			_, _, err = f.Take(ctx, a.ID, approvaltest.Epoch)
			require.ErrorIs(t, err, approval.ErrStore)
			// The Approvals: the run does not happen.
			apps, err := approval.New(approval.Options{Store: f})
			require.NoError(t, err)
			_, err = apps.Confirm(ctx, approvaltest.Present("r", a.ID, approvaltest.Call, true))
			require.ErrorIs(t, err, approval.ErrStore)
		})
	}
}

// TestMintNotRecorded: an approval whose minting the log refuses is not
// issued, and is burned; a presentation whose record fails confirms no
// run.
func TestMintNotRecorded(t *testing.T) {
	ctx := context.Background()
	st := approval.NewMemory()
	fail := false
	log := &approvaltest.Log{}
	apps, err := approval.New(approval.Options{Store: st, Record: func(r eventlog.Record) error {
		if fail {
			return errors.New("disk full")
		}
		return log.Append(r)
	}})
	require.NoError(t, err)
	ap, err := apps.Mint(ctx, approvaltest.Call, "", approval.Origin{})
	require.NoError(t, err)
	fail = true
	_, err = apps.Mint(ctx, approvaltest.Call, "", approval.Origin{})
	require.ErrorIs(t, err, approval.ErrNotRecorded)
	_, err = apps.Confirm(ctx, approvaltest.Present("r1", ap.ID, approvaltest.Call, true))
	require.ErrorIs(t, err, approval.ErrNotRecorded)
	fail = false
	conf, err := apps.Confirm(ctx, approvaltest.Present("r2", ap.ID, approvaltest.Call, true))
	require.NoError(t, err)
	assert.Nil(t, conf, "the presentation whose record failed took it")
	assert.Equal(t, approval.CodeUsed, log.Of("r2")[0].Reason)
}

func TestCheckTTL(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{time.Second, true}, {24 * time.Hour, true}, {5 * time.Minute, true}, {999 * time.Millisecond, false}, {24*time.Hour + 1, false}, {0, false}} {
		assert.Equal(t, c.ok, approval.CheckTTL(c.d) == nil, "%s", c.d)
	}
}

// TestDecideNotRecorded: a decision the log refuses does not take effect:
// the request is pending again, no approval exists, and the approver is
// told; once the log takes records the request can be decided.
func TestDecideNotRecorded(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approve", false: "deny"}[approve], func(t *testing.T) {
			ctx := context.Background()
			st := approval.NewMemory()
			fail := true
			log := &approvaltest.Log{}
			clock := &approvaltest.Clock{}
			clock.Set(approvaltest.Epoch)
			apps, err := approval.New(approval.Options{Store: st, Now: clock.Now, Record: func(r eventlog.Record) error {
				if fail {
					return errors.New("disk full")
				}
				return log.Append(r)
			}})
			require.NoError(t, err)
			d, err := approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: approvaltest.Rule})
			require.NoError(t, err)
			r, _, err := d.Open(ctx, approval.Request{Binding: approvaltest.Call, Caller: approvaltest.Caller, Arguments: []byte(`{}`)})
			require.NoError(t, err)
			_, err = d.Decide(ctx, r.ID, approvaltest.Approver, approve, "")
			require.ErrorIs(t, err, approval.ErrNotRecorded)
			got, err := d.Get(ctx, r.ID)
			require.NoError(t, err)
			assert.Equal(t, approval.StatePending, got.State, "undone")
			assert.Empty(t, got.ApprovalID)
			assert.Equal(t, r.ExpiresAt, got.ExpiresAt)

			fail = false
			got, err = d.Decide(ctx, r.ID, approvaltest.Approver, approve, "")
			require.NoError(t, err)
			if approve {
				conf, err := apps.Confirm(ctx, approvaltest.Present("run", got.ApprovalID, approvaltest.Call, true))
				require.NoError(t, err)
				assert.NotNil(t, conf)
			}
		})
	}
}

// TestDecideSignedOut: an approver whose credential the rule no longer
// accepts decides nothing, and what is stored and recorded of an approver
// never holds the credential's fingerprint.
func TestDecideSignedOut(t *testing.T) {
	ctx := context.Background()
	log := &approvaltest.Log{}
	apps, err := approval.New(approval.Options{Record: log.Append})
	require.NoError(t, err)
	valid := "fp-1"
	rule := approvaltest.Rule
	rule.SignedIn = func(p *abi.Principal) bool { return p.Claims[approval.ClaimCredential] == valid }
	d, err := approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: rule})
	require.NoError(t, err)
	r, _, err := d.Open(ctx, approval.Request{Binding: approvaltest.Call, Caller: approvaltest.Caller, Arguments: []byte(`{}`)})
	require.NoError(t, err)
	by := *approvaltest.Approver
	by.Claims = map[string]any{"groups": []any{"approvers"}, approval.ClaimCredential: "fp-1"}
	valid = "fp-2" // the credential was replaced
	_, err = d.Decide(ctx, r.ID, &by, true, "")
	require.ErrorIs(t, err, approval.ErrNotApprover)
	require.ErrorIs(t, d.Rule().MayApprove(&by), approval.ErrNotApprover, "every page request asks the rule")

	valid = "fp-1"
	got, err := d.Decide(ctx, r.ID, &by, true, "")
	require.NoError(t, err)
	assert.NotContains(t, got.DecidedBy.Claims, approval.ClaimCredential)
	assert.Equal(t, "approvers", got.DecidedBy.Claims["groups"].([]any)[0])
	assert.NotContains(t, string(log.All()[0].Data), approval.ClaimCredential)
}

// gatedAdd is a store whose Add waits for release: the moment between an
// approval's decision and its approval being stored, held open.
type gatedAdd struct {
	approval.Store
	adding, release chan struct{}
}

func (g gatedAdd) Add(ctx context.Context, a approval.Approval, now time.Time, max int) error {
	close(g.adding)
	<-g.release
	return g.Store.Add(ctx, a, now, max)
}

// approvedNotStored opens a request and has it approved on a store that
// holds the approval's Add until release is closed; it returns once the
// request is approved and its approval is being stored. decided gets the
// decision's error.
func approvedNotStored(t *testing.T) (d *approval.Desk, apps *approval.Approvals, r approval.Request, release chan struct{}, decided chan error) {
	t.Helper()
	ctx := context.Background()
	st := gatedAdd{Store: approval.NewMemory(), adding: make(chan struct{}), release: make(chan struct{})}
	apps, err := approval.New(approval.Options{Store: st})
	require.NoError(t, err)
	d, err = approval.NewDesk(approval.DeskOptions{Approvals: apps, Rule: approvaltest.Rule, Poll: time.Millisecond})
	require.NoError(t, err)
	r, _, err = d.Open(ctx, approval.Request{Binding: approvaltest.Call, Caller: approvaltest.Caller, Arguments: []byte(`{}`)})
	require.NoError(t, err)
	decided = make(chan error, 1)
	go func() {
		_, err := d.Decide(ctx, r.ID, approvaltest.Approver, true, "")
		decided <- err
	}()
	<-st.adding
	return d, apps, r, st.release, decided
}

// TestApprovedNotReadyUntilStored: between a decision and its approval
// being stored the request is approved but not ready: a front end cannot
// claim it (ErrNotReady) and one waiting keeps waiting, so the approval
// is never presented before it exists (refused, and spent). Once stored,
// the waiter returns, the claim succeeds and the approval confirms.
func TestApprovedNotReadyUntilStored(t *testing.T) {
	ctx := context.Background()
	d, apps, r, release, decided := approvedNotStored(t)
	got, err := d.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, approval.StateApproved, got.State)
	assert.False(t, got.Ready)
	_, err = d.Use(ctx, r.ID)
	require.ErrorIs(t, err, approval.ErrNotReady)
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = d.Wait(wctx, r.ID) // polls every millisecond meanwhile
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a waiter does not return an approval not yet stored")

	close(release)
	require.NoError(t, <-decided)
	got, err = d.Wait(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, got.Ready)
	used, err := d.Use(ctx, r.ID)
	require.NoError(t, err)
	conf, err := apps.Confirm(ctx, approvaltest.Present("run", used.ApprovalID, approvaltest.Call, true))
	require.NoError(t, err)
	assert.NotNil(t, conf, "the approval claimed confirms the call")
}

// TestUseReadyWaitsForTheApproval: a front end claiming an approval that
// is decided but not yet stored waits for it (UseReady) rather than
// refusing the call a second time; once stored, the claim succeeds and the
// approval confirms. A wait that ends first is ErrNotReady, as Use's.
func TestUseReadyWaitsForTheApproval(t *testing.T) {
	ctx := context.Background()
	d, apps, r, release, decided := approvedNotStored(t)

	// A wait that ends while the approval is being stored.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := d.UseReady(short, r.ID)
	cancel()
	require.ErrorIs(t, err, approval.ErrNotReady)

	type claim struct {
		r   approval.Request
		err error
	}
	claimed := make(chan claim, 1)
	go func() {
		r, err := d.UseReady(ctx, r.ID)
		claimed <- claim{r, err}
	}()
	select {
	case c := <-claimed:
		t.Fatalf("claimed before the approval was stored: %+v, %v", c.r, c.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-decided)
	c := <-claimed
	require.NoError(t, c.err)
	assert.Equal(t, approval.StateUsed, c.r.State)
	conf, err := apps.Confirm(ctx, approvaltest.Present("run", c.r.ApprovalID, approvaltest.Call, true))
	require.NoError(t, err)
	assert.NotNil(t, conf, "the approval claimed confirms the call")
}
