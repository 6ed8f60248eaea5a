package host_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// rssKiB is the process's resident set (VmRSS), or 0 off Linux.
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			if f := bytes.Fields(rest); len(f) > 0 {
				v, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return v
			}
		}
	}
	return 0
}

func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	time.Sleep(50 * time.Millisecond)
	return rssKiB()
}

// BenchmarkIdleInstanceRSS measures what one idle, warm static-verify
// instance adds to the host's resident set: RSS with a pool of 16 idle
// instances (each has served one decision) minus RSS with one, over 15. It
// reports KiB/instance (process RSS) and guest-KiB/instance (the instance's
// linear memory, the upper bound of what it can keep resident). The figure
// is measured once; b.N only repeats a no-op.
func BenchmarkIdleInstanceRSS(b *testing.B) {
	const k = 16
	r := newAdmissionRig(b)
	cfg := r.cfg
	cfg.PoolSize = k
	h := hosttest.New(b, cfg)
	ctx := context.Background()
	r.check(b, h) // the probe instance has served a decision
	base := settledRSS()
	n, guest, err := host.FillPool(ctx, h, "static-verify")
	if err != nil || n != k {
		b.Fatal(n, err)
	}
	// Each instance serves one decision, so it is warm: the guest's heap
	// and caches are what an idle pooled instance keeps between runs.
	for range 2 * k {
		r.check(b, h)
	}
	_, guest, _ = host.FillPool(ctx, h, "static-verify")
	full := settledRSS()
	for b.Loop() {
	}
	b.ReportMetric(float64(full-base)/float64(k-1), "KiB/instance")
	b.ReportMetric(float64(guest)/1024/float64(k), "guest-KiB/instance")
}
