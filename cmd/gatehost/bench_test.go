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
