package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/approval/approvaltest"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/store/postgres"
)

// TestApprovalStore: the approval rule on the fleet's store, with Open as
// another replica on the same database.
func TestApprovalStore(t *testing.T) {
	c := pgtest.Shared(t)
	approvaltest.Run(t, func(t *testing.T) approvaltest.Instance {
		dsn := c.NewDatabase(t)
		return approvaltest.Instance{
			Store: openReplica(t, dsn, "a", nil).Approvals(),
			Open:  func(t *testing.T) approval.Store { return openReplica(t, dsn, "b", nil).Approvals() },
		}
	})
}

func TestApprovalStoreUnavailable(t *testing.T) {
	db, _ := openDB(t, "a")
	db.Close()
	_, _, err := db.Approvals().Take(context.Background(), approval.NewID(), approvaltest.Epoch)
	require.ErrorIs(t, err, approval.ErrStore)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
}
