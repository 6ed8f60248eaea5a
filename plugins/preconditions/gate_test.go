package preconditions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/preconditions"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// fakeHost answers query.capability with one capability (raw JSON, so tests
// can send what a valid catalog never would) and query.rows with fixed rows
// per view.
type fakeHost struct {
	capability string            // JSON of the DomainCapability for tool "w"
	rows       map[string]string // view → JSON array of rows, or "!error text"
	calls      []string
}

func (h *fakeHost) Log(sdk.Level, string) {}

func (h *fakeHost) Call(op string, req []byte) ([]byte, error) {
	h.calls = append(h.calls, op)
	switch op {
	case abi.OpQueryCapability:
		var r abi.QueryCapabilityRequest
		_ = json.Unmarshal(req, &r)
		if r.Name != "w" {
			return []byte(`{"found":false}`), nil
		}
		return []byte(`{"found":true,"capability":` + h.capability + `}`), nil
	case abi.OpQueryRows:
		var r abi.QueryRowsRequest
		_ = json.Unmarshal(req, &r)
		rows, ok := h.rows[r.View+r.Capability]
		if !ok {
			return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "no view " + r.View}
		}
		if msg, isErr := strings.CutPrefix(rows, "!"); isErr {
			return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: msg}
		}
		return []byte(`{"rows":` + rows + `}`), nil
	}
	return nil, &abi.CallError{Code: abi.ErrCodeUnknownOperation, Message: op}
}

// capWith is a write capability "w" with one precondition over view "v".
func capWith(pred string) string {
	return `{"domain":"d","name":"w","tools":["w"],"kind":"action","local_time_offset":"-05:00","preconditions":[` +
		`{"id":"p","view":"v","bind":{"k":{"kind":"param","name":"k"}},` + pred + `,"message":"policy says no"}]}`
}

func run(t *testing.T, h sdk.Host, kind abi.SubjectKind, subject string) abi.Response {
	t.Helper()
	resp, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
		SubjectKind: kind, Subject: json.RawMessage(subject), Config: json.RawMessage(`{"domain":"d"}`),
		Context: abi.Context{Now: "2024-05-15T20:00:00Z"},
	}, h)
	require.NoError(t, err)
	return resp
}

func TestPredicates(t *testing.T) {
	row := `[{"status":"pending","n":3,"one":1,"s1":"1","flag":true,"tags":["a","b"],"created":"2024-05-15T09:00:00","nested":{"x":[{"y":5}]},"nul":null}]`
	cases := []struct {
		pred   string
		params string
		want   string // "deny", "pass", or "unevaluable"
	}{
		{`"deny_when":{"field":"status","equals":"pending"}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"status","equals":"delivered"}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"status","not_equals":"pending"}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"one","equals":"1"}`, `{"k":1}`, "pass"}, // 1 ≠ "1"
		{`"deny_when":{"field":"s1","equals":1}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"one","equals":1.0}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"flag","equals":true}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"status","in":["pending","processed"]}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"status","not_in":["pending"]}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"status","in":{"kind":"param","name":"allowed"}}`, `{"k":1,"allowed":["x","pending"]}`, "deny"},
		{`"deny_when":{"field":"status","in":"pending"}`, `{"k":1}`, "unevaluable"}, // in needs an array
		{`"deny_when":{"field":"n","gt":2}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"n","gte":3}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"n","lt":3}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"n","lte":{"kind":"param","name":"max"}}`, `{"k":1,"max":3}`, "deny"},
		{`"deny_when":{"field":"n","gt":"3"}`, `{"k":1}`, "unevaluable"}, // number vs string
		{`"deny_when":{"field":"status","gt":1}`, `{"k":1}`, "unevaluable"},
		// created 09:00 at -05:00 is 14:00Z; now is 20:00Z.
		{`"deny_when":{"field":"created","gte":{"kind":"now","offset":"-24h"}}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"created","gte":{"kind":"now","offset":"-5h"}}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"created","lt":"2024-05-15T14:00:01Z"}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"status","contains":"pend"}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"tags","contains":"b"}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"tags","contains":"c"}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"nested.x.0.y","equals":5}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"nested.x.*.y","equals":[5]}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"tags.#","equals":2}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"status","equals":{"kind":"param","name":"p.q"}}`, `{"k":1,"p":{"q":"pending"}}`, "deny"},
		{`"deny_when":{"field":"missing","exists":true}`, `{"k":1}`, "pass"},
		{`"deny_when":{"field":"missing","exists":false}`, `{"k":1}`, "deny"},
		{`"deny_when":{"field":"nul","exists":true}`, `{"k":1}`, "pass"}, // null is absent
		{`"deny_when":{"field":"missing","equals":1}`, `{"k":1}`, "unevaluable"},
		{`"deny_when":{"field":"status","equals":{"kind":"param","name":"nope"}}`, `{"k":1}`, "unevaluable"},
		// Kleene: a decided branch decides; an unknown that matters denies.
		{`"deny_when":{"any_of":[{"field":"missing","equals":1},{"field":"n","equals":3}]}`, `{"k":1}`, "deny"},
		{`"deny_when":{"any_of":[{"field":"missing","equals":1},{"field":"n","equals":4}]}`, `{"k":1}`, "unevaluable"},
		{`"deny_when":{"all_of":[{"field":"missing","equals":1},{"field":"n","equals":4}]}`, `{"k":1}`, "pass"},
		{`"deny_when":{"all_of":[{"field":"status","equals":"pending"},{"field":"n","equals":3}]}`, `{"k":1}`, "deny"},
		{`"deny_when":{"not":{"field":"status","contains":"pending"}}`, `{"k":1}`, "pass"},
		{`"deny_when":{"not":{"field":"missing","equals":1}}`, `{"k":1}`, "unevaluable"},
		{`"require":{"match":{"field":"status","equals":"pending"}}`, `{"k":1}`, "pass"},
		{`"require":{"match":{"field":"status","equals":{"kind":"param","name":"want"}}}`, `{"k":1,"want":"delivered"}`, "deny"},
		// Fail closed on what a valid catalog never holds.
		{`"deny_when":{"field":"n","roughly":3}`, `{"k":1}`, "unevaluable"},               // unknown operator
		{`"deny_when":{"field":"n"}`, `{"k":1}`, "unevaluable"},                           // no operator
		{`"deny_when":{"field":"n","equals":1,"gt":0}`, `{"k":1}`, "unevaluable"},         // two operators
		{`"deny_when":{"field":"n","equals":{"kind":"magic"}}`, `{"k":1}`, "unevaluable"}, // unknown operand
		{`"deny_when":{"field":"n","equals":1},"require":{"match":{"field":"n","equals":1}}`, `{"k":1}`, "unevaluable"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%02d %s", i, c.pred), func(t *testing.T) {
			h := &fakeHost{capability: capWith(c.pred), rows: map[string]string{"v": row}}
			resp := run(t, h, abi.SubjectToolCall, `{"tool":"w","parameters":`+c.params+`}`)
			switch c.want {
			case "pass":
				assert.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
				assert.Equal(t, preconditions.BasisHold, resp.Basis)
			case "deny":
				require.Equal(t, abi.Rejected, resp.Verdict)
				assert.Equal(t, preconditions.CodeFailed, resp.Findings[0].Code)
				assert.Equal(t, "policy says no", resp.Findings[0].Message)
			default:
				require.Equal(t, abi.Rejected, resp.Verdict)
				assert.Equal(t, preconditions.CodeUnevaluable, resp.Findings[0].Code)
			}
		})
	}
}

func TestRowsAndErrors(t *testing.T) {
	deny := capWith(`"deny_when":{"field":"status","equals":"cancelled"}`)
	req := capWith(`"require":{"match":{"field":"id","equals":{"kind":"param","name":"k"}}}`)
	cases := []struct {
		name, cap, rows, params, want, reason string
	}{
		{"deny_when on no row is unevaluable", deny, `[]`, `{"k":1}`, preconditions.CodeUnevaluable, "no row to test"},
		{"deny_when denies if any row matches", deny, `[{"status":"ok"},{"status":"cancelled"}]`, `{"k":1}`, preconditions.CodeFailed, ""},
		{"require.match with no row denies", req, `[]`, `{"k":1}`, preconditions.CodeFailed, ""},
		{"require.match: one matching row suffices", req, `[{"id":2},{"id":1}]`, `{"k":1}`, "", ""},
		{"require.match: a row without the field is unknown", req, `[{"x":2}]`, `{"k":1}`, preconditions.CodeUnevaluable, "field id is missing"},
		{"query error", deny, `!database is down`, `{"k":1}`, preconditions.CodeUnevaluable, "database is down"},
		{"unbound bind", deny, `[]`, `{}`, preconditions.CodeUnevaluable, `unbound parameter "k"`},
		{"parameters not an object", deny, `[]`, `[1]`, preconditions.CodeUnevaluable, "not a JSON object"},
		{"rows answer with an unknown member", deny, `[], "more": 1`, `{"k":1}`, preconditions.CodeUnevaluable, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHost{capability: c.cap, rows: map[string]string{"v": c.rows}}
			resp := run(t, h, abi.SubjectToolCall, `{"tool":"w","parameters":`+c.params+`}`)
			if c.want == "" {
				assert.Equal(t, abi.Accepted, resp.Verdict, "%+v", resp.Findings)
				return
			}
			require.Equal(t, abi.Rejected, resp.Verdict)
			require.Len(t, resp.Findings, 1)
			assert.Equal(t, c.want, resp.Findings[0].Code)
			if c.reason != "" {
				assert.Contains(t, resp.Findings[0].Details["reason"], c.reason)
			}
		})
	}
}

func TestProposalReportsAllFailuresInOrder(t *testing.T) {
	capab := `{"domain":"d","name":"w","tools":["w"],"kind":"update","preconditions":[
	  {"id":"first","view":"v","bind":{"k":{"kind":"param","name":"k"}},"deny_when":{"field":"a","equals":1},"message":"m1"},
	  {"id":"second","deny_when":{"field":"k","equals":7},"message":"m2"},
	  {"id":"third","view":"v","bind":{"k":{"kind":"literal","value":"x"}},"deny_when":{"field":"a","equals":2},"message":"m3"}]}`
	h := &fakeHost{capability: capab, rows: map[string]string{"v": `[{"a":1}]`}}
	resp := run(t, h, abi.SubjectProposal, `{"actions":[
	  {"id":"r","tool":"read_only_elsewhere"},
	  {"type":"state_write","tool":"x"},
	  {"id":"a2","tool":"w","parameters":{"k":7}},
	  {"id":"a3","tool":"w","parameters":{"k":1}},
	  {"id":"a4","tool":"w","parse_error":"arguments are not JSON"}]}`)
	require.Equal(t, abi.Rejected, resp.Verdict)
	var got []string
	for _, f := range resp.Findings {
		got = append(got, fmt.Sprintf("%d:%s:%v", *f.ActionIndex, f.Code, f.Details["precondition"]))
		assert.Equal(t, "dry", f.Details["mode"])
	}
	assert.Equal(t, []string{
		"0:unknown_capability:<nil>",
		"2:precondition_failed:first", "2:precondition_failed:second",
		"3:precondition_failed:first",
		"4:precondition_unevaluable:first", "4:precondition_unevaluable:second", "4:precondition_unevaluable:third",
	}, got)
	assert.Equal(t, "dry", resp.Evidence["mode"])
	assert.Equal(t, []any{float64(1)}, resp.Evidence["skipped_actions"])
	// One capability lookup per tool name.
	n := 0
	for _, c := range h.calls {
		if c == abi.OpQueryCapability {
			n++
		}
	}
	assert.Equal(t, 2, n)
}

func TestReadsAndUnknownTools(t *testing.T) {
	read := `{"domain":"d","name":"w","tools":["w"],"kind":"get"}`
	h := &fakeHost{capability: read}
	resp := run(t, h, abi.SubjectToolCall, `{"tool":"w","parameters":{}}`)
	assert.Equal(t, abi.Accepted, resp.Verdict)
	assert.Equal(t, "execute", resp.Evidence["mode"])

	resp, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
		SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{"tool":"elsewhere"}`),
		Config: json.RawMessage(`{"domain":"d","unknown_tools":"allow"}`),
	}, h)
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, resp.Verdict)
}

func TestBadConfigAndContextAreInconclusive(t *testing.T) {
	for _, c := range []struct{ config, now string }{
		{`{}`, "2024-05-15T20:00:00Z"},
		{`{"domain":"d","unknown_tools":"maybe"}`, "2024-05-15T20:00:00Z"},
		{`{"domain":"d","extra":1}`, "2024-05-15T20:00:00Z"},
		{`{"domain":"d"}`, "yesterday"},
	} {
		resp, err := gatetest.Evaluate(context.Background(), preconditions.Gate, abi.Request{
			SubjectKind: abi.SubjectToolCall, Subject: json.RawMessage(`{"tool":"w"}`),
			Config: json.RawMessage(c.config), Context: abi.Context{Now: c.now},
		}, &fakeHost{})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, resp.Verdict, c)
	}
}
