//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package engine

// lockingWorks: internal/filelock does not lock here.
const lockingWorks = false
