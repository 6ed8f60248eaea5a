//go:build !unix

package engine

import rt "github.com/gatehost/gatehost/internal/engine/wasmrt"

// reserveMemory has no reservation off unix: the slice fallback is used.
func reserveMemory(uint64) rt.LinearMemory { return nil }

func unmapMemory([]byte) {}
