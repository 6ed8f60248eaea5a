package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// writeLargeConfig writes a config whose pipelines (plan, call, merge) run
// a gate that accepts requests of several MiB, with the given
// max_subject_bytes ("" for the default).
func writeLargeConfig(t *testing.T, maxSubject string) (cfgPath, dir string) {
	t.Helper()
	acceptLarge, err := testwasm.WAT("testdata/edge/accept-large.wat")
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "accept-large.wasm"), acceptLarge, 0o644))
	cfg := fmt.Sprintf(`
event_log: {path: events.jsonl}
cache_dir: %s
plugins:
  accept-large: {path: accept-large.wasm}
pipelines:
  plan: {subject: proposal, stages: [{plugin: accept-large, timeout: 60s}]}
  call: {subject: tool_call, stages: [{plugin: accept-large, timeout: 60s}]}
  merge: {subject: merge, stages: [{plugin: accept-large, timeout: 60s}]}
`, testwasm.CacheDir())
	if maxSubject != "" {
		cfg += "max_subject_bytes: " + maxSubject + "\n"
	}
	cfgPath = filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	return cfgPath, dir
}

// writeSubject writes tmpl with "@" padded to n bytes in all.
func writeSubject(t *testing.T, dir, tmpl string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "subject.json")
	b := strings.Replace(tmpl, "@", strings.Repeat("x", n-(len(tmpl)-1)), 1)
	require.Len(t, b, n)
	require.NoError(t, os.WriteFile(path, []byte(b), 0o644))
	return path
}

// TestCheckMaxSubjectBytes: max_subject_bytes is the one limit of check
// and bench, in every format, above host/subject's own 4 MiB default.
func TestCheckMaxSubjectBytes(t *testing.T) {
	cfg, dir := writeLargeConfig(t, "8MiB")
	small, _ := writeLargeConfig(t, "")
	for _, tc := range []struct{ name, pipeline, tmpl string }{
		{"native proposal", "plan", `{"actions":[{"tool":"w","parameters":{"body":"@"}}]}`},
		{"openai proposal", "plan", `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"w","arguments":"{\"body\":\"@\"}"}}]}`},
		{"mcp tool call", "call", `{"name":"w","arguments":{"body":"@"}}`},
		{"anthropic tool call", "call", `{"type":"tool_use","id":"t","name":"w","input":{"body":"@"}}`},
	} {
		path := writeSubject(t, dir, tc.tmpl, 6<<20)
		code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", tc.pipeline, path)
		assert.Equal(t, exitAccepted, code, "%s: %s%s", tc.name, out, errOut)
		code, out, errOut = runCLI("bench", "--config", cfg, "--pipeline", tc.pipeline, "-n", "1", "--warmup", "0", path)
		assert.Equal(t, 0, code, "%s: bench: %s%s", tc.name, out, errOut)

		// Under the default limit the same file is refused, by both.
		for _, cmd := range []string{"check", "bench"} {
			code, _, errOut = runCLI(cmd, "--config", small, "--pipeline", tc.pipeline, path)
			assert.Equal(t, exitUsage, code, "%s: %s", tc.name, cmd)
			assert.Contains(t, errOut, "max_subject_bytes (4194304 bytes)", "%s: %s", tc.name, cmd)
		}
	}
}

// TestCheckSubjectOfAnotherKind: a tool call sent to a proposal pipeline,
// or the reverse, exits 2 saying what it looks like, in each format.
func TestCheckSubjectOfAnotherKind(t *testing.T) {
	cfg, dir := writeLargeConfig(t, "")
	tests := []struct {
		name, pipeline, input, format, want string
	}{
		{"native call to plan", "plan", `{"tool":"a","parameters":{}}`, "", "pipeline plan checks proposals; this looks like a tool call"},
		{"mcp call to plan", "plan", `{"name":"a","arguments":{}}`, "mcp", "pipeline plan checks proposals; this looks like a tool call"},
		{"openai call to plan", "plan", `{"id":"c","type":"function","function":{"name":"a","arguments":"{}"}}`, "", "pipeline plan checks proposals; this looks like a tool call"},
		{"anthropic call to plan", "plan", `{"type":"tool_use","id":"t","name":"a","input":{}}`, "anthropic", "pipeline plan checks proposals; this looks like a tool call"},
		{"native plan to call", "call", `{"actions":[{"tool":"a"},{"tool":"b"}]}`, "", "pipeline call checks tool calls; this looks like a proposal"},
		{"mcp plan to call", "call", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}]`, "", "pipeline call checks tool calls; this looks like a proposal"},
		{"openai plan to call", "call", `{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"2","type":"function","function":{"name":"b","arguments":"{}"}}]}`, "openai", "pipeline call checks tool calls; this looks like a proposal"},
		{"anthropic plan to call", "call", `{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"a","input":{}},{"type":"tool_use","id":"2","name":"b","input":{}}]}`, "", "pipeline call checks tool calls; this looks like a proposal"},
		{"call to merge", "merge", `{"tool":"a"}`, "", "pipeline merge checks merge subjects; this looks like a tool call"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, "subject.json")
		require.NoError(t, os.WriteFile(path, []byte(tc.input), 0o644))
		args := []string{"check", "--config", cfg, "--pipeline", tc.pipeline, path}
		if tc.format != "" {
			args = append(args, "--format", tc.format)
		}
		code, out, errOut := runCLI(args...)
		assert.Equal(t, exitUsage, code, tc.name)
		assert.Empty(t, out, tc.name)
		assert.Equal(t, "gatehost: subject "+path+": "+tc.want+"\n", errOut, tc.name)
	}
}

// TestCheckFlagsThatDoNotApply: --confirm and --format are refused (exit
// 2, naming the flag) for pipelines they do not apply to.
func TestCheckFlagsThatDoNotApply(t *testing.T) {
	cfg, dir := writeLargeConfig(t, "")
	plan := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"actions":[]}`), 0o644))
	merge := filepath.Join(dir, "merge.json")
	require.NoError(t, os.WriteFile(merge, []byte(`{"file_changes":[{"path":"a","after":"b"}]}`), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"confirm on a proposal pipeline", []string{"--pipeline", "plan", "--confirm", "ok", plan}, "--confirm: pipeline plan checks proposals; confirmations apply to tool calls only"},
		{"confirm on a merge pipeline", []string{"--pipeline", "merge", "--confirm", "ok", merge}, "--confirm: pipeline merge checks merge subjects"},
		{"agent format on a merge pipeline", []string{"--pipeline", "merge", "--format", "openai", merge}, "--format: openai: pipeline merge checks merge subjects; formats other than native apply to proposals and tool calls only"},
		{"unknown format", []string{"--pipeline", "plan", "--format", "yaml", plan}, `--format: "yaml" is not native, mcp, openai or anthropic`},
	} {
		code, out, errOut := runCLI(append([]string{"check", "--config", cfg}, tc.args...)...)
		assert.Equal(t, exitUsage, code, tc.name)
		assert.Empty(t, out, tc.name)
		assert.Contains(t, errOut, "gatehost: usage: "+tc.want, tc.name)
	}
	// A blank --confirm is none, as before: the proposal pipeline runs.
	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "plan", "--confirm", "", plan)
	assert.Equal(t, exitAccepted, code, out+errOut)
}
