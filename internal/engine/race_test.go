//go:build race

package engine

// raceEnabled: the race detector is on, and compiling a Go gate module
// takes minutes instead of seconds.
const raceEnabled = true
