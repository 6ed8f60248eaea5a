package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeApprovalTTLFlag: --approval-ttl out of 1s..24h is a usage error
// (0 too, although the library reads a zero TTL as the default).
func TestServeApprovalTTLFlag(t *testing.T) {
	for _, v := range []string{"0s", "999ms", "-1m", "25h"} {
		code, _, errOut := runCLI("serve", "--approval-ttl", v)
		assert.Equal(t, exitUsage, code, v)
		assert.Contains(t, errOut, "--approval-ttl", v)
	}
}

// TestServeSIGHUPReloads: the command reloads its config on SIGHUP — a
// good config is swapped in, a bad one is logged and the old one keeps
// serving — and exits 0 on SIGTERM.
func TestServeSIGHUPReloads(t *testing.T) {
	cfg := writeConfig(t, "")
	cmd := exec.Command(os.Args[0], "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--watch-interval", "0")
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// waitFor reads log lines until one contains want; the bound only
	// ends a hang.
	waitFor := func(want string) string {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "the server exited before logging %q", want)
				if strings.Contains(l, want) {
					return l
				}
			case <-deadline:
				t.Fatalf("no log line with %q", want)
			}
		}
	}
	waitFor("gatehost serve: ready")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	assert.Contains(t, waitFor("gatehost serve: config reloaded"), "config_generation=2")

	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, append(good, "colour: blue\n"...), 0o644))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	assert.Contains(t, waitFor("reload failed"), `unknown key \"colour\"`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitFor("gatehost serve: stopped")
	for range lines { // drain until the pipe closes
	}
	require.NoError(t, cmd.Wait(), "exit 0 on SIGTERM")
}
