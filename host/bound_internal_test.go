package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// checkBounded asserts what boundAnswer promises for the answer raw: the
// verdict, reason and basis untouched; evidence and findings within their
// bounds as encoding/json writes them; a kept rejection still blocking.
func checkBounded(t *testing.T, raw []byte) *Answer {
	t.Helper()
	resp, err := checkAnswer(raw)
	if err != nil {
		t.Skip("not a valid answer")
	}
	kept, info := boundAnswer(resp, raw)
	assert.Equal(t, resp.Verdict, kept.Verdict)
	assert.Equal(t, resp.Reason, kept.Reason)
	assert.Equal(t, resp.Basis, kept.Basis)
	assert.Equal(t, len(raw), info.Bytes)
	assert.Len(t, info.SHA256, 64)
	ev, err := json.Marshal(kept.Evidence)
	require.NoError(t, err)
	fs, err := json.Marshal(kept.Findings)
	require.NoError(t, err)
	if info.Truncated {
		assert.LessOrEqual(t, len(ev), MaxKeptEvidenceBytes, "evidence")
		assert.LessOrEqual(t, len(fs), MaxKeptFindingsBytes, "findings")
		assert.LessOrEqual(t, len(kept.Findings), MaxKeptFindings)
	} else {
		assert.Equal(t, resp.Evidence, kept.Evidence, "an answer within the bounds is kept whole")
		assert.Equal(t, resp.Findings, kept.Findings)
	}
	if kept.Verdict == abi.Rejected {
		blocking := false
		for _, f := range kept.Findings {
			blocking = blocking || f.Severity == abi.Blocking
		}
		assert.True(t, blocking, "a kept rejection keeps a blocking finding")
	}
	data, err := stageRecordData(StageResult{Verdict: kept.Verdict, Findings: kept.Findings, Evidence: kept.Evidence, Answer: info})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), MaxKeptEvidenceBytes+MaxKeptFindingsBytes+1024)
	return info
}

func TestBoundAnswer(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	tests := []struct {
		name      string
		answer    string
		truncated bool
	}{
		{"small answer kept whole", `{"verdict":"accepted","basis":"verified","evidence":{"a":1,"b":["<x>"],"c":{"d":null,"e":true}}}`, false},
		{"small rejection kept whole", `{"verdict":"rejected","findings":[{"code":"x","severity":"blocking","message":"m","details":{"k":1.5}}]}`, false},
		{"evidence string of < (6× escaped)", `{"verdict":"accepted","evidence":{"x":"` + strings.Repeat("<", 200_000) + `"}}`, true},
		{"evidence string of U+2028 (2× escaped)", `{"verdict":"accepted","evidence":{"x":"` + strings.Repeat("\u2028", 50_000) + `"}}`, true},
		{"evidence string of escaped control characters", `{"verdict":"accepted","evidence":{"x":"` + strings.Repeat(`\u0001`, 50_000) + `"}}`, true},
		{"many evidence members", `{"verdict":"accepted","evidence":{` + many(30_000, func(i int) string { return fmt.Sprintf(`"k%05d":"&"`, i) }) + `}}`, true},
		{"huge evidence key", `{"verdict":"accepted","evidence":{"` + strings.Repeat("k", 100_000) + `":1,"ok":1}}`, true},
		{"long evidence array of numbers", `{"verdict":"accepted","evidence":{"x":[` + many(50_000, func(i int) string { return "1.2345678901234567e-300" }) + `]}}`, true},
		{"deep nested arrays", `{"verdict":"accepted","evidence":{"x":[` + many(2_000, func(int) string {
			return strings.Repeat("[", 60) + `"<<<<"` + strings.Repeat("]", 60)
		}) + `]}}`, true},
		{"many findings, blocking last", `{"verdict":"rejected","findings":[` + many(5_000, func(int) string {
			return `{"code":"a","severity":"advisory","message":"m"}`
		}) + `,{"code":"b","severity":"blocking","message":"why"}]}`, true},
		{"blocking findings with huge strings", `{"verdict":"rejected","findings":[` + many(300, func(int) string {
			return `{"code":"b","severity":"blocking","message":"` + strings.Repeat(">", 5_000) + `","path":"/` + strings.Repeat("a", 3_000) + `"}`
		}) + `]}`, true},
		{"finding details", `{"verdict":"rejected","findings":[{"code":"b","severity":"blocking","message":"m","details":{"x":"` + strings.Repeat("&", 10_000) + `"}}]}`, true},
		{"inconclusive with reason and huge evidence", `{"verdict":"inconclusive","reason":"gate_error","evidence":{"error":"` + strings.Repeat("<", 100_000) + `"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := checkBounded(t, []byte(tt.answer))
			assert.Equal(t, tt.truncated, info.Truncated)
		})
	}
}

func TestBoundString(t *testing.T) {
	for _, tt := range []struct {
		s         string
		max, want int
	}{
		{"abc", 5, 5},
		{"abcdef", 8, 0},
		{strings.Repeat("<", 10), 20, 0},
		{"ü" + strings.Repeat("x", 10), 8, 0},
	} {
		s, n, cut := boundString(tt.s, tt.max)
		b, _ := json.Marshal(s)
		assert.LessOrEqual(t, len(b), tt.max, "%q", tt.s)
		assert.LessOrEqual(t, len(b), n, "the size is an upper bound: %q", s)
		assert.Equal(t, len(b) < len(tt.s)+2 || cut, cut)
		if tt.want > 0 {
			assert.Equal(t, tt.want, n)
		}
	}
}

// FuzzBoundAnswer: any answer the host accepts is bounded the same way.
func FuzzBoundAnswer(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"accepted","evidence":{"a":"<<<<"}}`,
		`{"verdict":"rejected","findings":[{"code":"x","severity":"advisory","message":"m"},{"code":"y","severity":"blocking","message":"\u2028"}]}`,
		`{"verdict":"inconclusive","reason":"r","evidence":{"a":[[[[1]]]],"b":{"c":"\u0000"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := checkAnswer(b); err != nil {
			return
		}
		checkBounded(t, b)
	})
}
