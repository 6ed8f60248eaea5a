package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/errors")

// TestBadInputGolden: each bad input at the CLI edge exits 2 with a one-line
// error naming the file and the field or key, never a stack trace. The
// messages are golden files (testdata/errors/<case>.txt; the test's temp
// directory reads $DIR); -update rewrites them.
func TestBadInputGolden(t *testing.T) {
	good := func(dir string) string {
		return fmt.Sprintf(`
cache_dir: %s
event_log:
  path: events.jsonl
plugins:
  sv:
    path: %s
pipelines:
  admission:
    subject: proposal
    stages:
      - plugin: sv
        timeout: 60s
        capabilities: [catalog, schema]
`, testwasm.CacheDir(), svWasm)
	}
	const subj = "proposal.json"
	tests := []struct {
		name   string
		config func(dir string) string
		files  map[string]string // extra files in the temp dir
		args   []string          // after check --config
	}{
		{name: "malformed-yaml", config: func(string) string { return "pipelines:\n  admission: [\n    subject: proposal\n" }},
		{name: "unknown-key", config: func(d string) string { return good(d) + "colour: blue\n" }},
		{name: "unknown-stage-key", config: func(d string) string { return good(d) + "        retries: 3\n" }},
		{name: "missing-plugin-file", config: func(d string) string {
			return strings.Replace(good(d), svWasm, "plugins/missing.wasm", 1)
		}},
		{name: "sha256-mismatch", config: func(d string) string {
			return strings.Replace(good(d), "path: "+svWasm, "path: "+svWasm+"\n    sha256: "+strings.Repeat("ab", 32), 1)
		}},
		{name: "plugin-path-directory", config: func(d string) string {
			return strings.Replace(good(d), svWasm, ".", 1)
		}},
		{name: "event-log-device", config: func(d string) string {
			return strings.Replace(good(d), "path: events.jsonl", "path: /dev/zero", 1)
		}},
		{name: "unknown-pipeline", config: good, args: []string{"--pipeline", "nope"}},
		{name: "empty-pipeline", config: func(d string) string { return good(d) + "  empty:\n    subject: proposal\n    stages: []\n" }},
		{name: "subject-not-json", config: good, files: map[string]string{subj: "actions: [get_me]\n"}},
		{name: "subject-wrong-kind", config: good, files: map[string]string{subj: `{"tool":"get_me","arguments":{}}`}, args: []string{"--format", "native"}},
		{name: "catalog-invalid-schema", config: func(d string) string {
			return good(d) + "catalog:\n  sources:\n    - format: native\n      path: tools.json\n"
		}, files: map[string]string{"tools.json": `{"tools":[{"name":"get_me","input_schema":{"type":"object","properties":{"x":{"type":5}}}}]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{subj: `{"actions":[{"tool":"get_me"}]}`}
			for k, v := range tt.files {
				files[k] = v
			}
			for name, body := range files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
			}
			cfg := filepath.Join(dir, "gatehost.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(tt.config(dir)), 0o644))
			args := append([]string{"check", "--config", cfg}, tt.args...)
			code, out, errOut := runCLI(append(args, filepath.Join(dir, subj))...)
			assert.Equal(t, exitUsage, code, "stdout: %s", out)
			assert.Empty(t, out)
			assert.NotContains(t, errOut, "goroutine ")
			assert.NotContains(t, errOut, "panic")
			got := strings.ReplaceAll(errOut, dir, "$DIR")
			// The module's own digest changes with every build of the gate.
			got = strings.ReplaceAll(got, moduleSHA256(t, svWasm), "$MODULE_SHA256")
			assert.Equal(t, 1, strings.Count(got, "\n"), "one line: %q", got)
			golden := filepath.Join("testdata", "errors", tt.name+".txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}

func moduleSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
