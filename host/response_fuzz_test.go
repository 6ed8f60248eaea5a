package host

import (
	"testing"

	"github.com/gatehost/gatehost/abi"
)

// FuzzDecodeResponse feeds arbitrary bytes as a gate's answer. Whatever
// decodes must keep the ABI's verdict rules; nothing may panic.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"accepted","evidence":{"a":1}}`,
		`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","action_index":0}]}`,
		`{"verdict":"inconclusive","reason":"gate_error"}`,
		`{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m"}],"Verdict":"accepted"}`,
		`{"verdict":"accepted","evidence":{"a":1},"Findings":[{"code":"x","severity":"blocking","message":"m"}]}`,
		`{"verdict":"accepted","evidence":{"n":1e9999999}}`,
		`{"verdict":"accepted","evidence":{"n":12345678901234567890,"f":[0.1000000000000000055511151231257827,1E+2]}}`,
		`{"verdict":"accepted","reason":"plugin_trap","evidence":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := decodeResponse(b)
		if err != nil {
			return
		}
		if !resp.Verdict.Valid() {
			t.Fatalf("decoded unknown verdict %q", resp.Verdict)
		}
		blocking := false
		for _, fd := range resp.Findings {
			blocking = blocking || fd.Severity == abi.Blocking
		}
		// Re-encoding the evidence changes no number.
		if resp.Evidence != nil {
			requireSameNumbers(t, b, resp.Evidence)
		}
		switch resp.Verdict {
		case abi.Accepted:
			if len(resp.Evidence) == 0 || blocking || resp.Reason != "" {
				t.Fatalf("accepted without evidence, with a blocking finding or with a reason: %s", b)
			}
		case abi.Rejected:
			if !blocking {
				t.Fatalf("rejected without a blocking finding: %s", b)
			}
		}
	})
}
