package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/apart"
)

// The check capability (abi.CapabilityCheck) lets a stage run a build/test
// command the operator configured by name (operation check.run; abi/SPEC.md
// §7.11).
func init() { registerCapability(abi.CapabilityCheck, checkCapability{}) }

// Defaults of CheckCommand.
const (
	DefaultCheckTimeout = 10 * time.Minute
	// CheckOutputTail is how many bytes of a check's combined output are
	// kept (the end).
	CheckOutputTail = 4096
)

// CheckCommand is a build/test command the check capability may run.
type CheckCommand struct {
	// Argv is the program and its arguments, run without a shell in the
	// run's worktree (RunOptions.Worktree). The program is looked up in
	// PATH when it has no slash.
	Argv []string
	// Timeout bounds one run; default 10m. A run past it is killed (its
	// whole process group, on Unix) and reported failed, timed_out.
	Timeout time.Duration
	// Env adds KEY=VALUE entries to the host's environment.
	Env []string
}

// validateChecks refuses a check without a command.
func validateChecks(checks map[string]CheckCommand) error {
	for name, c := range checks {
		f := "checks." + name
		switch {
		case !nameRE.MatchString(name):
			return cfgErr(f, "name must match %s", nameRE)
		case len(c.Argv) == 0 || c.Argv[0] == "":
			return cfgErr(f+".command", "required")
		case c.Timeout < 0:
			return cfgErr(f+".timeout", "must be positive")
		}
	}
	return nil
}

type checkCapability struct{}

func (checkCapability) call(ctx context.Context, rc *runContext, op string, request []byte) (any, error) {
	if op != abi.OpCheckRun {
		return nil, unknownOperation(op)
	}
	var req abi.CheckRunRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, badRequest(op, err)
	}
	cmd, ok := rc.host.cfg.Checks[req.Name]
	if !ok {
		return abi.CheckRunAnswer{Name: req.Name, Status: abi.CheckNotConfigured, ExitCode: -1}, nil
	}
	if rc.worktree == "" {
		return nil, errors.New("check: the run has no worktree to run in")
	}
	rc.host.logger.Debug("host: running check", "check", req.Name, "argv", cmd.Argv, "dir", rc.worktree, "run_id", rc.runID)
	return runCheck(ctx, req.Name, cmd, rc.worktree)
}

// checkWaitDelay is how long a check's Wait waits for its output pipes
// after the process exited or was killed (exec.Cmd.WaitDelay).
var checkWaitDelay = 5 * time.Second

// runCheck runs c in dir. It returns an error only when the command could
// not be started or ctx (the stage) ended first: then nothing is known, and
// it returns as ctx ends, whatever the command's processes do.
func runCheck(ctx context.Context, name string, c CheckCommand, dir string) (abi.CheckRunAnswer, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || !filepath.IsAbs(dir) {
		return abi.CheckRunAnswer{}, fmt.Errorf("check: worktree %q is not an absolute directory", dir)
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultCheckTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), c.Env...)
	out := &tailBuffer{max: CheckOutputTail}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = checkWaitDelay
	killGroup(cmd)
	start := time.Now()
	// The stage runs its guest on its own goroutine and ends when the guest
	// does, so the check must end with ctx: killing the process group is
	// not enough, since a process that left the group can hold the output
	// pipe open and Wait then waits up to WaitDelay. Run waits apart, and
	// the stage does not wait for it.
	runErr, err := apart.Run(ctx, cmd.Run)
	if err != nil {
		if errors.Is(err, apart.ErrAbandoned) {
			return abi.CheckRunAnswer{}, fmt.Errorf("check %s: %w", name, ctx.Err())
		}
		return abi.CheckRunAnswer{}, fmt.Errorf("check %s: %w", name, err)
	}
	a := abi.CheckRunAnswer{Name: name, DurationMS: time.Since(start).Milliseconds(), OutputTail: out.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil: // the stage ended: not an outcome of the check
		return abi.CheckRunAnswer{}, fmt.Errorf("check %s: %w", name, ctx.Err())
	case cctx.Err() != nil:
		a.Status, a.ExitCode, a.TimedOut = abi.CheckFailed, -1, true
	case runErr == nil:
		a.Status, a.ExitCode = abi.CheckPassed, 0
	case errors.As(runErr, &exitErr):
		a.Status, a.ExitCode = abi.CheckFailed, exitErr.ExitCode()
	default:
		return abi.CheckRunAnswer{}, fmt.Errorf("check %s: %w", name, runErr)
	}
	return a, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped > 0 {
		return fmt.Sprintf("[%d bytes dropped]\n%s", t.dropped, t.buf)
	}
	return string(t.buf)
}
