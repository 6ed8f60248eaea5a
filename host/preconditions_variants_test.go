package host_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

// variant is a rule-breaking write built from the tau2 data.
type variant struct {
	name   string
	domain string // retail, airline, or *_after (the data as an earlier write left it)
	tool   string
	params map[string]any
	want   []string // failed precondition ids, in declaration order
}

// pick returns the first n ids (sorted) of coll whose document satisfies ok.
func pick(coll map[string]any, n int, ok func(doc map[string]any) bool) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(coll)) {
		if len(out) == n {
			break
		}
		if ok(coll[id].(map[string]any)) {
			out = append(out, id)
		}
	}
	return out
}

func docString(doc map[string]any, k string) string { s, _ := doc[k].(string); return s }

// segmentStatus is the status of each flight of a reservation on its date.
func segmentStatus(flights map[string]any, res map[string]any) []string {
	var out []string
	for _, f := range res["flights"].([]any) {
		seg := f.(map[string]any)
		fl := flights[seg["flight_number"].(string)].(map[string]any)
		d, _ := fl["dates"].(map[string]any)[seg["date"].(string)].(map[string]any)
		out = append(out, docString(d, "status"))
	}
	return out
}

func flownAny(st []string) bool {
	return slices.Contains(st, "landed") || slices.Contains(st, "flying")
}

// TestPreconditionsTau2Variants builds rule-breaking writes from the real
// retail and airline data and requires each to be denied, natively and in
// wasm, with exactly the precondition ids the rule names.
func TestPreconditionsTau2Variants(t *testing.T) {
	retail, airline := retailCollections(t), airlineCollections(t)
	orders, users := retail["orders"], retail["users"]
	reservations, flights := airline["reservations"], airline["flights"]
	status := func(s string) func(map[string]any) bool {
		return func(d map[string]any) bool { return docString(d, "status") == s }
	}
	onePayment := func(d map[string]any) bool { return len(d["payment_history"].([]any)) == 1 }
	origPM := func(id string) string {
		return orders[id].(map[string]any)["payment_history"].([]any)[0].(map[string]any)["payment_method_id"].(string)
	}
	// A method in the customer's profile other than the original, of a
	// given source ("" for any but a gift card).
	otherPM := func(orderID string, giftCard bool) string {
		o := orders[orderID].(map[string]any)
		pms := users[docString(o, "user_id")].(map[string]any)["payment_methods"].(map[string]any)
		for _, id := range slices.Sorted(maps.Keys(pms)) {
			src := docString(pms[id].(map[string]any), "source")
			if id != origPM(orderID) && (src == "gift_card") == giftCard {
				return id
			}
		}
		return ""
	}
	delivered := pick(orders, 40, status("delivered"))
	pending := pick(orders, 40, func(d map[string]any) bool { return status("pending")(d) && onePayment(d) })
	processed := pick(orders, 3, status("processed"))
	cancelled := pick(orders, 2, status("cancelled"))
	// Orders an earlier write changed (copied data, see withStatus).
	itemModified, returnRequested, exchangeRequested := pending[10:12], delivered[10:12], delivered[12:14]
	retailAfter := withStatus(withStatus(withStatus(retail, "orders", "pending (item modified)", itemModified...),
		"orders", "return requested", returnRequested...), "orders", "exchange requested", exchangeRequested...)

	// Delivered orders whose customer has a non-gift-card method other than
	// the original one.
	var refundElsewhere []string
	for _, id := range delivered[20:] {
		if otherPM(id, false) != "" && len(refundElsewhere) < 3 {
			refundElsewhere = append(refundElsewhere, id)
		}
	}
	require.Len(t, refundElsewhere, 3)
	var payOther string
	for _, id := range pending[20:] {
		if otherPM(id, false) != "" {
			payOther = id
			break
		}
	}
	require.NotEmpty(t, payOther)

	addr := map[string]any{"address1": "1 Main St", "address2": "", "city": "Austin", "state": "TX", "country": "USA", "zip": "78701"}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	items := func(id string) []any {
		var out []any
		for _, it := range orders[id].(map[string]any)["items"].([]any)[:1] {
			out = append(out, it.(map[string]any)["item_id"])
		}
		return out
	}
	var vs []variant
	add := func(name, dom, tool string, params map[string]any, want ...string) {
		vs = append(vs, variant{name, dom, tool, params, want})
	}
	for _, id := range delivered[:3] {
		add("cancel a delivered order "+id, "retail", "cancel_pending_order", map[string]any{"order_id": id, "reason": "no longer needed"}, "order_is_pending")
	}
	for _, id := range processed[:2] {
		add("cancel a processed order "+id, "retail", "cancel_pending_order", map[string]any{"order_id": id, "reason": "ordered by mistake"}, "order_is_pending")
	}
	add("cancel a cancelled order", "retail", "cancel_pending_order", map[string]any{"order_id": cancelled[0], "reason": "no longer needed"}, "order_is_pending")
	add("cancel a pending order for a reason the policy refuses", "retail", "cancel_pending_order", map[string]any{"order_id": pending[0], "reason": "found it cheaper elsewhere"}, "cancel_reason_allowed")
	add("cancel a delivered order for a refused reason (both reported)", "retail", "cancel_pending_order", map[string]any{"order_id": delivered[3], "reason": "changed my mind"}, "order_is_pending", "cancel_reason_allowed")
	add("cancel an order already pending (item modified)", "retail_after", "cancel_pending_order", map[string]any{"order_id": itemModified[0], "reason": "no longer needed"}, "order_is_pending")
	for _, id := range itemModified {
		add("modify items of an order already pending (item modified) "+id, "retail_after", "modify_pending_order_items",
			map[string]any{"order_id": id, "item_ids": items(id), "new_item_ids": items(id), "payment_method_id": origPM(id)}, "order_is_pending_unmodified")
	}
	add("modify items of a delivered order", "retail", "modify_pending_order_items",
		map[string]any{"order_id": delivered[4], "item_ids": items(delivered[4]), "new_item_ids": items(delivered[4]), "payment_method_id": origPM(delivered[4])}, "order_is_pending_unmodified")
	add("change the address of a processed order", "retail", "modify_pending_order_address", with(addr, "order_id", processed[2]), "order_status_pending")
	add("change the address of a delivered order", "retail", "modify_pending_order_address", with(addr, "order_id", delivered[5]), "order_status_pending")
	add("change the payment of a pending order to its original method", "retail", "modify_pending_order_payment", map[string]any{"order_id": pending[1], "payment_method_id": origPM(pending[1])}, "payment_method_differs")
	add("change the payment of a delivered order", "retail", "modify_pending_order_payment", map[string]any{"order_id": refundElsewhere[0], "payment_method_id": otherPM(refundElsewhere[0], false)}, "order_status_pending")
	for _, id := range pending[2:4] {
		add("return a pending order "+id, "retail", "return_delivered_order_items", map[string]any{"order_id": id, "item_ids": items(id), "payment_method_id": origPM(id)}, "order_is_delivered")
	}
	add("return a processed order", "retail", "return_delivered_order_items", map[string]any{"order_id": processed[0], "item_ids": items(processed[0]), "payment_method_id": origPM(processed[0])}, "order_is_delivered")
	for _, id := range refundElsewhere {
		add("refund a return to a card that is not the original method "+id, "retail", "return_delivered_order_items",
			map[string]any{"order_id": id, "item_ids": items(id), "payment_method_id": otherPM(id, false)}, "refund_to_original_or_gift_card")
	}
	add("refund a return to a method the customer does not have", "retail", "return_delivered_order_items",
		map[string]any{"order_id": delivered[6], "item_ids": items(delivered[6]), "payment_method_id": "credit_card_0000000"}, "unevaluable:refund_to_original_or_gift_card")
	add("return an order already return requested", "retail_after", "return_delivered_order_items",
		map[string]any{"order_id": returnRequested[0], "item_ids": items(returnRequested[0]), "payment_method_id": origPM(returnRequested[0])}, "order_is_delivered")
	for _, id := range pending[4:6] {
		add("exchange a pending order "+id, "retail", "exchange_delivered_order_items", map[string]any{"order_id": id, "item_ids": items(id), "new_item_ids": items(id), "payment_method_id": origPM(id)}, "order_is_delivered")
	}
	add("exchange an order already exchange requested", "retail_after", "exchange_delivered_order_items",
		map[string]any{"order_id": exchangeRequested[0], "item_ids": items(exchangeRequested[0]), "new_item_ids": items(exchangeRequested[0]), "payment_method_id": origPM(exchangeRequested[0])}, "order_is_delivered")
	add("change the address of an unknown customer", "retail", "modify_user_address", with(addr, "user_id", "nobody_0000"), "user_exists")

	// Airline.
	notFlown := func(d map[string]any) bool { return !flownAny(segmentStatus(flights, d)) }
	basic := pick(reservations, 3, func(d map[string]any) bool { return docString(d, "cabin") == "basic_economy" && notFlown(d) })
	for _, id := range basic {
		r := reservations[id].(map[string]any)
		seg := r["flights"].([]any)[0].(map[string]any)
		add("change the flights of a basic economy reservation "+id, "airline", "update_reservation_flights",
			map[string]any{"reservation_id": id, "cabin": "basic_economy", "payment_id": "credit_card_1",
				"flights": []any{map[string]any{"flight_number": "HAT999", "date": seg["date"]}}}, "basic_economy_flights_unchanged")
	}
	bags := pick(reservations, 3, func(d map[string]any) bool { return d["total_baggages"].(float64) >= 1 })
	for _, id := range bags {
		r := reservations[id].(map[string]any)
		add("remove a checked bag "+id, "airline", "update_reservation_baggages",
			map[string]any{"reservation_id": id, "total_baggages": r["total_baggages"].(float64) - 1, "nonfree_baggages": 0, "payment_id": "credit_card_1"}, "bags_not_removed")
	}
	for _, id := range pick(reservations, 2, func(map[string]any) bool { return true }) {
		ps := reservations[id].(map[string]any)["passengers"].([]any)
		add("add a passenger "+id, "airline", "update_reservation_passengers",
			map[string]any{"reservation_id": id, "passengers": append(slices.Clone(ps), map[string]any{"first_name": "A", "last_name": "B", "dob": "1990-01-01"})}, "passenger_count_unchanged")
	}
	ineligible := pick(reservations, 3, func(d map[string]any) bool {
		st := segmentStatus(flights, d)
		return docString(d, "cabin") != "business" && docString(d, "insurance") == "no" && !flownAny(st) && !slices.Contains(st, "cancelled") &&
			docString(d, "created_at") < "2024-05-14T15:00:00"
	})
	for _, id := range ineligible {
		add("cancel an uninsured economy booking older than 24 hours "+id, "airline", "cancel_reservation", map[string]any{"reservation_id": id}, "cancellation_eligible")
	}
	flownBiz := pick(reservations, 2, func(d map[string]any) bool {
		return docString(d, "cabin") == "business" && flownAny(segmentStatus(flights, d))
	})
	for _, id := range flownBiz {
		add("cancel a reservation with a flight already flown "+id, "airline", "cancel_reservation", map[string]any{"reservation_id": id}, "no_segment_flown")
	}
	r0 := reservations[flownBiz[0]].(map[string]any)
	add("change the cabin after a flight was flown", "airline", "update_reservation_flights",
		map[string]any{"reservation_id": flownBiz[0], "cabin": "economy", "flights": r0["flights"], "payment_id": "credit_card_1"}, "no_cabin_change_after_flown")
	bizOK := pick(reservations, 1, func(d map[string]any) bool { return docString(d, "cabin") == "business" && notFlown(d) })
	airlineAfter := withStatus(airline, "reservations", "cancelled", bizOK...)
	add("cancel a reservation already cancelled", "airline_after", "cancel_reservation", map[string]any{"reservation_id": bizOK[0]}, "not_already_cancelled")
	user := slices.Sorted(maps.Keys(airline["users"]))[0]
	six := []any{}
	for i := range 6 {
		six = append(six, map[string]any{"first_name": fmt.Sprint("P", i), "last_name": "X", "dob": "1990-01-01"})
	}
	booking := map[string]any{"user_id": user, "origin": "JFK", "destination": "LAX", "flight_type": "one_way", "cabin": "economy",
		"flights": []any{map[string]any{"flight_number": "HAT001", "date": "2024-05-20"}}, "passengers": six,
		"payment_methods": []any{}, "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
	add("book six passengers", "airline", "book_reservation", booking, "at_most_five_passengers")
	add("book for a user who does not exist", "airline", "book_reservation", with(booking, "user_id", "nobody_0000", "passengers", six[:2]), "user_exists")

	rig := newPCRig(t, airlineNow, map[string]host.Domain{
		"retail":        {Catalog: loadCatalog(t, "testdata/domains/retail/domain.yaml"), Source: docs(retail)},
		"retail_after":  {Catalog: loadCatalog(t, "testdata/domains/retail/domain.yaml"), Source: docs(retailAfter)},
		"airline":       {Catalog: loadCatalog(t, "testdata/domains/airline/domain.yaml"), Source: docs(airline)},
		"airline_after": {Catalog: loadCatalog(t, "testdata/domains/airline/domain.yaml"), Source: docs(airlineAfter)},
	})
	denied := 0
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			r := rig.check(t, v.domain, abi.SubjectToolCall, toolCall(t, v.tool, v.params))
			assert.Equal(t, abi.Rejected, r.Verdict)
			if assert.Equal(t, v.want, r.failedIDs()) {
				denied++
			}
			for _, f := range r.Findings {
				assert.Equal(t, "execute", f.Details["mode"])
				assert.Equal(t, v.tool, f.Details["capability"])
				assert.NotEmpty(t, f.Message)
			}
		})
	}
	t.Logf("%d rule-breaking variants, %d denied with the expected precondition ids", len(vs), denied)
	assert.GreaterOrEqual(t, len(vs), 30)
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.want...)
	}
	slices.Sort(ids)
	t.Logf("precondition ids exercised: %s", strings.Join(slices.Compact(ids), ", "))
}
