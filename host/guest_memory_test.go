package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// TestGuestMemoryFlat runs 1,500 admission decisions on one instance per
// gate and checks that the guests' linear memory stays where it was after
// the first 150, and that no instance was discarded. A standard-Go guest
// runs only inside calls; before gate_evaluate yielded to the GC's
// workers, a GC cycle could stay unfinished across calls and an instance
// grew by tens of MiB within a few hundred decisions until it ran out of
// memory.
func TestGuestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("1,500 decisions")
	}
	r := newAdmissionRig(t)
	cfg := r.cfg
	cfg.PoolSize = 1
	h := hosttest.New(t, cfg)
	ctx := context.Background()
	guest := func() (sv, pc uint64) {
		_, sv, err := host.FillPool(ctx, h, "static-verify")
		require.NoError(t, err)
		_, pc, err = host.FillPool(ctx, h, "preconditions")
		require.NoError(t, err)
		return sv, pc
	}
	var sv0, pc0 uint64
	for i := 1; i <= 1500; i++ {
		r.check(t, h)
		if i == 150 {
			sv0, pc0 = guest()
		}
	}
	sv, pc := guest()
	assert.LessOrEqual(t, sv, sv0+sv0/10, "static-verify guest memory grew from %d to %d bytes", sv0, sv)
	assert.LessOrEqual(t, pc, pc0+pc0/10, "preconditions guest memory grew from %d to %d bytes", pc0, pc)
	for _, p := range []string{"static-verify", "preconditions"} {
		_, discarded := host.InstanceCounts(h, p)
		assert.Zero(t, discarded, p)
	}
}
