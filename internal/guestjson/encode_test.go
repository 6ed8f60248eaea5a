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

// agreeSchemaValidateRequest checks EncodeSchemaValidateRequest against
// json.Marshal: both refuse, or both decode to the same request, the value
// decoded alike (numbers as written).
func agreeSchemaValidateRequest(t *testing.T, r abi.SchemaValidateRequest) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, gotErr := EncodeSchemaValidateRequest(r)
	require.Equal(t, wantErr != nil, gotErr != nil, "%v / %v", wantErr, gotErr)
	if wantErr != nil {
		require.Equal(t, wantErr.Error(), gotErr.Error())
		return
	}
	decode := func(b []byte) (abi.SchemaValidateRequest, any) {
		var req abi.SchemaValidateRequest
		require.NoError(t, json.Unmarshal(b, &req), "%s", b)
		v, err := DecodeValue(req.Value)
		require.NoError(t, err)
		req.Value = nil
		return req, v
	}
	wr, wv := decode(want)
	gr, gv := decode(got)
	require.Equal(t, wr, gr)
	require.Equal(t, wv, gv)
	agreeSchemaValidateManyRequest(t, abi.SchemaValidateManyRequest{Items: []abi.SchemaValidateRequest{r, plainItem, r}})
}

var plainItem = abi.SchemaValidateRequest{SchemaDigest: "d", Value: json.RawMessage(` {"x": [1.0]} `)}

// agreeSchemaValidateManyRequest checks EncodeSchemaValidateManyRequest
// against json.Marshal as agreeSchemaValidateRequest checks one item.
func agreeSchemaValidateManyRequest(t *testing.T, r abi.SchemaValidateManyRequest) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, gotErr := EncodeHostRequest(r)
	require.Equal(t, wantErr != nil, gotErr != nil, "%v / %v", wantErr, gotErr)
	if wantErr != nil {
		require.Equal(t, wantErr.Error(), gotErr.Error())
		return
	}
	decode := func(b []byte) (abi.SchemaValidateManyRequest, []any) {
		var req abi.SchemaValidateManyRequest
		require.NoError(t, json.Unmarshal(b, &req), "%s", b)
		var vs []any
		for i := range req.Items {
			v, err := DecodeValue(req.Items[i].Value)
			require.NoError(t, err)
			vs = append(vs, v)
			req.Items[i].Value = nil
		}
		return req, vs
	}
	wr, wv := decode(want)
	gr, gv := decode(got)
	require.Equal(t, wr, gr)
	require.Equal(t, wv, gv)
}

func TestEncodeSchemaValidateRequest(t *testing.T) {
	weird := "a\"b\\c\x00\x1f<>&\u2028 \xff \U0001F600"
	for _, r := range []abi.SchemaValidateRequest{
		{},
		{Tool: "mcp.github:create_issue", Value: json.RawMessage(`{"owner":"o","n":1.50,"tags":["<a>"]}`)},
		{SchemaDigest: "0123", Value: json.RawMessage(" \n[1, 2 ,\t{ \"a\" : null }]\r\n")},
		{Tool: weird, SchemaDigest: weird, Value: json.RawMessage(`"` + weird[3:] + `"`)},
		{Tool: "t", Value: json.RawMessage(`{"a":1} {"b":2}`)},
		{Tool: "t", Value: json.RawMessage(`{"a":1,"tool":"other"`)},
		{Tool: "t", Value: json.RawMessage(`1,"tool":"other"`)},
		{Tool: "t", Value: json.RawMessage(`   `)},
		{Tool: "t", Value: json.RawMessage(`nul`)},
	} {
		agreeSchemaValidateRequest(t, r)
	}
	agreeSchemaValidateManyRequest(t, abi.SchemaValidateManyRequest{})
	agreeSchemaValidateManyRequest(t, abi.SchemaValidateManyRequest{Items: []abi.SchemaValidateRequest{}})
}

func FuzzSchemaValidateRequest(f *testing.F) {
	f.Add("mcp.github:create_issue", "", []byte(`{"owner":"o","n":1.50}`))
	f.Add("", "abc", []byte(` [1, "x<y\u2028", {"a": null}] `))
	f.Add("t", "", []byte(`1,"tool":"other"`))
	f.Fuzz(func(t *testing.T, tool, digest string, value []byte) {
		agreeSchemaValidateRequest(t, abi.SchemaValidateRequest{Tool: tool, SchemaDigest: digest, Value: value})
	})
}

// agreeHostRequest checks EncodeHostRequest against json.Marshal for the
// requests it encodes byte for byte: the same bytes, or both an error.
func agreeHostRequest(t *testing.T, req any) {
	t.Helper()
	want, wantErr := json.Marshal(req)
	got, gotErr := EncodeHostRequest(req)
	require.Equal(t, wantErr != nil, gotErr != nil, "%v / %v", wantErr, gotErr)
	require.Equal(t, string(want), string(got))
}

func TestEncodeHostRequestAsMarshal(t *testing.T) {
	weird := "a\"b\\c\x00\x1f<>&\u2028 \xff \U0001F600"
	for _, req := range []any{
		abi.QueryCapabilityRequest{},
		abi.QueryCapabilityRequest{Domain: "retail", Name: weird},
		abi.QueryRowsRequest{Domain: "retail"},
		abi.QueryRowsRequest{Domain: "retail", View: "orders", Params: map[string]any{}},
		abi.QueryRowsRequest{Domain: weird, Capability: weird, Params: map[string]any{"id": "o1", "n": 2.5, "big": 1e21, "list": []any{nil, true, weird},
			"obj": map[string]any{weird: json.Number("1.50")}}},
		abi.QueryRowsRequest{Domain: "retail", View: "v", Params: map[string]any{"x": 1},
			Overlay: []abi.Effect{{ID: "o1", Collection: "orders", Set: map[string]any{"status": "paid"}}}},
		abi.QueryRowsRequest{Domain: "retail", Params: map[string]any{"nan": math.NaN()}},
		abi.QueryRowsRequest{Domain: "retail", Params: map[string]any{"ch": make(chan int)}},
		struct{ A int }{1},
	} {
		agreeHostRequest(t, req)
	}
}

func FuzzEncodeHostRequestAsMarshal(f *testing.F) {
	f.Add("retail", "orders", []byte(`{"id":"o1","n":[1,2.5e-9,"x<y"],"m":{"c":null}}`))
	f.Add("", "", []byte(`[1e300, -0, 12345678901234567890]`))
	f.Fuzz(func(t *testing.T, domain, name string, params []byte) {
		var v any
		if json.Unmarshal(params, &v) != nil {
			v = string(params)
		}
		agreeHostRequest(t, abi.QueryCapabilityRequest{Domain: domain, Name: name})
		agreeHostRequest(t, abi.QueryRowsRequest{Domain: domain, View: name, Params: map[string]any{name: v, domain: []any{v, name}}})
		agreeHostRequest(t, abi.QueryRowsRequest{Domain: domain, Capability: name, Params: map[string]any{"v": v}})
	})
}

// agreeAnswer checks EncodeAnswer against json.Marshal: the same bytes, or
// no answer where json.Marshal fails.
func agreeAnswer(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, ok := EncodeAnswer(v)
	if wantErr != nil {
		require.False(t, ok, "json.Marshal fails: %v", wantErr)
		return
	}
	require.True(t, ok, "%T", v)
	require.Equal(t, string(want), string(got))
}

func TestEncodeAnswerAsMarshal(t *testing.T) {
	weird := "a\"b\\c\x00\x1f<>&\u2028 \xff \U0001F600"
	finding := abi.SchemaFinding{Pointer: "/" + weird, Keyword: "type", Message: weird}
	for _, v := range []any{
		abi.QueryRowsAnswer{}, abi.QueryRowsAnswer{Rows: []map[string]any{}}, abi.QueryRowsAnswer{Rows: []map[string]any{nil, {}}},
		abi.QueryRowsAnswer{Rows: []map[string]any{{"id": "o1", "total": 12.5, "n": nil, "paid": true, weird: []any{1e21, 1e-7, -0.0, weird},
			"nested": map[string]any{"b": 1, "a": []string{"x", weird}}, "num": json.Number("1.50"), "i": 7, "u": uint64(9)}}},
		abi.QueryRowsAnswer{Rows: []map[string]any{{"nan": math.NaN()}}},
		abi.QueryRowsAnswer{Rows: []map[string]any{{"ch": make(chan int)}}},
		abi.SchemaValidateAnswer{}, abi.SchemaValidateAnswer{Found: true, SchemaDigest: weird, Valid: true},
		abi.SchemaValidateAnswer{Found: true, Findings: []abi.SchemaFinding{finding, {}}, Truncated: true},
		abi.SchemaValidateAnswer{Findings: []abi.SchemaFinding{}},
		abi.SchemaValidateManyAnswer{}, abi.SchemaValidateManyAnswer{Items: []abi.SchemaValidateAnswer{}},
		abi.SchemaValidateManyAnswer{Items: []abi.SchemaValidateAnswer{{Found: true, Valid: true}, {Findings: []abi.SchemaFinding{finding}}}},
	} {
		agreeAnswer(t, v)
	}
	_, ok := EncodeAnswer(abi.CatalogGetAnswer{})
	require.False(t, ok, "a type it does not encode")
}

func FuzzEncodeAnswerAsMarshal(f *testing.F) {
	f.Add([]byte(`[{"id":"o1","n":[1,2.5e-9,"x<y"],"m":{"c":null}},{}]`), "/a", "m<>", true)
	f.Add([]byte(`{"x":1e300,"y":-0,"z":12345678901234567890}`), "", "\u2028\xff", false)
	f.Fuzz(func(t *testing.T, data []byte, pointer, message string, flag bool) {
		var rows []map[string]any
		v, _ := DecodeAny(data)
		switch x := v.(type) {
		case map[string]any:
			rows = []map[string]any{x, nil}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					rows = append(rows, m)
				}
			}
		}
		agreeAnswer(t, abi.QueryRowsAnswer{Rows: rows})
		a := abi.SchemaValidateAnswer{Found: flag, SchemaDigest: message, Valid: !flag, Truncated: flag}
		if pointer != "" {
			a.Findings = []abi.SchemaFinding{{Pointer: pointer, Keyword: message, Message: pointer + message}}
		}
		agreeAnswer(t, a)
		agreeAnswer(t, abi.SchemaValidateManyAnswer{Items: []abi.SchemaValidateAnswer{a, {}, a}})
	})
}
