//go:build unix

package engine

import (
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
	"math"
	"runtime"
	"syscall"
)

// reservedMemory is a memory whose maximum is reserved up front.
type reservedMemory struct{ m *mapping }

// reserveMemory maps maxBytes of private, anonymous, lazily-committed
// memory (MAP_NORESERVE: no swap is set aside; untouched pages cost
// nothing). nil when the mapping fails, and the caller falls back to a
// slice.
func reserveMemory(maxBytes uint64) rt.LinearMemory {
	if maxBytes == 0 || maxBytes > math.MaxInt {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(maxBytes), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	r := &reservedMemory{m: &mapping{region: b}}
	runtime.AddCleanup(r, func(m *mapping) { m.release() }, r.m)
	return r
}

func (r *reservedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(r.m.region)) || r.m.freed.Load() {
		return nil
	}
	return r.m.region[:size:size]
}

func (r *reservedMemory) Free() { r.m.release() }

func unmapMemory(b []byte) { _ = syscall.Munmap(b) }
