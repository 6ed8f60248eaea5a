//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package engine

// lockingWorks: internal/filelock takes real flock(2) locks here.
const lockingWorks = true
