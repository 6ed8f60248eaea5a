package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject"
)

// TestSubjectErrorPointer: a subject refused by the ABI schema names the
// offending value, whatever the format it came in, so that a caller (the
// HTTP API's field) can point at it.
func TestSubjectErrorPointer(t *testing.T) {
	h := entryHost(t, 0)
	for _, tc := range []struct {
		name, pipeline, input string
		format                subject.Format
		pointer               string
	}{
		{"action tool not a string", "plan", `{"actions":[{"type":"tool_call","tool":7}]}`, subject.FormatAuto, "/actions/0/tool"},
		{"second action, native forced", "plan", `{"actions":[{"type":"tool_call","tool":"a"},{"type":"tool_call","tool":[]}]}`, subject.FormatNative, "/actions/1/tool"},
		{"call tool not a string", "call", `{"tool":7}`, subject.FormatNative, "/tool"},
		{"call parameters not an object", "call", `{"tool":"t","parameters":[1]}`, subject.FormatNative, "/parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := h.Check(context.Background(), tc.pipeline, []byte(tc.input), host.RunOptions{Format: tc.format})
			assert.Nil(t, d)
			var se *host.SubjectError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.pointer, se.Pointer, err.Error())
			_, err = h.NativeSubject(tc.pipeline, []byte(tc.input), tc.format)
			require.ErrorAs(t, err, &se, "NativeSubject refuses it alike")
			assert.Equal(t, tc.pointer, se.Pointer)
		})
	}
}
