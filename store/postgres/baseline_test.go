package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
	"github.com/gatehost/gatehost/store/postgres"
)

func TestBaselineStore(t *testing.T) {
	c := pgtest.Shared(t)
	baselinetest.Run(t, func(t *testing.T) baselinetest.Instance {
		dsn := c.NewDatabase(t)
		db := openReplica(t, dsn, "a", nil)
		return baselinetest.Instance{
			Store: db.Baseline(),
			Open:  func(t *testing.T) baseline.Store { return openReplica(t, dsn, "b", nil).Baseline() },
			Tamper: func(t *testing.T, k baseline.Key, def json.RawMessage) {
				tag, err := db.Pool().Exec(context.Background(),
					"UPDATE gatehost_tool_baseline SET definition = $3 WHERE upstream = $1 AND tool = $2", k.Upstream, k.Tool, []byte(def))
				require.NoError(t, err)
				require.EqualValues(t, 1, tag.RowsAffected())
			},
		}
	})
}

func TestBaselineKeepsDefinitionBytes(t *testing.T) {
	db, _ := openDB(t, "a")
	ctx := context.Background()
	def := json.RawMessage("{ \"name\": \"t\",\n  \"description\": \"caf\u00e9 <b>\", \"n\": 1.50 }")
	e, err := baseline.NewEntry("up", "t", def, "alice", baselinetest.When)
	require.NoError(t, err)
	_, err = db.Baseline().Approve(ctx, []baseline.Entry{e})
	require.NoError(t, err)
	s, err := db.Baseline().Load(ctx)
	require.NoError(t, err)
	got, ok := s.Get(e.Key())
	require.True(t, ok)
	require.Equal(t, string(def), string(got.Definition), "the definition as listed, byte for byte")
}

func TestBaselineUnavailable(t *testing.T) {
	db, _ := openDB(t, "a")
	db.Close()
	_, err := db.Baseline().Load(context.Background())
	require.ErrorIs(t, err, baseline.ErrStore)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	_, err = db.Baseline().AddIfAbsent(context.Background(), []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.ErrorIs(t, err, baseline.ErrStore)
}
