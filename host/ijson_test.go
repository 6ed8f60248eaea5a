package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestCheckRefusesNonIJSON: a native subject of any kind with a lone
// surrogate (or bytes that are not UTF-8) in a value or a member name is
// refused before any stage runs, with a *SubjectError that points at it.
// A gate that accepts everything unread shows that no stage ran.
func TestCheckRefusesNonIJSON(t *testing.T) {
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	stages := []host.StageConfig{{Plugin: "accept-all"}}
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"accept-all": {Module: acceptAll}},
		Pipelines: map[string]host.PipelineConfig{
			"plan":  {Subject: abi.SubjectProposal, Stages: stages},
			"call":  {Subject: abi.SubjectToolCall, Stages: stages},
			"merge": {Subject: abi.SubjectMerge, Stages: stages},
		},
	})
	tests := []struct {
		name, pipeline, subject, ptr string
	}{
		{"proposal parameter", "plan", `{"actions":[{"tool":"t","parameters":{"path":"@"}}]}`, "/actions/0/parameters/path"},
		{"proposal parameter name", "plan", `{"actions":[{"tool":"t","parameters":{"@":1}}]}`, "/actions/0/parameters"},
		{"proposal tool", "plan", `{"actions":[{"tool":"@"}]}`, "/actions/0/tool"},
		{"proposal precondition", "plan", `{"actions":[{"tool":"t","preconditions":[{"key":"@"}]}]}`, "/actions/0/preconditions/0/key"},
		{"proposal unknown member", "plan", `{"actions":[],"x":{"y":["@"]}}`, "/x/y/0"},
		{"tool_call parameter", "call", `{"tool":"t","parameters":{"a":{"b":"@"}}}`, "/parameters/a/b"},
		{"tool_call name", "call", `{"tool":"t","parameters":{"@":0}}`, "/parameters"},
		{"tool_call tool", "call", `{"tool":"@"}`, "/tool"},
		{"merge after", "merge", `{"file_changes":[{"path":"a.go","after":"@"}]}`, "/file_changes/0/after"},
		{"merge path", "merge", `{"file_changes":[{"path":"@","after":"x"}]}`, "/file_changes/0/path"},
		{"merge member name", "merge", `{"file_changes":[{"path":"a","after":"x"}],"footprint":[{"file":"a","symbol":"S","@":"f"}]}`, "/footprint/0"},
	}
	for _, bad := range []string{`\ud800`, `\udc00`, `\ud800\u0041`, `a\udbff`, "\xff", "\xed\xa0\x80"} {
		for _, tc := range tests {
			t.Run(tc.name+" "+bad, func(t *testing.T) {
				// The control: a plain string is accepted.
				d, err := h.Check(context.Background(), tc.pipeline, []byte(strings.ReplaceAll(tc.subject, "@", "ok")), host.RunOptions{})
				require.NoError(t, err)
				require.Equal(t, abi.Accepted, d.Verdict)

				d, err = h.Check(context.Background(), tc.pipeline, []byte(strings.ReplaceAll(tc.subject, "@", bad)), host.RunOptions{})
				require.Error(t, err)
				assert.Nil(t, d, "no stage ran")
				assert.ErrorIs(t, err, host.ErrBadSubject)
				assert.ErrorIs(t, err, host.ErrNotIJSON)
				var se *host.SubjectError
				require.True(t, errors.As(err, &se))
				assert.Equal(t, tc.ptr, se.Pointer)
			})
		}
	}
}
