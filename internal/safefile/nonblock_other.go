//go:build !unix

package safefile

import "os"

// oNonblock is 0 where opening a file cannot block on its other end.
const oNonblock = 0

func clearNonblock(*os.File) error { return nil }
