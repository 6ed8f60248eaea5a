package engine

import (
	"context"
	"sync/atomic"

	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// Guest linear memory.
//
// Left to itself, wazero grows a memory with append: every memory.grow past
// the current capacity allocates a larger Go slice and copies the old one,
// which stays on the heap until the next GC. A guest growing in steps to a
// 1 GiB cap so held the old and new buffers at once, plus append's headroom,
// and peaked at 3.6-4.4 GB of host memory. The allocator here instead
// reserves the memory's maximum once as address space (mmap, no swap
// reserved, nothing touched) and grows by reslicing it: nothing is copied,
// and the host pays only for the pages the guest actually touches, at most
// the memory limit. See docs/RATIONALE.md "Guest memory: reserved, not
// reallocated".

// withGuestMemory returns ctx carrying the allocator for instances
// instantiated under it.
func withGuestMemory(ctx context.Context) context.Context {
	return rt.WithMemoryAllocator(ctx, allocateMemory)
}

// allocateMemory returns a memory able to grow to maxBytes without moving:
// a reservation where the platform has one, else a Go slice grown by
// copying (as wazero does without an allocator).
func allocateMemory(capBytes, maxBytes uint64) rt.LinearMemory {
	if m := reserveMemory(maxBytes); m != nil {
		return m
	}
	return &sliceMemory{buf: make([]byte, 0, capBytes), max: maxBytes}
}

// sliceMemory is the fallback: a Go slice, reallocated when it grows past
// its capacity.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	b := make([]byte, size)
	copy(b, m.buf)
	m.buf = b
	return b
}

func (m *sliceMemory) Free() { m.buf = nil }

// mapping is one reserved region; freed makes unmapping happen once, from
// Free or, for an instance wazero closed without releasing its resources
// (a call stopped by its context, then closed), from a GC cleanup.
type mapping struct {
	region []byte
	freed  atomic.Bool
}

func (p *mapping) release() {
	if p.freed.CompareAndSwap(false, true) {
		unmapMemory(p.region)
	}
}
