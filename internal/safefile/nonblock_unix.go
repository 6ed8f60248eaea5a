//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// oNonblock makes opening a named pipe return at once instead of waiting
// for the other end.
const oNonblock = syscall.O_NONBLOCK

// clearNonblock puts a regular file's descriptor back in blocking mode: the
// flag served only the open, and the file is not in Go's poller.
func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
