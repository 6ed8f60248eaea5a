package host

import "github.com/gatehost/gatehost/internal/safefile"

// Errors for a file the configuration names that is of the wrong kind or
// too large: a plugin module (PluginConfig.Path), the event log
// (EventLogPath) and what host/catalog, host/domain, host/datasource and
// host/session read. Such a file is refused as it is opened — a named pipe
// never blocks, a device is never read — and no more than its cap plus one
// byte is read. errors.Is(err, host.ErrNotRegular) matches.
var (
	// ErrNotRegular: a named pipe, device, socket or directory where a
	// regular file is expected (symbolic links are followed).
	ErrNotRegular = safefile.ErrNotRegular
	// ErrNotDir: something other than a directory where one is expected.
	ErrNotDir = safefile.ErrNotDir
	// ErrFileTooLarge: a file over its cap, such as MaxModuleFileBytes.
	ErrFileTooLarge = safefile.ErrTooLarge
)

// MaxModuleFileBytes caps a plugin module read from PluginConfig.Path:
// 64 MiB, about ten times the largest built-in gate (a Go module of 5.5 MiB).
const MaxModuleFileBytes = 64 << 20
