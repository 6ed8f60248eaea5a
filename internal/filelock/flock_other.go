//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filelock

import "os"

func lock(*os.File, bool) error { return nil }
