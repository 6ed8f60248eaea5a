package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/mcpgateway"
)

// writeMCPConfig writes a config with the exec gate in a tool_call
// pipeline "gated", a proposal pipeline "admission", and the given mcp:
// section (YAML, indented under mcp:).
func writeMCPConfig(t *testing.T, mcpSection string) string {
	t.Helper()
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
event_log: {path: events.jsonl}
sessions: {path: sessions.json}
cache_dir: %s
plugins:
  exec: {path: %s}
  static-verify: {path: %s}
pipelines:
  gated:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config: {confirm_effects: [], confirm_tools: ["mcp.memory:delete_entities"]}
  admission:
    subject: proposal
    stages:
      - plugin: static-verify
        timeout: 60s
        capabilities: [catalog, schema]
mcp:
%s`, testwasm.CacheDir(), execWasm, svWasm, mcpSection)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// TestMCPConfigErrors: a bad mcp: section exits 2 naming the key, before
// anything is served.
func TestMCPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		args          []string
		want          string
	}{
		{"env without =", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], env: [NOVALUE]}\n", nil, "mcp.upstreams.mem.env[0]: want KEY=VALUE"},
		{"no upstream", "  pipeline: gated\n", nil, "upstreams: at least one upstream is required"},
		{"no pipeline", "  upstreams:\n    mem: {command: [x]}\n", nil, "pipeline: required"},
		{"proposal pipeline", "  pipeline: admission\n  upstreams:\n    mem: {command: [x]}\n", nil, `pipeline "admission" checks proposal subjects`},
		{"unknown pipeline", "  upstreams:\n    mem: {command: [x]}\n", []string{"--pipeline", "nope"}, `no such pipeline`},
		{"pipeline flag typo", "  upstreams:\n    mem: {command: [x]}\n", []string{"--pipeline", "gaed"}, `--pipeline "gaed": no such pipeline in config `},
		{"mcp.pipeline typo", "  pipeline: gaed\n  upstreams:\n    mem: {command: [x]}\n", nil, `: mcp.pipeline: "gaed" is not a pipeline of the config; did you mean "gated"?`},
		{"top-level key typo", "  pipeline: gated\n  upstreams:\n    mem: {command: [x]}\npipelnes: {x: {subject: tool_call}}\n", nil, `: unknown key "pipelnes"; did you mean "pipelines"?`},
		{"trust", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], trust: maybe}\n", nil, `upstreams[0].trust: "maybe"`},
		{"both", "  pipeline: gated\n  upstreams:\n    mem: {command: [x], url: http://x}\n", nil, "set command or url, not both"},
		{"unknown key", "  pipeline: gated\n  upstreams:\n    mem: {comand: [x]}\n", nil, "comand"},
		{"bad duration", "  pipeline: gated\n  call_timeout: soon\n  upstreams:\n    mem: {command: [x]}\n", nil, "call_timeout"},
		{"upstream name", "  pipeline: gated\n", []string{"--upstream-name", "Not.Valid", "--", "x"}, `upstreams[0].name: "Not.Valid"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeMCPConfig(t, tc.section)
			code, out, errOut := runCLI(append([]string{"mcp", "--config", cfg}, tc.args...)...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tc.want)
			if strings.Contains(tc.want, "did you mean") {
				assert.Contains(t, errOut, "config "+cfg+": ", "the error names the file")
			}
			assert.Empty(t, out)
		})
	}
}

// TestMCPStdio: gatehost mcp as an mcp.json server command, in front of
// @modelcontextprotocol/server-memory; the session it serves is visible to
// gatehost session show while it runs, and the event log verifies.
func TestMCPStdio(t *testing.T) {
	server := filepath.Join(repoRoot, "testdata/mcp/node_modules/.bin/mcp-server-memory")
	if _, err := os.Stat(server); err != nil {
		if testing.Short() {
			t.Skip("server-memory not installed (-short)")
		}
		t.Fatalf("%s is not installed: run make mcp-deps", server)
	}
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "mcp", "--config", cfg, "--upstream-name", "memory", "--", server)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
		"entities": []map[string]any{{"name": "bob", "entityType": "person", "observations": []string{}}}}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_entities", Arguments: map[string]any{"entityNames": []string{"bob"}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	// The Decision is in _meta; delete_entities declares an output schema,
	// so it is not the structured content too.
	assert.Contains(t, fmt.Sprint(res.Meta[mcpgateway.MetaDecision]), "confirmation_required")
	assert.Nil(t, res.StructuredContent)

	code, out, errOut := runCLI("session", "show", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "mcp-")
	assert.Contains(t, out, "mcp.memory:create_entities")

	require.NoError(t, cs.Close())
	code, _, errOut = runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
}

func memoryServer(t *testing.T) string {
	t.Helper()
	server := filepath.Join(repoRoot, "testdata/mcp/node_modules/.bin/mcp-server-memory")
	if _, err := os.Stat(server); err != nil {
		if testing.Short() {
			t.Skip("server-memory not installed (-short)")
		}
		t.Fatalf("%s is not installed: run make mcp-deps", server)
	}
	return server
}

// rawMCP speaks raw JSON-RPC lines to a gateway's stdin and stdout: next
// returns the next response (skipping notifications and requests), write
// sends one line.
func rawMCP(t *testing.T, stdin io.Writer, stdout io.Reader) (next func() map[string]any, write func(string)) {
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	next = func() map[string]any {
		for lines.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(lines.Bytes(), &m))
			if _, ok := m["method"]; !ok {
				return m
			}
		}
		t.Fatalf("gateway ended: %v", lines.Err())
		return nil
	}
	write = func(s string) {
		_, err := io.WriteString(stdin, s+"\n")
		require.NoError(t, err)
	}
	return next, write
}

// TestMCPStdioMalformedFrame: a frame on stdin that is not a JSON-RPC
// message gets a JSON-RPC error, and the gateway goes on serving.
func TestMCPStdioMalformedFrame(t *testing.T) {
	server := memoryServer(t)
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "mcp", "--config", cfg, "--upstream-name", "memory", "--", server)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	next, write := rawMCP(t, stdin, stdout)
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.NotNil(t, next()["result"])
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/list"` + "\x00garbage")
	e := next()
	assert.Nil(t, e["id"])
	assert.EqualValues(t, -32700, e["error"].(map[string]any)["code"])
	write(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
	r := next()
	assert.EqualValues(t, 3, r["id"])
	assert.Contains(t, fmt.Sprint(r["result"]), "create_entities")
}

// TestMCPApprove: gatehost mcp approve reviews the upstream's tools
// against the trust baseline, writes nothing without --yes, approves with
// it (one tool, or every new one), refuses a name that matches nothing
// with the closest real name, and says so as JSON with --output json.
func TestMCPApprove(t *testing.T) {
	server := memoryServer(t)
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  baseline: {require_approval: true}\n")
	t.Setenv("MEMORY_FILE_PATH", filepath.Join(t.TempDir(), "memory.jsonl"))
	lock := filepath.Join(filepath.Dir(cfg), "mcp-tools.lock.json")
	up := []string{"--upstream-name", "memory", "--", server}

	code, out, errOut := runCLI(append([]string{"mcp", "approve", "--config", cfg}, up...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "new      memory:create_entities")
	assert.Contains(t, out, "run again with --yes")
	assert.NoFileExists(t, lock)

	code, _, errOut = runCLI(append([]string{"mcp", "approve", "--config", cfg, "--yes", "--tool", "create_entites"}, up...)...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `did you mean "memory:create_entities"`)
	assert.NoFileExists(t, lock)

	code, out, errOut = runCLI(append([]string{"mcp", "approve", "--config", cfg, "--yes", "--tool", "memory:create_entities"}, up...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "approved 1: memory:create_entities")
	assert.FileExists(t, lock)

	code, out, errOut = runCLI(append([]string{"mcp", "approve", "--config", cfg, "--output", "json"}, up...)...)
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Tools []mcpgateway.ToolReview `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	status := map[string]string{}
	for _, r := range rep.Tools {
		status[r.Tool] = r.Status
	}
	assert.Equal(t, mcpgateway.ReviewApproved, status["create_entities"])
	assert.Equal(t, mcpgateway.ReviewNew, status["delete_entities"])

	code, _, errOut = runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
}

// TestMCPStdioNoUpstreamStarts: gatehost mcp whose only upstream command
// does not exist answers initialize, gives JSON-RPC errors with a code
// (never 0), and exits 1 naming the upstream when the client goes. The
// upstream is named memory: the config's tool names could be its tools,
// so they wait for its listing instead of refusing the session.
func TestMCPStdioNoUpstreamStarts(t *testing.T) {
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n")
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "mcp", "--config", cfg, "--upstream-name", "memory", "--", "/nonexistent/server")
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	next, write := rawMCP(t, stdin, stdout)
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init := next()
	require.NotNil(t, init["result"], "%v", init)
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, method := range []string{"prompts/list", "resources/list"} {
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`, i+2, method))
		e, ok := next()["error"].(map[string]any)
		require.True(t, ok, method)
		assert.EqualValues(t, -32603, e["code"], method)
	}
	write(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`)
	assert.Contains(t, fmt.Sprint(next()["result"]), "tools:[]")
	require.NoError(t, stdin.Close())
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, stderr.String(), `upstream "memory" never started`)
	assert.Contains(t, stderr.String(), "/nonexistent/server")
}

// TestMCPExportsDecisions: gatehost mcp exports its decisions as serve
// does (the composition root starts the decision_log: section's
// exporters): a call's decision reaches the receiver.
func TestMCPExportsDecisions(t *testing.T) {
	server := memoryServer(t)
	var mu sync.Mutex
	var kinds []string // the verdicts exported
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var batch []map[string]any
		if b, _ := io.ReadAll(zr); json.Unmarshal(b, &batch) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range batch {
			if r, ok := e["result"].(map[string]any); ok {
				kinds = append(kinds, fmt.Sprint(r["verdict"]))
			}
		}
	}))
	t.Cleanup(recv.Close)
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "decision_log: {http: {url: %q, flush_interval: 10ms}}\n", recv.URL)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "mcp", "--config", cfg, "--upstream-name", "memory", "--", server)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.NoError(t, cs.Close()) // the gateway flushes its exporters as it exits
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, kinds, "accepted", "the read_graph decision was exported")
}
