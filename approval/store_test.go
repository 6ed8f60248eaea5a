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
	ap, err := apps.Mint(ctx, approvaltest.Call, "alice", "", approval.Origin{})
	require.NoError(t, err)
	fail = true
	_, err = apps.Mint(ctx, approvaltest.Call, "alice", "", approval.Origin{})
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
