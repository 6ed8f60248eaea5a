package main

import (
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

// fixtureRepo is a git repository built by a test in a temp dir.
type fixtureRepo struct {
	t   *testing.T
	dir string
}

func (r fixtureRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=gatehost test", "-c", "user.email=test@gatehost.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (r fixtureRepo) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, name)
		require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
		if content == "" {
			require.NoError(r.t, os.Remove(p))
			continue
		}
		require.NoError(r.t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// branch commits files on a new branch from main and returns to main.
func (r fixtureRepo) branch(name string, files map[string]string) {
	r.t.Helper()
	r.git("checkout", "-q", "-b", name, "main")
	r.write(files)
	r.git("add", "-A")
	r.git("commit", "-q", "-m", name)
	r.git("checkout", "-q", "main")
}

const calcGo = `package calc

// Add returns a+b.
func Add(a, b int) int { return a + b }

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

const calcTestGo = `package calc

import "testing"

func TestCalc(t *testing.T) {
	if Add(2, 3) != 5 || Sub(5, 3) != 2 {
		t.Fatal("wrong")
	}
}
`

// newFixture builds a Go module with a test, committed on main, and one
// branch per scenario of the merge gate's acceptance list.
func newFixture(t *testing.T) fixtureRepo {
	r := fixtureRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	r.write(map[string]string{
		"go.mod":                   "module example.com/calc\n\ngo 1.22\n",
		"calc.go":                  calcGo,
		"calc_test.go":             calcTestGo,
		"README.md":                "# calc\n",
		".github/workflows/ci.yml": "on: push\n",
	})
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "base")
	r.branch("clean", map[string]string{"calc.go": strings.Replace(calcGo, "return a + b", "return b + a", 1)})
	r.branch("failing", map[string]string{"calc.go": strings.Replace(calcGo, "return a + b", "return a * b", 1)})
	r.branch("docs", map[string]string{"README.md": "# calc\n\nAdds and subtracts.\n"})
	r.branch("outside", map[string]string{"calc.go": strings.Replace(calcGo, "return a - b", "return -(b - a)", 1)})
	r.branch("duplicate", map[string]string{"calc.go": calcGo + "\n// Add again, from a second worktree.\nfunc Add(a, b int) int { return a + b }\n"})
	r.branch("workflow", map[string]string{"calc.go": strings.Replace(calcGo, "return a + b", "return b + a", 1), ".github/workflows/ci.yml": "on: [push, pull_request]\n"})
	r.branch("unparsed-ok", map[string]string{"testdata/broken.go": "package broken\nfunc {\n", "calc.go": strings.Replace(calcGo, "return a + b", "return b + a", 1)})
	r.branch("unparsed-bad", map[string]string{"extra.go": "package calc\nfunc Broken( {\n"})
	return r
}

// mergeConfig writes a config with a merge pipeline whose check runs
// go test (and leaves a marker file, so a test can tell it ran), one with
// no check, and a path policy.
func mergeConfig(t *testing.T, marker string) string {
	wasm, err := testwasm.Go("plugins/merge/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
event_log:
  path: events.jsonl
cache_dir: %s
plugins:
  merge:
    path: %s
pipelines:
  merge:
    subject: merge
    stages:
      - plugin: merge
        timeout: 5m
        memory_limit: 256MiB
        capabilities: [policy, check]
        config: { check: go-test }
  merge-nocheck:
    subject: merge
    stages:
      - plugin: merge
        timeout: 60s
        capabilities: [policy, check]
  merge-slow:
    subject: merge
    stages:
      - plugin: merge
        timeout: 3s
        capabilities: [policy, check]
        config: { check: slow }
checks:
  go-test:
    command: [sh, -c, 'touch "$MARKER" && go test ./...']
    env: [MARKER=%s]
    timeout: 4m
  slow:
    command: [sleep, "60"]
policy:
  rules:
    - name: ci-workflows
      paths: [".github/workflows/**"]
      effect: deny
      message: CI workflows are changed by people
    - name: module-files
      paths: [go.mod]
      effect: require_waiver
`, testwasm.CacheDir(), wasm, marker)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

type mergeDecision struct {
	Verdict string `json:"verdict"`
	Stages  []struct {
		Verdict  string         `json:"verdict"`
		Basis    string         `json:"basis"`
		Reason   string         `json:"reason"`
		Evidence map[string]any `json:"evidence"`
		Findings []struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"findings"`
	} `json:"stages"`
}

// TestMergeVerifyFixtures runs gatehost merge-verify on each scenario of the
// merge gate's acceptance list, against a repository built here with git.
func TestMergeVerifyFixtures(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := newFixture(t)
	marker := filepath.Join(t.TempDir(), "check-ran")
	cfg := mergeConfig(t, marker)
	fp := filepath.Join(t.TempDir(), "footprint.json")
	require.NoError(t, os.WriteFile(fp, []byte(`[{"file":"calc.go","symbol":"Add"}]`), 0o644))
	waiver := filepath.Join(t.TempDir(), "waiver.json")
	require.NoError(t, os.WriteFile(waiver, []byte(`{"reason":"documentation only","approved_by":"release-manager","scope":["**/*.md","*.md"]}`), 0o644))

	tests := []struct {
		name, head, pipeline string
		extra                []string
		wantExit             int
		wantVerdict, basis   string
		wantCode             string // a finding that must be present
		wantCheckRan         bool
		check                func(t *testing.T, d mergeDecision)
	}{
		{name: "clean change, go test passes", head: "clean", pipeline: "merge", wantExit: exitAccepted, wantVerdict: "accepted", basis: "verified", wantCheckRan: true},
		{name: "failing test", head: "failing", pipeline: "merge", wantExit: exitRejected, wantVerdict: "rejected", wantCode: "build_test_failed", wantCheckRan: true,
			check: func(t *testing.T, d mergeDecision) {
				bt := d.Stages[0].Evidence["checks"].(map[string]any)["build_test"].(map[string]any)
				assert.EqualValues(t, 1, bt["exit_code"])
				assert.Contains(t, bt["output_tail"], "FAIL")
			}},
		{name: "no command configured", head: "docs", pipeline: "merge-nocheck", wantExit: exitInconclusive, wantVerdict: "inconclusive"},
		{name: "no command plus a waiver", head: "docs", pipeline: "merge-nocheck", extra: []string{"--waiver", waiver}, wantExit: exitAccepted, wantVerdict: "accepted", basis: "waived"},
		{name: "waiver out of scope", head: "clean", pipeline: "merge-nocheck", extra: []string{"--waiver", waiver}, wantExit: exitInconclusive, wantVerdict: "inconclusive", wantCode: "waiver_out_of_scope"},
		{name: "edit outside the footprint", head: "outside", pipeline: "merge", extra: []string{"--footprint", fp}, wantExit: exitRejected, wantVerdict: "rejected", wantCode: "containment_violation",
			check: func(t *testing.T, d mergeDecision) {
				assert.Equal(t, "Sub", d.Stages[0].Findings[0].Details["symbol"])
				assert.Contains(t, d.Stages[0].Findings[0].Message, "Sub")
			}},
		{name: "inside the footprint", head: "clean", pipeline: "merge", extra: []string{"--footprint", fp}, wantExit: exitAccepted, wantVerdict: "accepted", basis: "verified", wantCheckRan: true},
		{name: "two func Add in one file", head: "duplicate", pipeline: "merge", wantExit: exitRejected, wantVerdict: "rejected", wantCode: "duplicate_declaration"},
		{name: "policy-denied path", head: "workflow", pipeline: "merge", extra: []string{"--waiver", waiver}, wantExit: exitRejected, wantVerdict: "rejected", wantCode: "policy_denied",
			check: func(t *testing.T, d mergeDecision) {
				bt := d.Stages[0].Evidence["checks"].(map[string]any)["build_test"].(map[string]any)
				assert.Equal(t, "not_run", bt["status"])
			}},
		{name: "unparsable file, build passes", head: "unparsed-ok", pipeline: "merge", wantExit: exitAccepted, wantVerdict: "accepted", basis: "verified", wantCode: "unparsed_changed_file", wantCheckRan: true,
			check: func(t *testing.T, d mergeDecision) {
				assert.Equal(t, []any{"testdata/broken.go"}, d.Stages[0].Evidence["unparsed_changed_files"])
			}},
		{name: "unparsable file, build fails", head: "unparsed-bad", pipeline: "merge", wantExit: exitRejected, wantVerdict: "rejected", wantCode: "build_test_failed", wantCheckRan: true,
			check: func(t *testing.T, d mergeDecision) {
				assert.Equal(t, []any{"extra.go"}, d.Stages[0].Evidence["unparsed_changed_files"])
			}},
		{name: "check past the stage deadline", head: "clean", pipeline: "merge-slow", wantExit: exitInconclusive, wantVerdict: "inconclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(marker)
			args := append([]string{"merge-verify", "--config", cfg, "--pipeline", tt.pipeline, "--output", "json",
				"--repo", r.dir, "--base", "main", "--head", tt.head}, tt.extra...)
			code, out, errOut := runCLI(args...)
			require.Equal(t, tt.wantExit, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			var d mergeDecision
			require.NoError(t, json.Unmarshal([]byte(out), &d), out)
			assert.Equal(t, tt.wantVerdict, d.Verdict)
			assert.Equal(t, tt.basis, d.Stages[0].Basis)
			if tt.wantCode != "" {
				var codes []string
				for _, f := range d.Stages[0].Findings {
					codes = append(codes, f.Code)
				}
				assert.Contains(t, codes, tt.wantCode)
			}
			_, err := os.Stat(marker)
			assert.Equal(t, tt.wantCheckRan, err == nil, "did the build/test run?")
			if tt.check != nil {
				tt.check(t, d)
			}
			// The temporary worktree is gone, whatever the verdict.
			assert.Equal(t, 1, strings.Count(r.git("worktree", "list", "--porcelain"), "worktree "), "worktrees left behind")
		})
	}

	// The waiver is in the event log, and the chain holds.
	b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"approved_by":"release-manager"`)
	code, _, errOut := runCLI("log", "verify", "--config", cfg)
	assert.Equal(t, 0, code, errOut)
}

func TestMergeVerifyUsageErrors(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := fixtureRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	r.write(map[string]string{"a.txt": "a"})
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "base")
	cfg := mergeConfig(t, filepath.Join(t.TempDir(), "m"))
	bad := filepath.Join(t.TempDir(), "waiver.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"reason":"x","scope":["**"]}`), 0o644))
	unknown := filepath.Join(t.TempDir(), "fp.json")
	require.NoError(t, os.WriteFile(unknown, []byte(`[{"file":"a.go","symbol":"A","extra":1}]`), 0o644))
	for _, tt := range []struct {
		name     string
		args     []string
		contains string
	}{
		{"missing flags", []string{"--repo", r.dir}, ""},
		{"unknown ref", []string{"--repo", r.dir, "--base", "main", "--head", "nope"}, "not a commit"},
		{"option-like ref", []string{"--repo", r.dir, "--base", "main", "--head", "--output=x"}, "bad revision"},
		{"waiver without approver", []string{"--repo", r.dir, "--base", "main", "--head", "main", "--waiver", bad}, "approved_by"},
		{"footprint with unknown field", []string{"--repo", r.dir, "--base", "main", "--head", "main", "--footprint", unknown}, "extra"},
		{"not a merge pipeline", []string{"--repo", r.dir, "--base", "main", "--head", "main", "--pipeline", "nope"}, "nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(append([]string{"merge-verify", "--config", cfg, "--pipeline", "merge"}, tt.args...)...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tt.contains)
		})
	}
}
