package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/edgecase"
)

// TestCheckRejectsUndecodable: gatehost check rejects a call whose
// arguments the host could not decode (exit 1, the host's finding), on a
// pipeline whose only gate never reads parameters.
func TestCheckRejectsUndecodable(t *testing.T) {
	cfg, dir := edgecase.WriteConfig(t)
	file := filepath.Join(repoRoot, "testdata/edge/openai-invalid-json.json")
	for _, p := range []string{"exec", "call-accept-all"} {
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", p, "--session", "s", file)
		assert.Equal(t, exitRejected, code, "%s: %s%s", p, out, errOut)
		assert.Contains(t, out, host.CodeUndecodableArguments, p)
	}
	for name, in := range edgecase.Undecodable {
		path := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(path, []byte(in), 0o644))
		for _, p := range []string{"exec", "call-accept-all", "plan-accept-all"} {
			if name == "native" && p == "plan-accept-all" {
				continue // a native tool call is not a proposal
			}
			code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", p, "--session", "s", "--output", "json", path)
			assert.Equal(t, exitRejected, code, "%s on %s: %s%s", name, p, out, errOut)
			assert.Contains(t, out, `"code": "`+host.CodeUndecodableArguments+`"`, "%s on %s", name, p)
		}
	}
	// The control: the same call with decodable arguments is accepted.
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"id":"c","type":"function","function":{"name":"list_issues","arguments":"{\"owner\":\"o\",\"repo\":\"r\"}"}}`), 0o644))
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "exec", "--session", "s", good)
	assert.Equal(t, exitAccepted, code, out+errOut)
}

// TestCheckRefusesNonIJSON: gatehost check refuses the input (exit 2)
// before any gate runs, naming the place.
func TestCheckRefusesNonIJSON(t *testing.T) {
	cfg, dir := edgecase.WriteConfig(t)
	for _, c := range edgecase.NonIJSON {
		path := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(c.Body), 0o644))
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", c.Pipeline, path)
		assert.Equal(t, exitUsage, code, "%s: %s%s", c.Name, out, errOut)
		assert.Contains(t, errOut, "not I-JSON", c.Name)
		assert.Contains(t, errOut, c.Field, c.Name)
		assert.Empty(t, out, c.Name)
	}
}

// TestGateNumbersExactInOutput: numbers a gate wrote in its evidence and
// finding details come out of check --output json digit for digit (the
// HTTP API's side is in package server).
func TestGateNumbersExactInOutput(t *testing.T) {
	cfg, dir := edgecase.WriteConfig(t)
	path := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"actions":[]}`), 0o644))
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "plan-accept-all", "--output", "json", path)
	require.Equal(t, exitAccepted, code, out+errOut)
	for _, n := range edgecase.GateNumbers {
		assert.Contains(t, out, n, "check --output json")
	}
}
