package preconditions_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestRepeatedRunsDecideAlike runs each catalog answer twice: the second run
// may take the capability's decode from the cache of earlier answers, and
// must give the same verdict, findings and evidence as the first, including
// when the answer is one the gate refuses to decode.
func TestRepeatedRunsDecideAlike(t *testing.T) {
	rows := map[string]string{"v": `[{"status":"pending"}]`}
	cases := []struct {
		name       string
		capability string
		want       abi.Verdict
		code       string
	}{
		{"denies", capWith(`"deny_when":{"field":"status","equals":"pending"}`), abi.Rejected, "precondition_failed"},
		{"holds", capWith(`"deny_when":{"field":"status","equals":"shipped"}`), abi.Accepted, ""},
		{"unknown member", `{"domain":"d","name":"w","tools":["w"],"kind":"action","surprise":1}`, abi.Rejected, "precondition_unevaluable"},
		{"found without capability", `null`, abi.Rejected, "precondition_unevaluable"},
		{"read", `{"domain":"d","name":"w","tools":["w"],"kind":"query"}`, abi.Accepted, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []abi.Response
			for range 3 {
				h := &fakeHost{capability: c.capability, rows: rows}
				got = append(got, run(t, h, abi.SubjectToolCall, `{"tool":"w","parameters":{"k":1}}`))
				assert.Equal(t, abi.OpQueryCapability, h.calls[0], "the host is asked on every run")
			}
			require.Equal(t, c.want, got[0].Verdict)
			if c.code != "" {
				require.NotEmpty(t, got[0].Findings)
				assert.Equal(t, c.code, got[0].Findings[0].Code)
			}
			assert.Equal(t, got[0], got[1])
			assert.Equal(t, got[0], got[2])
		})
	}
}
