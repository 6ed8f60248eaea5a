//go:build unix

package host

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd lead its own process group and, on cancellation, kills
// the whole group, so that a test binary started by "go test" dies with it.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
