package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

func TestPinConfig(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "g.wasm")
	require.NoError(t, os.WriteFile(mod, []byte("\x00asm module bytes"), 0o644))
	s := sha256.Sum256([]byte("\x00asm module bytes"))
	sum := hex.EncodeToString(s[:])
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{"adds a line under path, keeping comments",
			"# top comment\nplugins:\n  g:\n    path: g.wasm   # the module\n  # between\npipelines: {}\n",
			"# top comment\nplugins:\n  g:\n    path: g.wasm   # the module\n    sha256: \"" + sum + "\"\n  # between\npipelines: {}\n", ""},
		{"fills an empty quoted pin, keeping its comment",
			"plugins:\n  g:\n    path: g.wasm\n    sha256: \"\"     # pin\n",
			"plugins:\n  g:\n    path: g.wasm\n    sha256: \"" + sum + "\"     # pin\n", ""},
		{"replaces a stale plain pin",
			"plugins:\n  g:\n    sha256: abc\n    path: g.wasm\n",
			"plugins:\n  g:\n    sha256: \"" + sum + "\"\n    path: g.wasm\n", ""},
		{"fills a key without a value",
			"plugins:\n  g:\n    path: g.wasm\n    sha256:\n",
			"plugins:\n  g:\n    path: g.wasm\n    sha256: \"" + sum + "\"\n", ""},
		{"last line without newline",
			"plugins:\n  g:\n    path: g.wasm",
			"plugins:\n  g:\n    path: g.wasm\n    sha256: \"" + sum + "\"\n", ""},
		{"flow style refused", "plugins:\n  g: {path: g.wasm}\n", "", "flow style"},
		{"missing module", "plugins:\n  g:\n    path: nope.wasm\n", "", "plugins.g.path"},
		{"no plugins", "pipelines: {}\n", "", "no plugins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := pinConfig([]byte(tc.in), dir, nil)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(out))
			again, report, err := pinConfig(out, dir, nil)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again), "pinning twice changes nothing")
			assert.Contains(t, report[0], "unchanged")
		})
	}
}

func TestPinConfigTOMLAndJSON(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g.wasm"), []byte("\x00asm module bytes"), 0o644))
	s := sha256.Sum256([]byte("\x00asm module bytes"))
	sum := hex.EncodeToString(s[:])
	for _, tc := range []struct {
		name, file, in, want, err string
	}{
		{"toml: adds a line under path, keeping comments", "c.toml",
			"# top\n[plugins.g]\npath = \"g.wasm\"  # the module\n\n[pipelines.p]\nsubject = \"proposal\"\n",
			"# top\n[plugins.g]\npath = \"g.wasm\"  # the module\nsha256 = \"" + sum + "\"\n\n[pipelines.p]\nsubject = \"proposal\"\n", ""},
		{"toml: replaces a stale pin, keeping its comment", "c.toml",
			"[plugins.g]\n  sha256 = 'abc' # pin\n  path = \"g.wasm\"\n",
			"[plugins.g]\n  sha256 = \"" + sum + "\" # pin\n  path = \"g.wasm\"\n", ""},
		{"toml: last line without newline", "c.toml",
			"[plugins.g]\npath = \"g.wasm\"",
			"[plugins.g]\npath = \"g.wasm\"\nsha256 = \"" + sum + "\"\n", ""},
		{"toml: quoted table name", "c.toml",
			"[plugins.\"g\"]\npath = \"g.wasm\"\n",
			"[plugins.\"g\"]\npath = \"g.wasm\"\nsha256 = \"" + sum + "\"\n", ""},
		{"toml: inline table refused", "c.toml", "[plugins]\ng = { path = \"g.wasm\" }\n", "", "not written as a [plugins.g] table"},
		{"toml: missing module", "c.toml", "[plugins.g]\npath = \"nope.wasm\"\n", "", "plugins.g.path"},
		{"toml: invalid", "c.toml", "[plugins.g\n", "", "invalid TOML"},
		{"json: adds a member under path, keeping layout", "c.json",
			"{\n  \"plugins\": {\n    \"g\": {\n      \"path\": \"g.wasm\"\n    }\n  },\n  \"pipelines\": {}\n}\n",
			"{\n  \"plugins\": {\n    \"g\": {\n      \"path\": \"g.wasm\",\n      \"sha256\": \"" + sum + "\"\n    }\n  },\n  \"pipelines\": {}\n}\n", ""},
		{"json: one-line object", "c.json",
			`{"plugins": {"g": {"path": "g.wasm"}}}`,
			`{"plugins": {"g": {"path": "g.wasm", "sha256": "` + sum + `"}}}`, ""},
		{"json: replaces a stale or null pin", "c.json",
			`{"plugins": {"g": {"sha256": null, "path": "g.wasm", "x": [1, {"y": 2}]}}}`,
			`{"plugins": {"g": {"sha256": "` + sum + `", "path": "g.wasm", "x": [1, {"y": 2}]}}}`, ""},
		{"json: not an object", "c.json", `{"plugins": {"g": "g.wasm"}}`, "", "plugins.g: not an object"},
		{"json: no plugins", "c.json", `{"pipelines": {}}`, "", "no plugins"},
		{"json: invalid", "c.json", `{"plugins": {`, "", "invalid JSON"},
		{"other extension", "c.ini", "x", "", "edits .yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			out, report, err := pinFile(path, []byte(tc.in), nil)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(out))
			assert.Contains(t, report[0], "g: pinned "+sum)
			again, report, err := pinFile(path, out, nil)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again), "pinning twice changes nothing")
			assert.Contains(t, report[0], "unchanged")
		})
	}
}

func TestPluginPinThenCheck(t *testing.T) {
	cfg := writeConfig(t, "")
	code, out, stderr := runCLI("plugin", "pin", "--config", cfg)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "pinned")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(b), "sha256: \"")
	code, _, stderr = runCLI("check", "--config", cfg, "--pipeline", "admission", proposal("read-then-write.json"))
	assert.Equal(t, 0, code, stderr)
}

// The docs promise TOML and JSON configs as well as YAML: pin edits each,
// and the pinned file loads.
func TestPluginPinThenCheckTOMLAndJSON(t *testing.T) {
	catalogDir := filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server")
	for file, cfg := range map[string]string{
		"gatehost.toml": fmt.Sprintf(`cache_dir = %q

[event_log]
path = "events.jsonl"

[[catalog.sources]]
format = "mcp"
path = %q
server = "github"

[plugins.static-verify]
path = %q

[pipelines.admission]
subject = "proposal"

[[pipelines.admission.stages]]
plugin = "static-verify"
timeout = "60s"
capabilities = ["catalog", "schema"]
`, testwasm.CacheDir(), catalogDir, svWasm),
		"gatehost.json": fmt.Sprintf(`{
  "cache_dir": %q,
  "event_log": {"path": "events.jsonl"},
  "catalog": {"sources": [{"format": "mcp", "path": %q, "server": "github"}]},
  "plugins": {
    "static-verify": {
      "path": %q
    }
  },
  "pipelines": {"admission": {"subject": "proposal", "stages": [
    {"plugin": "static-verify", "timeout": "60s", "capabilities": ["catalog", "schema"]}]}}
}
`, testwasm.CacheDir(), catalogDir, svWasm),
	} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), file)
			require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
			code, out, stderr := runCLI("plugin", "pin", "--config", path)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, "static-verify: pinned ")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Regexp(t, `"?sha256"?\s*[=:]\s*"[0-9a-f]{64}"`, string(b))
			code, _, stderr = runCLI("check", "--config", path, proposal("read-then-write.json"))
			assert.Equal(t, 0, code, stderr)
			code, out, stderr = runCLI("plugin", "pin", "--config", path)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, "static-verify: unchanged ")
		})
	}
}

func TestPluginInspect(t *testing.T) {
	wasm, err := testwasm.WAT("examples/effect-guard-wat/gate.wat")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "g.wasm")
	require.NoError(t, os.WriteFile(path, wasm, 0o644))
	code, out, stderr := runCLI("plugin", "inspect", path)
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"abi     v1", "memory  min 18 pages (1.125 MiB), max none declared", "func   gatehost_v1.call (i32,i32,i32,i32)->(i32)",
		"func   gate_evaluate (i32,i32)->(i64)", `"name": "effect-guard-wat"`, "sha256  "} {
		assert.Contains(t, out, want)
	}
	code, out, _ = runCLI("plugin", "inspect", "--output", "json", path)
	require.Equal(t, 0, code)
	var in inspection
	require.NoError(t, json.Unmarshal([]byte(out), &in))
	assert.Equal(t, 1, in.ABIVersion)
	assert.Equal(t, len(wasm), in.Size)
	assert.Empty(t, in.Module.Problems)

	code, _, _ = runCLI("plugin", "inspect", filepath.Join(t.TempDir(), "missing.wasm"))
	assert.Equal(t, exitUsage, code)
}

func TestPluginCheckBroken(t *testing.T) {
	wasm, err := testwasm.WAT("testdata/gatetest/broken.wat")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "broken.wasm")
	require.NoError(t, os.WriteFile(path, wasm, 0o644))
	code, out, _ := runCLI("plugin", "check", path, "--cases", filepath.Join(repoRoot, "testdata/gatetest/broken-cases"), "--budget-time", "500ms", "--budget-oversized-time", "1s")
	assert.Equal(t, 1, code)
	for _, want := range []string{"FAIL     trap", "FAIL     determinism", "FAIL     capabilities", "FAIL     budget",
		"FAIL     case", "FAIL     malformed", "FAIL     evidence", "DOES NOT CONFORM"} {
		assert.Contains(t, out, want)
	}
}

// TestPluginNewScaffold is the third-party path end to end: scaffold a gate,
// build it to wasm with its own go.mod, pass its own tests and the CLI's
// conformance check with its cases.
func TestPluginNewScaffold(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go tool")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	code, out, stderr := runCLI("plugin", "new", "--dir", dir, "--gatehost", repoRoot, "demo")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "replace directive")
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Contains(t, string(must(os.ReadFile(filepath.Join(dir, "Makefile")))), "GATEHOST ?= "+gatehostCommand(exe, exec.LookPath)+"\n")
	assert.Contains(t, out, "make build test check   # check runs ")
	for _, f := range []string{"go.mod", "go.sum", "Makefile", "gate.go", "gate_test.go", "wasm/main.go", "testdata/cases/reject_denied_tool.json", ".gitignore", "README.md"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	wasm := filepath.Join(dir, "demo.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", wasm, "./wasm")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	b, err := build.CombinedOutput()
	require.NoError(t, err, string(b))
	vet := exec.Command("go", "vet", "./...")
	vet.Dir = dir
	b, err = vet.CombinedOutput()
	require.NoError(t, err, string(b))

	code, out, stderr = runCLI("plugin", "check", wasm, "--cases", filepath.Join(dir, "testdata/cases"), "--budget-time", "20s")
	require.Equal(t, 0, code, out+stderr)
	// 14 probes (the scaffold declares a config schema, so config_not_held
	// among them) and its 2 cases.
	assert.Contains(t, out, "conforms: 16 requests (2 author cases), 0 failures")

	code, _, stderr = runCLI("plugin", "new", "--dir", dir, "demo")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "not empty")
	code, _, _ = runCLI("plugin", "new", "Bad_Name")
	assert.Equal(t, exitUsage, code)
	code, _, stderr = runCLI("plugin", "new", "--dir", t.TempDir(), "policy")
	assert.Equal(t, exitUsage, code, "the built-in policy gate's name is taken")
	assert.Contains(t, stderr, "built-in policy gate's")
	assert.True(t, strings.HasPrefix(string(must(os.ReadFile(filepath.Join(dir, "go.mod")))), "module example.com/demo"))
}

// The scaffold's `make check` runs the gatehost that wrote it: by name when
// PATH finds that binary, else by its absolute path, quoted for the shell.
func TestScaffoldGatehostCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "gatehost")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	other := filepath.Join(t.TempDir(), "gatehost")
	require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
	spaced := filepath.Join(t.TempDir(), "my tools", "gate$host")
	require.NoError(t, os.MkdirAll(filepath.Dir(spaced), 0o755))
	require.NoError(t, os.WriteFile(spaced, []byte("#!/bin/sh\n"), 0o755))
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	notFound := func(string) (string, error) { return "", os.ErrNotExist }
	for _, tc := range []struct {
		name, exe string
		look      func(string) (string, error)
		want      string
	}{
		{"on PATH", exe, found(exe), "gatehost"},
		{"not on PATH", exe, notFound, exe},
		{"another gatehost on PATH", exe, found(other), exe},
		{"unknown executable", "", notFound, "gatehost"},
		{"quoted and escaped", spaced, notFound, "'" + strings.ReplaceAll(spaced, "$", "$$") + "'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, gatehostCommand(tc.exe, tc.look))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
