package guestjson

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// agreeEncode checks EncodeResponse against json.Marshal: the same bytes,
// or both an error.
func agreeEncode(t *testing.T, r abi.Response) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, gotErr := EncodeResponse(r)
	require.Equal(t, wantErr != nil, gotErr != nil, "%v / %v", wantErr, gotErr)
	require.Equal(t, string(want), string(got))
}

type other struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

func TestEncodeResponseAsMarshal(t *testing.T) {
	weird := "a\"b\\c\x00\x1f\b\f\n\r\t<>&\x7f é \u2028\u2029 \xff\xfe \U0001F600"
	for _, r := range []abi.Response{
		{},
		{Verdict: abi.Accepted, Basis: "policy_permit", Evidence: map[string]any{"principal": `Caller::""`, "policies": []string{"a", weird},
			"catalog_generation": uint64(math.MaxUint64), "n": -7, "i64": int64(math.MinInt64), "ok": true, "none": nil}},
		{Verdict: abi.Rejected, Findings: []abi.Finding{{Code: "policy_forbid", Severity: abi.Blocking, Tier: abi.DecisionProcedure, Message: weird,
			Details: map[string]any{"policy": "p", "where": "f:1:2"}}, {Code: "x", Severity: abi.Advisory, ActionIndex: abi.Index(3), ActionID: "a1",
			Path: "/x", Keyword: "type", Suggestion: weird}}, Evidence: map[string]any{}},
		{Verdict: abi.Inconclusive, Reason: "r", Findings: []abi.Finding{}, Evidence: map[string]any{
			"floats": []any{0.0, math.Copysign(0, -1), 1.5, 1e-7, 1e21, 1e20, 123456789.125, 5e-324, math.MaxFloat64, -2.5e-10, float64(1 << 53)},
			"nested": map[string]any{"z": []any{map[string]any{"k": nil}, []any{}, []string{}, []any(nil), []string(nil)}, "a": map[string]any(nil),
				weird: weird}, "struct": other{A: 1}, "ptr": abi.Index(9), "num": json.Number("1.50"), "raw": json.RawMessage(`{ "a" : 1 }`),
			"ints": []int{1, 2}, "f32": float32(0.1), "u8": uint8(7)}},
		{Verdict: abi.Inconclusive, Evidence: map[string]any{"nan": math.NaN()}},
		{Verdict: abi.Inconclusive, Evidence: map[string]any{"inf": []any{math.Inf(1)}}},
		{Verdict: abi.Inconclusive, Evidence: map[string]any{"bad": json.Number("x")}},
		{Verdict: abi.Inconclusive, Evidence: map[string]any{"ch": make(chan int)}},
	} {
		agreeEncode(t, r)
	}
}

func FuzzEncodeResponseAsMarshal(f *testing.F) {
	f.Add([]byte(`{"a":[1,2.5e-9,"x<y"],"b":{"c":null,"d":true}}`), "policy_permit", "msg\u2028\xff")
	f.Add([]byte(`[1e300, -0, 12345678901234567890]`), "", "")
	f.Fuzz(func(t *testing.T, evidence []byte, basis, message string) {
		var v any
		if json.Unmarshal(evidence, &v) != nil {
			v = string(evidence)
		}
		agreeEncode(t, abi.Response{Verdict: abi.Verdict(basis), Basis: basis, Reason: message,
			Findings: []abi.Finding{{Code: basis, Message: message, Details: map[string]any{message: v}}},
			Evidence: map[string]any{"v": v, basis: message, string(evidence): []string{message}}})
	})
}
