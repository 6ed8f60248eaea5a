package host

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeResponseKeepsNumbers: decodeResponse keeps every number of
// evidence and finding details as written, so that re-encoding the answer
// (in the Decision, the event log, the HTTP API) changes no digit.
func TestDecodeResponseKeepsNumbers(t *testing.T) {
	for _, n := range []string{
		"12345678901234567890", "-9007199254740993", "9007199254740993", "18446744073709551615",
		"0.1", "0.30000000000000000000001", "1.10", "1e2", "1E+2", "-0", "0e0", "5e-324", "1.7976931348623157e308",
		"123456789012345678901234567890", "1.0000000000000000000000000001",
	} {
		t.Run(n, func(t *testing.T) {
			out := []byte(`{"verdict":"accepted","evidence":{"n":` + n + `,"a":[` + n + `,{"m":` + n + `}]},` +
				`"findings":[{"code":"c","severity":"advisory","message":"m","action_index":0,"details":{"d":` + n + `}}]}`)
			resp, err := decodeResponse(out)
			require.NoError(t, err)
			ev, err := json.Marshal(resp.Evidence)
			require.NoError(t, err)
			assert.Equal(t, `{"a":[`+n+`,{"m":`+n+`}],"n":`+n+`}`, string(ev))
			det, err := json.Marshal(resp.Findings[0].Details)
			require.NoError(t, err)
			assert.Equal(t, `{"d":`+n+`}`, string(det))
			require.NotNil(t, resp.Findings[0].ActionIndex)
			assert.Equal(t, 0, *resp.Findings[0].ActionIndex, "typed fields decode as before")
		})
	}
}

// requireSameNumbers fails unless the evidence of the answer out, decoded
// again from its re-encoding, equals the evidence as written: no number
// changed on the way.
func requireSameNumbers(t *testing.T, out []byte, resp any) {
	t.Helper()
	var raw struct {
		Evidence json.RawMessage `json:"evidence"`
	}
	require.NoError(t, json.Unmarshal(out, &raw))
	again, err := json.Marshal(resp)
	require.NoError(t, err)
	var a, b any
	require.NoError(t, decodeUseNumber(raw.Evidence, &a))
	require.NoError(t, decodeUseNumber(again, &b))
	require.Equal(t, a, b)
}

func decodeUseNumber(b []byte, v any) error {
	if len(b) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
