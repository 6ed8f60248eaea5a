package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBench(t *testing.T) {
	code, out, errOut := runCLI("bench", "--config", writeConfig(t, ""), "--pipeline", "admission", "-n", "20", "--warmup", "2", "--output", "json", proposal("read-then-write.json"))
	require.Equal(t, 0, code, errOut)
	var r benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, "admission", r.Pipeline)
	assert.Equal(t, 20, r.Decisions)
	assert.Equal(t, 20, r.Verdicts["accepted"])
	assert.Positive(t, r.Throughput)
	assert.LessOrEqual(t, r.P50Micros, r.P99Micros)
	assert.Positive(t, r.AllocsPerDecision)

	code, out, _ = runCLI("bench", "--config", writeConfig(t, ""), "--pipeline", "admission", "-n", "5", "--warmup", "0", proposal("read-then-write.json"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "throughput")
	assert.Contains(t, out, "p99")

	for _, args := range [][]string{
		{"-n", "0"}, {"--concurrency", "0"}, {"--output", "yaml"}, {"--warmup", "-1"},
	} {
		code, _, errOut := runCLI(append(append([]string{"bench", "--config", writeConfig(t, ""), "--pipeline", "admission"}, args...), proposal("read-then-write.json"))...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}

// TestBenchConcurrency: every decision is counted once, whatever the number
// in flight, also beyond the pool's size; a failing pipeline counts each
// inconclusive decision.
func TestBenchConcurrency(t *testing.T) {
	tests := []struct {
		name        string
		pipeline    string
		extra       string
		concurrency string
		want        map[string]int
	}{
		{name: "one in flight", pipeline: "admission", concurrency: "1", want: map[string]int{"accepted": 9}},
		{name: "more in flight than instances", pipeline: "admission", extra: "pool_size: 1\n", concurrency: "3", want: map[string]int{"accepted": 9}},
		{name: "more workers than decisions", pipeline: "admission", concurrency: "16", want: map[string]int{"accepted": 9}},
		{name: "inconclusive counted", pipeline: "broken", concurrency: "2", want: map[string]int{"inconclusive": 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI("bench", "--config", writeConfig(t, tt.extra), "--pipeline", tt.pipeline, "-n", "9", "--warmup", "1",
				"--concurrency", tt.concurrency, "--output", "json", proposal("read-then-write.json"))
			require.Equal(t, 0, code, errOut)
			var r benchReport
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			got := map[string]int{}
			for v, k := range r.Verdicts {
				got[string(v)] = k
			}
			assert.Equal(t, tt.want, got)
			assert.Zero(t, r.Errors)
		})
	}
}
