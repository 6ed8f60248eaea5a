package datasource_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
)

const domainsDir = "../../testdata/domains"

func airline(t testing.TB) *datasource.Documents {
	t.Helper()
	d, err := datasource.OpenCollections(map[string]string{
		"flights":      filepath.Join(domainsDir, "airline/flights.json"),
		"reservations": filepath.Join(domainsDir, "airline/reservations.json"),
		"users":        filepath.Join(domainsDir, "airline/users.json"),
	})
	require.NoError(t, err)
	return d
}

func retail(t testing.TB) *datasource.Documents {
	t.Helper()
	d, err := datasource.OpenDocuments(filepath.Join(domainsDir, "retail/db.json"))
	require.NoError(t, err)
	return d
}

// TestLookupOverArrayOfIDs: a user's reservations are an array of ids;
// {item} is each id, so a lookup reads every reservation's cabin, and,
// under an overlay that cancels one, its status.
func TestLookupOverArrayOfIDs(t *testing.T) {
	d := airline(t)
	v := &datasource.View{Name: "user_reservations", Params: []string{"user_id"}, Document: &datasource.DocumentView{
		Collection: "users", ID: "{user_id}", Fields: map[string]string{"name": "name.first_name"},
		Lookups: map[string]datasource.Lookup{
			"cabins":   {ForEach: "reservations", Collection: "reservations", ID: "{item}", Path: "cabin"},
			"statuses": {ForEach: "reservations", Collection: "reservations", ID: "{item}", Path: "status"},
		}}}
	require.NoError(t, d.Prepare(context.Background(), v))
	params := map[string]any{"user_id": "mia_li_3668"}
	rows, err := d.Rows(context.Background(), v, params)
	require.NoError(t, err)
	assert.Equal(t, []datasource.Row{{"name": "Mia", "cabins": []any{"business", "basic_economy", "business"}, "statuses": []any{}}}, rows)

	o, err := d.WithOverlay(context.Background(), []abi.Effect{{Collection: "reservations", ID: "AIXC49", Set: map[string]any{"status": "cancelled"}}})
	require.NoError(t, err)
	rows, err = o.Rows(context.Background(), v, params)
	require.NoError(t, err)
	assert.Equal(t, []any{"cancelled"}, rows[0]["statuses"])
}

// BenchmarkApplyRetail: an overlay of five effects (a cancelled order, a
// refund appended to its payment history, an exchanged item, a new
// address, a created document) over the 1,000-order retail database, then
// the order_state read of the cancelled order; native is the same read
// without an overlay.
func BenchmarkApplyRetail(b *testing.B) {
	ctx := context.Background()
	d := retail(b)
	v := &datasource.View{Name: "order_state", Params: []string{"order_id"}, Document: &datasource.DocumentView{
		Collection: "orders", ID: "{order_id}",
		Fields: map[string]string{"order_id": "order_id", "status": "status", "user_id": "user_id",
			"original_payment_method_id": "payment_history.0.payment_method_id", "payment_count": "payment_history.#"}}}
	params := map[string]any{"order_id": "#W1006327"}
	effects := []abi.Effect{
		{Collection: "orders", ID: "#W1006327", Set: map[string]any{"status": "cancelled", "cancel_reason": "no longer needed"}},
		{Collection: "orders", ID: "#W1006327", Set: map[string]any{"payment_history.1": map[string]any{
			"transaction_type": "refund", "amount": 2577.53, "payment_method_id": "credit_card_4998749"}}},
		{Collection: "orders", ID: "#W1013897", Set: map[string]any{"status": "exchange requested", "items.0.item_id": "1111111111"}},
		{Collection: "users", ID: "aarav_anderson_8794", Set: map[string]any{"address.city": "Denver", "address.zip": "80202"}},
		{Collection: "orders", ID: "#W0000000", Set: map[string]any{"order_id": "#W0000000", "status": "pending"}},
	}
	b.Run("native", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Rows(ctx, v, params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apply-5", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Apply(effects); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apply-5-rows", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			o, err := d.WithOverlay(ctx, effects)
			if err != nil {
				b.Fatal(err)
			}
			rows, err := o.Rows(ctx, v, params)
			if err != nil || rows[0]["status"] != "cancelled" {
				b.Fatal(err, rows)
			}
		}
	})
}
