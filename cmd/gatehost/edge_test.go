package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testwasm"
)

// writeEdgeConfig writes a config whose pipelines would accept anything the
// host lets through: exec alone on tool calls, and a gate that accepts
// every subject unread (testdata/edge/accept-all.wat), on tool calls and
// on proposals.
func writeEdgeConfig(t *testing.T) (cfgPath, dir string) {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "accept-all.wasm"), acceptAll, 0o644))
	cfg := fmt.Sprintf(`
catalog:
  sources:
    - {format: mcp, path: %s, server: github}
event_log: {path: events.jsonl}
sessions: {path: var/sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
  accept-all: {path: accept-all.wasm}
pipelines:
  exec:
    subject: tool_call
    stages:
      - {plugin: exec, timeout: 60s, capabilities: [catalog, session], config: {confirm_effects: [non_idempotent]}}
  call-accept-all:
    subject: tool_call
    stages:
      - {plugin: accept-all, timeout: 60s}
  plan-accept-all:
    subject: proposal
    stages:
      - {plugin: accept-all, timeout: 60s}
`, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), execWasm)
	cfgPath = filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	code, _, errOut := runCLI("session", "activate", "--config", cfgPath, "--session", "s", "list_issues")
	require.Equal(t, 0, code, errOut)
	return cfgPath, dir
}

// edgeInputs are undecodable calls in each format; each alone is a tool
// call and a one-action proposal.
var edgeInputs = map[string]string{
	"openai":    `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"list_issues","arguments":"[]"}}]}`,
	"anthropic": `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"list_issues","input":"{}"}]}`,
	"mcp":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":[]}}`,
	"native":    `{"tool":"list_issues","parse_error":"x"}`,
}

// TestCheckRejectsUndecodable: gatehost check rejects a call whose
// arguments the host could not decode (exit 1, the host's finding), on a
// pipeline whose only gate never reads parameters.
func TestCheckRejectsUndecodable(t *testing.T) {
	cfg, dir := writeEdgeConfig(t)
	file := filepath.Join(repoRoot, "testdata/edge/openai-invalid-json.json")
	for _, p := range []string{"exec", "call-accept-all"} {
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", p, "--session", "s", file)
		assert.Equal(t, exitRejected, code, "%s: %s%s", p, out, errOut)
		assert.Contains(t, out, host.CodeUndecodableArguments, p)
	}
	for name, in := range edgeInputs {
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

// TestServeRejectsUndecodable: the HTTP API is bound by the same rule, for
// tool calls and proposals in every format.
func TestServeRejectsUndecodable(t *testing.T) {
	cfg, _ := writeEdgeConfig(t)
	ts := startServe(t, cfg, nil)
	for name, in := range edgeInputs {
		for _, p := range []string{"exec", "call-accept-all", "plan-accept-all"} {
			if name == "native" && p == "plan-accept-all" {
				continue
			}
			a := ts.do(t, "POST", "/v1/pipelines/"+p+"/check?session=s", []byte(in))
			require.Equal(t, 200, a.status, "%s on %s: %s", name, p, a.body)
			d := a.decision(t)
			assert.Equal(t, abi.Rejected, d.Verdict, "%s on %s", name, p)
			require.NotEmpty(t, d.Findings)
			last := d.Findings[len(d.Findings)-1]
			assert.Equal(t, host.CodeUndecodableArguments, last.Code, "%s on %s", name, p)
			assert.Equal(t, host.HostStage, last.Stage)
		}
	}
}

// nonIJSON are subjects with a string two readers would read apart, in
// each format, and the JSON Pointer the refusal names.
var nonIJSON = []struct{ name, pipeline, body, field string }{
	{"openai arguments", "plan-accept-all", `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"list_issues","arguments":"{\"owner\":\"\\ud800\"}"}}]}`, "/tool_calls/0/function/arguments"},
	{"anthropic input", "call-accept-all", `{"type":"tool_use","id":"t","name":"list_issues","input":{"owner":"\udc00"}}`, "/input/owner"},
	{"mcp member name", "plan-accept-all", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":{"\ud800\u0041":1}}}`, "/params/arguments"},
	{"native", "call-accept-all", `{"tool":"list_issues","parameters":{"owner":["\udbff"]}}`, "/parameters/owner/0"},
}

// TestCheckRefusesNonIJSON: gatehost check refuses the input (exit 2)
// before any gate runs, naming the place.
func TestCheckRefusesNonIJSON(t *testing.T) {
	cfg, dir := writeEdgeConfig(t)
	for _, c := range nonIJSON {
		path := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(c.body), 0o644))
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", c.pipeline, path)
		assert.Equal(t, exitUsage, code, "%s: %s%s", c.name, out, errOut)
		assert.Contains(t, errOut, "not I-JSON", c.name)
		assert.Contains(t, errOut, c.field, c.name)
		assert.Empty(t, out, c.name)
	}
}

// TestServeRefusesNonIJSON: the HTTP API answers 400 invalid_subject with
// the JSON Pointer in field.
func TestServeRefusesNonIJSON(t *testing.T) {
	cfg, _ := writeEdgeConfig(t)
	ts := startServe(t, cfg, nil)
	for _, c := range nonIJSON {
		a := ts.do(t, "POST", "/v1/pipelines/"+c.pipeline+"/check", []byte(c.body))
		require.Equal(t, 400, a.status, "%s: %s", c.name, a.body)
		e := a.apiErr(t)
		assert.Equal(t, errInvalidSubject, e.Error.Code, c.name)
		assert.Equal(t, c.field, e.Error.Field, c.name)
		assert.Contains(t, e.Error.Message, "not I-JSON", c.name)
	}
}

// TestGateNumbersExactInOutput: numbers a gate wrote in its evidence and
// finding details come out of check --output json and the HTTP API digit
// for digit.
func TestGateNumbersExactInOutput(t *testing.T) {
	cfg, dir := writeEdgeConfig(t)
	path := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"actions":[]}`), 0o644))
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "plan-accept-all", "--output", "json", path)
	require.Equal(t, exitAccepted, code, out+errOut)
	ts := startServe(t, cfg, nil)
	a := ts.do(t, "POST", "/v1/pipelines/plan-accept-all/check", []byte(`{"actions":[]}`))
	require.Equal(t, 200, a.status, string(a.body))
	for _, n := range []string{"12345678901234567890", "-9007199254740993", "0.30000000000000000000001", "1E+2", "123456789012345678901234567890", "18446744073709551615", "1.10"} {
		assert.Contains(t, out, n, "check --output json")
		assert.Contains(t, string(a.body), n, "HTTP answer")
	}
}
