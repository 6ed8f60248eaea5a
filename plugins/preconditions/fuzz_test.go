package preconditions_test

import (
	"encoding/json"
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// FuzzGate feeds arbitrary host answers (a capability declaration and rows)
// and call parameters to the gate: it must never panic, always answer within
// the ABI (gatetest checks the response schema), and never accept with a
// finding.
func FuzzGate(f *testing.F) {
	f.Add(capWith(`"deny_when":{"field":"status","equals":"pending"}`), `[{"status":"pending"}]`, `{"k":1}`)
	f.Add(capWith(`"require":{"match":{"any_of":[{"field":"a","gt":{"kind":"now","offset":"-24h"}},{"not":{"field":"b","in":[1,"1"]}}]}}`), `[{"a":"2024-05-15T09:00:00","b":1}]`, `{"k":"x"}`)
	f.Add(`{"kind":"action","preconditions":[{"id":"p","deny_when":{"field":"x.#","gt":5},"message":"m"}]}`, `[]`, `{"x":[1,2,3,4,5,6]}`)
	f.Fuzz(func(t *testing.T, capability, rows, params string) {
		h := &fakeHost{capability: capability, rows: map[string]string{"v": rows}}
		resp := run(t, h, abi.SubjectToolCall, `{"tool":"w","parameters":`+quoteIfBad(params)+`}`)
		if resp.Verdict == abi.Accepted && len(resp.Findings) > 0 {
			t.Fatal("accepted with findings")
		}
	})
}

// quoteIfBad keeps the subject JSON well-formed: the host validates the
// subject before any gate sees it.
func quoteIfBad(s string) string {
	if len(s) > 0 && s[0] == '{' && validJSON(s) {
		return s
	}
	return "{}"
}

func validJSON(s string) bool { return json.Valid([]byte(s)) }
