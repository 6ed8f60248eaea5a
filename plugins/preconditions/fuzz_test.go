package preconditions_test

import (
	"encoding/json"
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// FuzzGate feeds arbitrary host answers (a capability declaration and rows)
// and call parameters to the gate, as a tool_call and as a proposal of two
// such calls (dry, so declared effects are resolved): it must never panic,
// always answer within the ABI (gatetest checks the response schema), and
// never accept with a finding.
func FuzzGate(f *testing.F) {
	f.Add(capWith(`"deny_when":{"field":"status","equals":"pending"}`), `[{"status":"pending"}]`, `{"k":1}`)
	f.Add(capWith(`"require":{"match":{"any_of":[{"field":"a","gt":{"kind":"now","offset":"-24h"}},{"not":{"field":"b","in":[1,"1"]}}]}}`), `[{"a":"2024-05-15T09:00:00","b":1}]`, `{"k":"x"}`)
	f.Add(`{"kind":"action","preconditions":[{"id":"p","deny_when":{"field":"x.#","gt":5},"message":"m"}]}`, `[]`, `{"x":[1,2,3,4,5,6]}`)
	// Minor 4: value leaves, arithmetic, aggregates, for_each and effects.
	f.Add(capWith(`"deny_when":{"value":{"kind":"sum","over":{"kind":"rows"},"of":"p","where":{"field":"@","exists":true}},"gt":{"kind":"add","args":[{"kind":"field","name":"a"},0.1]}}`),
		`[{"p":0.1,"a":0.2},{"p":0.2}]`, `{"k":1}`)
	f.Add(`{"domain":"d","name":"w","tools":["w"],"kind":"update","preconditions":[{"id":"p","view":"v","for_each":{"zip":["a","b"],"as":["x","y"]},`+
		`"bind":{"k":{"kind":"param","name":"x"}},"require":{"match":{"field":"n","starts_with":{"kind":"param","name":"y"}}},"message":"m"}],`+
		`"effects":[{"collection":"c","id":{"kind":"param","name":"x"},"for_each":{"param":"a","as":"x"},"set":{"s.{x}":{"kind":"div","args":[1,{"kind":"count","over":{"kind":"param","name":"a"}}]}}}]}`,
		`[{"n":"ab"}]`, `{"a":["1","2"],"b":["a","a"]}`)
	f.Add(`{"domain":"d","name":"w","tools":["w"],"kind":"action","effects":[{"collection":"c","id":{"kind":"field","name":"id"},"view":"v","set":{"n":{"kind":"field","name":"n"}}}]}`,
		`[{"id":"x","n":1}]`, `{}`)
	f.Fuzz(func(t *testing.T, capability, rows, params string) {
		call := `{"tool":"w","parameters":` + quoteIfBad(params) + `}`
		h := &fakeHost{capability: capability, rows: map[string]string{"v": rows}}
		resp := run(t, h, abi.SubjectToolCall, call)
		if resp.Verdict == abi.Accepted && len(resp.Findings) > 0 {
			t.Fatal("accepted with findings")
		}
		// Dry: the same call twice, the second over the first's effects.
		h = &fakeHost{capability: capability, rows: map[string]string{"v": rows}}
		resp = run(t, h, abi.SubjectProposal, `{"actions":[`+call+`,`+call+`]}`)
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
