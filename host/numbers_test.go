package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// exactNumbers are number literals of testdata/edge/accept-all.wat's
// answer that a float64 cannot hold (or would spell differently).
var exactNumbers = []string{
	`"n":12345678901234567890`,
	`"neg":-9007199254740993`,
	`"frac":0.30000000000000000000001`,
	`"exp":1E+2`,
	`"big":123456789012345678901234567890`,
	`"u64":18446744073709551615`,
	`"list":[9007199254740993,1.10]`,
}

// TestGateNumbersKeptExactly: numbers in a gate's evidence and finding
// details reach the Decision and the event log as the gate wrote them.
func TestGateNumbersKeptExactly(t *testing.T) {
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	h := hosttest.New(t, host.Config{
		Plugins:      map[string]host.PluginConfig{"accept-all": {Module: acceptAll}},
		EventLogPath: path,
		Pipelines: map[string]host.PipelineConfig{
			"plan": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{Plugin: "accept-all"}}},
			"call": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{Plugin: "accept-all"}}},
		},
	})
	for _, tc := range []struct{ pipeline, subject string }{
		{"plan", `{"actions":[]}`},
		{"call", `{"tool":"t"}`},
	} {
		d, err := h.Check(context.Background(), tc.pipeline, []byte(tc.subject), host.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, abi.Accepted, d.Verdict)
		assert.Equal(t, json.Number("12345678901234567890"), d.Stages[0].Evidence["n"])

		out, err := json.Marshal(d)
		require.NoError(t, err)
		for _, n := range exactNumbers {
			assert.Contains(t, string(out), n, "Decision of %s", tc.pipeline)
		}
	}

	_, err = eventlog.Verify(path, eventlog.VerifyOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	for _, i := range []int{0, 2} { // the stage records
		var rec eventlog.Record
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &rec))
		require.Equal(t, "stage", rec.Kind)
		for _, n := range exactNumbers {
			assert.Contains(t, string(rec.Data), n, "stage record %d", i)
		}
	}
	var dec eventlog.Record
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &dec))
	assert.Contains(t, string(dec.Data), `"u64":18446744073709551615`, "findings in the decision record")
}
