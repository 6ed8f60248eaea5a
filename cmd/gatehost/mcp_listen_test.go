package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/mcpgateway"
)

// TestMCPListenMetricsAndReload: gatehost mcp --listen serves /metrics
// with the decisions, the upstreams' health and the open sessions after a
// call, and reloads its config on SIGHUP as gatehost serve does: a broken
// config leaves the running one deciding (the failure counted), and a
// pipeline that now asks for a confirmation refuses the call it accepted.
func TestMCPListenMetricsAndReload(t *testing.T) {
	server := memoryServer(t)
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	cmd, base, _ := listenMCP(t, []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")},
		"--config", cfg, "--listen", "127.0.0.1:0", "--watch-interval", "0", "--upstream-name", "memory", "--", server)

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, sessionfulClient)
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	create := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
			"entities": []map[string]any{{"name": name, "entityType": "person", "observations": []string{}}}}})
		require.NoError(t, err)
		return res
	}
	require.False(t, create("alice").IsError)

	metrics := func() string {
		t.Helper()
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	body := metrics()
	for _, want := range []string{
		`gatehost_decisions_total{pipeline="gated",verdict="accepted"} 1`,
		`gatehost_mcp_upstream_state{state="up",upstream="memory"} 1`,
		`gatehost_mcp_sessions_open 1`,
		`gatehost_config_generation 1`,
	} {
		assert.Contains(t, body, want)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + probe)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, probe)
	}

	confirmCreate := strings.Replace(string(good), `confirm_tools: ["mcp.memory:delete_entities"]`,
		`confirm_tools: ["mcp.memory:delete_entities", "mcp.memory:create_entities"]`, 1)
	require.NotEqual(t, string(good), confirmCreate)
	for _, tc := range []struct {
		name   string
		config string
		// after is what /metrics shows once the reload is done.
		after   string
		refused bool
	}{
		{name: "broken config: the running one keeps deciding", config: "pipelines: [\n",
			after: `gatehost_config_reloads_total{result="failure"} 1`},
		{name: "a config changing mcp: needs a restart", config: strings.Replace(string(good), "activate_on_list", "core: []\n    activate_on_list", 1),
			after: `gatehost_config_reloads_total{result="failure"} 2`},
		{name: "create_entities now needs a confirmation", config: confirmCreate, refused: true,
			after: `gatehost_config_generation 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(cfg, []byte(tc.config), 0o644))
			require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
			require.Eventually(t, func() bool { return strings.Contains(metrics(), tc.after) }, time.Minute, 50*time.Millisecond)
			res := create("bob-" + strings.ReplaceAll(tc.name, " ", "-")[:5])
			if !tc.refused {
				assert.False(t, res.IsError, "the previous config keeps serving")
				assert.Contains(t, metrics(), `gatehost_config_generation 1`)
				return
			}
			assert.True(t, res.IsError)
			assert.Contains(t, fmt.Sprint(res.Meta[mcpgateway.MetaDecision]), abi.CodeConfirmationRequired)
		})
	}
	assert.Contains(t, metrics(), `gatehost_decisions_total{pipeline="gated",verdict="rejected"} 1`)
}

// listenMCP starts `gatehost mcp ARGS` (--listen) as a child process with
// env added, and returns it, the base URL it serves, and its stderr, read
// on until the process ends.
func listenMCP(t *testing.T, env []string, args ...string) (*exec.Cmd, string, *stderrLog) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, append([]string{"mcp"}, args...)...)
	cmd.Env = append(append(os.Environ(), cliChildEnv+"=1"), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	urlRE := regexp.MustCompile(`url=(http://\S+)/mcp`)
	l := &stderrLog{done: make(chan struct{})}
	lines := bufio.NewScanner(stderr)
	base := ""
	for base == "" && lines.Scan() {
		l.add(lines.Text())
		if m := urlRE.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
	}
	require.NotEmpty(t, base, "gatehost mcp never said where it listens")
	go func() {
		defer close(l.done)
		for lines.Scan() {
			l.add(lines.Text())
		}
	}()
	return cmd, base, l
}

// stderrLog is a child's stderr; done is closed when it has ended.
type stderrLog struct {
	mu   sync.Mutex
	b    strings.Builder
	done chan struct{}
}

func (l *stderrLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line + "\n")
}

func (l *stderrLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMCPListenSharedUpstream: 40 sessions at once over gatehost mcp
// --listen, each listing the tools and calling one, are served by the 2
// processes of server-memory its config allows (each start writes its
// pid, counted here), not one process per session.
func TestMCPListenSharedUpstream(t *testing.T) {
	server := memoryServer(t)
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cfg := writeMCPConfig(t, fmt.Sprintf(`  pipeline: gated
  upstreams:
    memory:
      command: [sh, -c, 'echo $$ >> %s && exec %s']
      env: ["MEMORY_FILE_PATH=%s"]
      processes: 2
  sessions: {activate_on_list: ["*"]}
  max_sessions: 64
  max_sessions_per_principal: 64
`, pids, server, filepath.Join(dir, "memory.jsonl")))
	_, base, logs := listenMCP(t, nil, "--config", cfg, "--listen", "127.0.0.1:0", "--watch-interval", "0")
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- func() error {
				ctx := context.Background()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, sessionfulClient)
				if err != nil {
					return err
				}
				defer cs.Close()
				if _, err := cs.ListTools(ctx, nil); err != nil {
					return err
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
				if err != nil {
					return err
				}
				if res.IsError {
					return fmt.Errorf("session %d: read_graph refused", i)
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, logs.String())
	}
	b, err := os.ReadFile(pids)
	require.NoError(t, err)
	started := strings.Fields(string(b))
	t.Logf("%d sessions, %d upstream processes started: %v", n, len(started), started)
	assert.Len(t, started, 2, "at most the 2 configured, and each given sessions in turn")
}
