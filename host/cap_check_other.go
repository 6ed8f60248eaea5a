//go:build !unix

package host

import "os/exec"

// killGroup kills only the process itself where process groups are not
// available.
func killGroup(*exec.Cmd) {}
