package main

import (
	"io/fs"
	"os"

	"github.com/gatehost/gatehost/internal/safefile"
)

// maxOperatorFileBytes caps merge-verify's --footprint and --waiver
// (README "Configuration"); the config file's cap is config.MaxFileBytes,
// serve's files' are in package server.
const maxOperatorFileBytes = 4 << 20

// writeRegularFile writes data to a new or truncated regular file, as
// os.WriteFile does, refusing a named pipe or device at the path (which
// would block the write or swallow it).
func writeRegularFile(path string, data []byte, perm fs.FileMode) error {
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
