package main

import (
	"encoding/json"
	"errors"
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

// everyCommand is each command line that takes flags, as a user types it.
var everyCommand = [][]string{
	{"check"}, {"serve"}, {"mcp"}, {"log", "verify"}, {"session", "show"}, {"session", "activate"}, {"approvals", "page"},
	{"catalog", "show"}, {"catalog", "diff"}, {"catalog", "publish"}, {"merge-verify"}, {"domain", "validate"},
	{"plugin", "inspect"}, {"plugin", "check"}, {"plugin", "pin"}, {"plugin", "new"}, {"bench"},
}

// TestUnknownFlagIsNamed: an unknown flag exits 2 and says which flag, with
// the command's usage, on every command.
func TestUnknownFlagIsNamed(t *testing.T) {
	for _, c := range everyCommand {
		t.Run(strings.Join(c, "_"), func(t *testing.T) {
			code, out, errOut := runCLI(append(c, "--no-such-flag")...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, "unknown flag: --no-such-flag")
			assert.Contains(t, errOut, "Usage: gatehost "+c[0])
			assert.Empty(t, out)
		})
	}
}

// TestHelpEverywhere: --help, -h and help CMD exit 0 on every command and
// on the commands that only group subcommands.
func TestHelpEverywhere(t *testing.T) {
	lines := append([][]string{{"log"}, {"session"}, {"catalog"}, {"domain"}, {"plugin"}, {"completion"}}, everyCommand...)
	for _, c := range lines {
		for _, form := range []struct {
			name string
			args []string
		}{
			{"--help", append(append([]string{}, c...), "--help")},
			{"-h", append(append([]string{}, c...), "-h")},
			{"help", append([]string{"help"}, c...)},
		} {
			t.Run(strings.Join(c, "_")+"/"+form.name, func(t *testing.T) {
				code, out, errOut := runCLI(form.args...)
				assert.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
				assert.Contains(t, out+errOut, "Usage")
			})
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, _ := runCLI(args...)
		assert.Equal(t, 0, code, args)
		assert.Contains(t, out, "gatehost check [flags]")
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(args...)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^gatehost \S+.* \(ABI v\d+\.\d+\)\n$`, out)
		assert.NotContains(t, out, "gatehost dev ")
	}
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	_, out, _ := runCLI("version")
	assert.Contains(t, out, "gatehost v9.8.7 (ABI")
}

// TestCompletion: each shell's script is printed, and the bash one is valid
// bash that completes commands and subcommands.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI("completion", sh)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "complete")
		assert.Contains(t, out, "merge-verify")
	}
	code, _, errOut := runCLI("completion", "tcsh")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown shell "tcsh"`)
	code, _, _ = runCLI("completion")
	assert.Equal(t, exitUsage, code)

	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	_, script, _ := runCLI("completion", "bash")
	path := filepath.Join(t.TempDir(), "gatehost.bash")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o644))
	// Complete "gatehost ses" and "gatehost session re" with the script.
	probe := `source "$1"
COMP_WORDS=(gatehost ses); COMP_CWORD=1; _gatehost; echo "${COMPREPLY[*]}"
COMP_WORDS=(gatehost session re); COMP_CWORD=2; _gatehost; echo "${COMPREPLY[*]}"`
	out, err := exec.Command(bash, "-c", probe, "probe", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "session\nrevoke rebuild\n", string(out))
}

// TestVerdictSurvivesClosedStdout: a reader that stops early (| head -1)
// closes the pipe before check writes; the exit code is still the verdict,
// not SIGPIPE's 141 or an output error's 2.
func TestVerdictSurvivesClosedStdout(t *testing.T) {
	cfg := writeConfig(t, "")
	for _, tt := range []struct {
		output, subject string
		want            int
	}{
		{"text", "read-then-write.json", exitAccepted},
		{"text", "bad-args-and-unknown-tool.json", exitRejected},
		{"json", "bad-args-and-unknown-tool.json", exitRejected},
	} {
		t.Run(tt.output+"/"+tt.subject, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			require.NoError(t, r.Close()) // nobody will read
			cmd := exec.Command(os.Args[0], "check", "--config", cfg, "--pipeline", "admission", "--output", tt.output, proposal(tt.subject))
			cmd.Env = append(os.Environ(), cliChildEnv+"=1")
			cmd.Stdout = w
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err = cmd.Run()
			require.NoError(t, w.Close())
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, code, "stderr: %s", stderr.String())
		})
	}
}

// TestAdvisoryFindingsMarked: a blocking finding of an advisory stage on an
// accepted decision is marked advisory in JSON and printed as
// "blocking (advisory)" with its stage, never as a bare "blocking"; an
// inconclusive stage's error is printed under the stage table.
func TestAdvisoryFindingsMarked(t *testing.T) {
	acceptAll, err := testwasm.WAT("testdata/edge/accept-all.wat")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "accept-all.wasm"), acceptAll, 0o644))
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
catalog:
  sources:
    - {format: mcp, path: %s, server: github}
event_log: {path: events.jsonl}
cache_dir: %s
plugins:
  static-verify: {path: %s}
  accept-all: {path: accept-all.wasm}
  trap: {path: trap.wasm}
pipelines:
  advised:
    subject: proposal
    stages:
      - {plugin: accept-all, timeout: 60s}
      - {name: sv, plugin: static-verify, mode: advisory, timeout: 60s, capabilities: [catalog, schema]}
  broken:
    subject: proposal
    stages:
      - {plugin: trap, timeout: 60s}
`, filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), testwasm.CacheDir(), svWasm)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trap.wasm"), trapWasm, 0o644))
	bad := proposal("bad-args-and-unknown-tool.json")

	code, out, errOut := runCLI("check", "--config", cfg, "--pipeline", "advised", "--output", "json", bad)
	require.Equal(t, exitAccepted, code, errOut)
	var d struct {
		Verdict  string `json:"verdict"`
		Findings []struct {
			Severity string `json:"severity"`
			Stage    string `json:"stage"`
			Advisory bool   `json:"advisory"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	blocking := 0
	for _, f := range d.Findings {
		assert.Equal(t, f.Stage == "sv", f.Advisory, "%+v", f)
		if f.Severity == "blocking" {
			blocking++
			assert.True(t, f.Advisory, "a blocking finding on an accepted decision is advisory: %+v", f)
		}
	}
	require.Positive(t, blocking)

	code, out, _ = runCLI("check", "--config", cfg, "--pipeline", "advised", bad)
	require.Equal(t, exitAccepted, code)
	assert.Contains(t, out, "blocking (advisory)  unknown_tool")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "blocking ") {
			assert.Contains(t, line, "(advisory)", "a bare blocking finding under ACCEPTED: %q", line)
		}
	}

	code, out, _ = runCLI("check", "--config", cfg, "--pipeline", "broken", proposal("read-then-write.json"))
	require.Equal(t, exitInconclusive, code)
	assert.Regexp(t, `(?m)^  \S+: plugin_trap: .+`, out, "the inconclusive stage's error is shown")
}
