package engine

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// TestOutOfMemoryAtTheLimit: a guest that grows its memory to the limit and
// traps is out of memory, not trapped, at every limit up to the largest,
// 4 GiB (65536 pages), whose byte size a uint32 cannot hold.
func TestOutOfMemoryAtTheLimit(t *testing.T) {
	if !rt.MemoryAllocatorSupported {
		t.Skip("without a reserving allocator, growing to 4 GiB allocates 4 GiB")
	}
	for _, c := range []struct {
		pages uint32
		wat   string
	}{
		{65536, "testdata/hostile/memory-grow-4gib.wat"},
		{65535, "testdata/hostile/memory-grow.wat"},
		{16, "testdata/hostile/memory-grow.wat"},
		{65, "testdata/hostile/memory-touch-grow.wat"}, // 1 + 4×16 pages
	} {
		t.Run(strconv.Itoa(int(c.pages))+" pages "+c.wat, func(t *testing.T) {
			e := newTestEngine(t, Options{MemoryLimitPages: c.pages})
			ctx := context.Background()
			m, err := e.Compile(ctx, wat(t, c.wat))
			require.NoError(t, err)
			inst, err := m.Instantiate(ctx)
			require.NoError(t, err)
			defer inst.Close(ctx)
			_, err = inst.Evaluate(ctx, nil, []byte(`{}`), 1<<20)
			var f *Fault
			require.ErrorAs(t, err, &f)
			assert.Equal(t, abi.ReasonPluginOutOfMemory, f.Reason)
			assert.Greater(t, inst.MemoryBytes()+PageSize, uint64(c.pages)*PageSize-16*PageSize, "memory ends near the limit")
			assert.LessOrEqual(t, inst.MemoryBytes(), uint64(c.pages)*PageSize)
		})
	}
}

// TestMemoryBytesFullRange: the byte size of a 4 GiB memory is 2^32, not 0.
func TestMemoryBytesFullRange(t *testing.T) {
	for _, pages := range []uint32{0, 1, 65535, 65536} {
		assert.Equal(t, uint64(pages)*PageSize, memoryBytes(fakeMemory(pages)))
	}
}

type fakeMemory uint32

func (m fakeMemory) Grow(delta uint32) (uint32, bool) { return uint32(m), delta == 0 }

func TestAllocateMemory(t *testing.T) {
	m := allocateMemory(PageSize, 4*PageSize)
	b := m.Reallocate(PageSize)
	require.Len(t, b, PageSize)
	b[0] = 1
	b = m.Reallocate(4 * PageSize)
	require.Len(t, b, 4*PageSize)
	assert.Equal(t, byte(1), b[0], "growing keeps the contents")
	b[4*PageSize-1] = 2
	assert.Nil(t, m.Reallocate(5*PageSize), "past the maximum")
	m.Free()
	m.Free() // twice is harmless
	s := &sliceMemory{max: 2 * PageSize}
	assert.Len(t, s.Reallocate(PageSize), PageSize)
	assert.Nil(t, s.Reallocate(3*PageSize))
}

// resetPeakRSS resets the process's peak resident set (Linux clear_refs);
// false where that cannot be done.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSKiB is the process's peak resident set (VmHWM), or -1 off Linux.
func peakRSSKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// growthPeak runs memory-touch-grow.wat (memory grown 1 MiB at a time,
// every page touched, to limitPages) on one instance and returns the rise
// of the process's peak RSS, in KiB.
func growthPeak(tb testing.TB, limitPages uint32) int64 {
	e := newTestEngine(tb.(*testing.T), Options{MemoryLimitPages: limitPages})
	ctx := context.Background()
	m, err := e.Compile(ctx, wat(tb.(*testing.T), "testdata/hostile/memory-touch-grow.wat"))
	require.NoError(tb, err)
	inst, err := m.Instantiate(ctx)
	require.NoError(tb, err)
	if !resetPeakRSS() {
		tb.Skip("peak RSS cannot be reset here")
	}
	base := peakRSSKiB()
	_, err = inst.Evaluate(ctx, nil, []byte(`{}`), 1<<20)
	require.Error(tb, err)
	peak := peakRSSKiB()
	require.NoError(tb, inst.Close(ctx))
	return peak - base
}

// TestMemoryGrowthHostCost: growing a guest memory in steps to its limit
// costs the host about the limit, once: growth neither copies nor keeps old
// buffers. It logs the figure docs/CONFIGURATION.md "Host memory per
// instance" states.
func TestMemoryGrowthHostCost(t *testing.T) {
	if !rt.MemoryAllocatorSupported {
		t.Skip("wazy reallocates a growing memory")
	}
	const limitMiB = 256
	rise := growthPeak(t, limitMiB*16)
	t.Logf("peak RSS rise growing one instance to %d MiB in 1 MiB steps: %d MiB", limitMiB, rise>>10)
	if rise < 0 {
		t.Skip("no peak RSS here")
	}
	// Touched pages are the floor; copies would add up to twice as much.
	assert.Less(t, rise, int64(limitMiB*1024*5/4), "host cost stays near the limit")
	assert.Greater(t, rise, int64(limitMiB*1024*3/4), "the measurement sees the touched pages")
}
