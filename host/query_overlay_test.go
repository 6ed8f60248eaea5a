package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// countingSource counts the overlays it is asked for.
type countingSource struct {
	*datasource.Documents
	overlays atomic.Int64
}

func (c *countingSource) WithOverlay(ctx context.Context, effects []abi.Effect) (datasource.DataSource, error) {
	c.overlays.Add(1)
	return c.Documents.WithOverlay(ctx, effects)
}

// plainSource hides every method but DataSource's: a source that cannot
// apply an overlay.
type plainSource struct{ datasource.DataSource }

// queryRows sends req as query.rows and returns the rows or the refusal.
func queryRows(t *testing.T, nh *host.NativeQueryHost, req abi.QueryRowsRequest) ([]map[string]any, *abi.CallError) {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	env, err := nh.CallEnvelope(abi.OpQueryRows, b)
	require.NoError(t, err)
	var ans abi.CallAnswer
	require.NoError(t, json.Unmarshal(env, &ans))
	if ans.Error != nil {
		return nil, ans.Error
	}
	var rows abi.QueryRowsAnswer
	require.NoError(t, json.Unmarshal(ans.Result, &rows))
	return rows.Rows, nil
}

// TestQueryRowsOverlay: query.rows answers as if the request's overlay had
// been applied, the source unchanged for the next request; a request
// without an overlay reads the source itself. A malformed overlay is the
// request's fault (bad_request); one the source cannot apply answers
// unavailable.
func TestQueryRowsOverlay(t *testing.T) {
	cat := hosttest.LoadCatalog(t, "testdata/domains/retail/domain.yaml")
	src := &countingSource{Documents: datasource.NewDocuments(hosttest.RetailCollections(t))}
	nh := host.NewNativeQueryHost(map[string]host.Domain{
		"retail":       {Catalog: cat, Source: src},
		"retail_plain": {Catalog: cat, Source: plainSource{datasource.NewDocuments(hosttest.RetailCollections(t))}},
	})
	order := map[string]any{"order_id": "#W1006327"}
	cancel := abi.Effect{Collection: "orders", ID: "#W1006327", Set: map[string]any{"status": "cancelled"}}
	refund := abi.Effect{Collection: "orders", ID: "#W1006327", Set: map[string]any{
		"payment_history.1": map[string]any{"transaction_type": "refund", "amount": 2577.53, "payment_method_id": "credit_card_4998749"}}}
	many := make([]abi.Effect, abi.MaxOverlayEffects+1)
	for i := range many {
		many[i] = cancel
	}
	type want struct {
		status string
		count  float64
	}
	cases := []struct {
		name     string
		req      abi.QueryRowsRequest
		want     *want
		code     string
		msg      string
		overlays int64 // WithOverlay calls the request makes
	}{
		{name: "no overlay reads the source", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order},
			want: &want{"pending", 1}},
		{name: "overlay applied, in order", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{refund, cancel}}, want: &want{"cancelled", 2}, overlays: 1},
		{name: "through a capability's view", req: abi.QueryRowsRequest{Domain: "retail", Capability: "get_order_details", Params: order,
			Overlay: []abi.Effect{cancel}}, want: &want{"cancelled", 1}, overlays: 1},
		{name: "the source is unchanged", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order},
			want: &want{"pending", 1}},
		{name: "at most MaxOverlayEffects", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: many[:abi.MaxOverlayEffects]}, want: &want{"cancelled", 1}, overlays: 1},

		{name: "too many effects", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order, Overlay: many},
			code: abi.ErrCodeBadRequest, msg: "query.rows: overlay: 257 effects (at most 256)"},
		{name: "empty collection", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{cancel, {ID: "x", Set: map[string]any{"a": 1}}}},
			code: abi.ErrCodeBadRequest, msg: "query.rows: overlay: effect 1: malformed effect: collection is empty"},
		{name: "empty id", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "orders", Set: map[string]any{"a": 1}}}}, code: abi.ErrCodeBadRequest, msg: "id is empty"},
		{name: "no set", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "orders", ID: "#W1006327"}}}, code: abi.ErrCodeBadRequest, msg: "set is empty"},
		{name: "path over 32 segments", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "orders", ID: "#W1006327", Set: map[string]any{strings.Repeat("a.", 40) + "a": 1}}}},
			code: abi.ErrCodeBadRequest, msg: "41 segments (at most 32)"},
		{name: "malformed on a source without overlays is still bad_request", req: abi.QueryRowsRequest{Domain: "retail_plain", View: "order_state",
			Params: order, Overlay: []abi.Effect{{Collection: "orders", ID: "#W1006327"}}}, code: abi.ErrCodeBadRequest, msg: "set is empty"},
		{name: "source cannot apply an overlay", req: abi.QueryRowsRequest{Domain: "retail_plain", View: "order_state", Params: order,
			Overlay: []abi.Effect{cancel}}, code: abi.ErrCodeUnavailable, msg: "query.rows: data source cannot apply an overlay"},
		{name: "unknown collection", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "carts", ID: "c", Set: map[string]any{"a": 1}}}},
			code: abi.ErrCodeUnavailable, msg: `query.rows: overlay: effect 0 (carts "c"): effect cannot be applied: unknown collection "carts"`, overlays: 1},
		{name: "index past the end", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "orders", ID: "#W1006327", Set: map[string]any{"payment_history.5.amount": 1}}}},
			code: abi.ErrCodeUnavailable, msg: "index 5 is past the end of payment_history (1 elements)", overlays: 1},
		{name: "through a scalar", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state", Params: order,
			Overlay: []abi.Effect{{Collection: "orders", ID: "#W1006327", Set: map[string]any{"status.x": 1}}}},
			code: abi.ErrCodeUnavailable, msg: "status is a string", overlays: 1},
		{name: "unbound parameter stays bad_request under an overlay", req: abi.QueryRowsRequest{Domain: "retail", View: "order_state",
			Params: map[string]any{}, Overlay: []abi.Effect{cancel}}, code: abi.ErrCodeBadRequest, msg: "unbound parameter", overlays: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := src.overlays.Load()
			rows, cerr := queryRows(t, nh, c.req)
			assert.Equal(t, c.overlays, src.overlays.Load()-before, "WithOverlay calls")
			if c.code != "" {
				require.NotNil(t, cerr, "rows %v", rows)
				assert.Equal(t, c.code, cerr.Code)
				assert.Contains(t, cerr.Message, c.msg)
				return
			}
			require.Nil(t, cerr)
			require.Len(t, rows, 1)
			assert.Equal(t, c.want.status, rows[0]["status"])
			assert.Equal(t, c.want.count, rows[0]["payment_count"])
		})
	}
}

// TestQueryRowsOverlaySQL: the SQL source cannot apply an overlay.
func TestQueryRowsOverlaySQL(t *testing.T) {
	_, ok := any((*sqlsource.SQL)(nil)).(datasource.Overlayer)
	assert.False(t, ok)
	_, ok = any((*datasource.Documents)(nil)).(datasource.Overlayer)
	assert.True(t, ok)
}
