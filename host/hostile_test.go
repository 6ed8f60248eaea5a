package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/engine/wasmrt"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// hostileKind is one kind of broken or malicious plugin, and how the host
// must end it.
type hostileKind struct {
	name string
	// wat is a module under testdata/hostile; otherwise the Go guest
	// internal/testing/testguests/hostile runs with proposal id goID.
	wat  string
	goID string
	// wantReason is the stage's reason; wantLoad the load refusal's kind
	// (then the host must refuse to start).
	wantReason string
	wantLoad   error
	timeout    time.Duration // stage deadline; default hosttest.Timeout
	memory     uint64        // stage memory limit; default 64 MiB
	// reserves: the kind needs guest memory reserved, not reallocated
	// (wasmrt.MemoryAllocatorSupported), to stay cheap.
	reserves bool
	// check looks at the failed stage's evidence.
	check func(t *testing.T, ev map[string]any)
}

func hostileKinds() []hostileKind {
	const short = 300 * time.Millisecond
	tailBounded := func(t *testing.T, ev map[string]any) {
		for _, k := range []string{"stdout", "stderr"} {
			s, _ := ev[k].(string)
			require.NotEmpty(t, s, k)
			assert.Contains(t, s, "bytes dropped]", k)
			assert.LessOrEqual(t, len(s), 8<<10+64, "%s tail is bounded", k)
		}
	}
	return []hostileKind{
		{name: "unreachable trap", wat: "trap.wat", wantReason: abi.ReasonPluginTrap},
		{name: "Go panic", goID: "panic", wantReason: "gate_panic"},
		{name: "Go nil dereference", goID: "nil", wantReason: "gate_panic"},
		{name: "Go panic on another goroutine", goID: "goroutine-panic", wantReason: abi.ReasonPluginTrap,
			check: func(t *testing.T, ev map[string]any) {
				assert.Contains(t, ev["stderr"], "hostile: panic on another goroutine", "the panic message reaches the evidence")
			}},
		{name: "infinite loop", wat: "infinite-loop.wat", wantReason: abi.ReasonPluginTimeout, timeout: short},
		{name: "Go infinite loop", goID: "loop", wantReason: abi.ReasonPluginTimeout, timeout: 2 * time.Second},
		{name: "loop calling a guest function", wat: "loop-guest-call.wat", wantReason: abi.ReasonPluginTimeout, timeout: short},
		{name: "exponential call tree without loops", wat: "call-tree.wat", wantReason: abi.ReasonPluginTimeout, timeout: short},
		{name: "loop of WASI calls", wat: "loop-wasi.wat", wantReason: abi.ReasonPluginTimeout, timeout: short},
		{name: "loop calling log", wat: "loop-host-log.wat", wantReason: abi.ReasonPluginTimeout, timeout: short},
		// One bulk-memory instruction runs uninterrupted; the stage still
		// ends at its deadline, and the instance is discarded when it returns.
		{name: "memory.fill over a large memory", wat: "bulk-fill.wat", wantReason: abi.ReasonPluginTimeout, timeout: 20 * time.Millisecond, memory: 256 << 20},
		{name: "memory.copy over a large memory", wat: "bulk-copy.wat", wantReason: abi.ReasonPluginTimeout, timeout: 20 * time.Millisecond, memory: 256 << 20},
		{name: "loop calling call", wat: "loop-host-call.wat", wantReason: abi.ReasonPluginTrap,
			check: func(t *testing.T, ev map[string]any) { assert.Contains(t, ev["error"], "host call budget exceeded") }},
		{name: "deep recursion", wat: "deep-recursion.wat", wantReason: abi.ReasonPluginTrap},
		{name: "memory growth beyond the cap", wat: "memory-grow.wat", wantReason: abi.ReasonPluginOutOfMemory, memory: 4 << 20},
		{name: "memory growth in steps, every page touched", wat: "memory-touch-grow.wat", wantReason: abi.ReasonPluginOutOfMemory, memory: 17 << 16},
		{name: "memory growth to the 4 GiB limit", wat: "memory-grow-4gib.wat", wantReason: abi.ReasonPluginOutOfMemory, memory: 4 << 30, reserves: true},
		{name: "Go allocation beyond the cap", goID: "oom", wantReason: abi.ReasonPluginOutOfMemory, memory: 32 << 20},
		{name: "huge allocation in gate_alloc", wat: "huge-alloc.wat", wantReason: abi.ReasonABIViolation},
		{name: "gate_alloc pointer outside memory", wat: "alloc-outside-memory.wat", wantReason: abi.ReasonABIViolation},
		{name: "answer outside memory", wat: "answer-outside-memory.wat", wantReason: abi.ReasonABIViolation},
		{name: "answer of length 0", wat: "zero-length.wat", wantReason: abi.ReasonABIViolation},
		{name: "answer not JSON", wat: "not-json.wat", wantReason: abi.ReasonABIViolation},
		{name: "answer fails the schema", wat: "schema-violation.wat", wantReason: abi.ReasonABIViolation},
		{name: "unknown verdict", wat: "unknown-verdict.wat", wantReason: abi.ReasonABIViolation},
		{name: "accepted without evidence", wat: "accepted-no-evidence.wat", wantReason: abi.ReasonABIViolation},
		{name: "accepted with a reason", wat: "accepted-with-reason.wat", wantReason: abi.ReasonABIViolation,
			check: func(t *testing.T, ev map[string]any) { assert.Contains(t, ev["error"], "/reason") }},
		{name: "case-variant Verdict member", wat: "case-variant-verdict.wat", wantReason: abi.ReasonABIViolation},
		{name: "answer nested 100 000 deep", wat: "deep-nesting.wat", wantReason: abi.ReasonABIViolation,
			check: func(t *testing.T, ev map[string]any) { assert.Contains(t, ev["error"], "nests deeper than 64 levels") }},
		{name: "answer above the size cap", wat: "oversized-answer.wat", wantReason: abi.ReasonABIViolation,
			check: func(t *testing.T, ev map[string]any) { assert.Contains(t, ev["error"], "exceeds the cap of 1048576") }},
		{name: "ungranted capability, then accepts", wat: "ungranted-capability.wat", wantReason: abi.ReasonCapabilityDenied,
			check: func(t *testing.T, ev map[string]any) {
				assert.Equal(t, []string{abi.OpCatalogList}, ev["capability_denied"])
			}},
		{name: "WASI files and environment", wat: "wasi-files-env.wat", wantReason: abi.ReasonPluginTrap},
		{name: "Go reads files and environment", goID: "wasi", wantReason: "gate_error",
			check: func(t *testing.T, ev map[string]any) {
				assert.NotContains(t, ev, "escaped")
				assert.Contains(t, ev["error"], "sandbox held")
			}},
		{name: "proc_exit(0) mid-evaluation", wat: "proc-exit.wat", wantReason: abi.ReasonPluginTrap},
		{name: "megabytes to stdout and stderr", wat: "output-flood.wat", wantReason: abi.ReasonPluginTrap, check: tailBounded},
		{name: "Go megabytes to stdout and stderr", goID: "stdout", wantReason: abi.ReasonPluginTrap, check: tailBounded},
		// Load-time faults: the host refuses to start.
		{name: "missing export", wat: "missing-export.wat", wantLoad: host.ErrMissingExport},
		{name: "no ABI version export", wat: "no-abi-version.wat", wantLoad: host.ErrMissingExport},
		{name: "wrong ABI major", wat: "wrong-abi.wat", wantLoad: host.ErrABIVersion},
		{name: "import from an unknown module", wat: "bad-import.wat", wantLoad: host.ErrForbiddenImport},
		{name: "WASI socket import", wat: "wasi-socket.wat", wantLoad: host.ErrForbiddenImport},
		{name: "slow _initialize", wat: "slow-initialize.wat", wantLoad: host.ErrInstantiate},
		{name: "trapping start function", wat: "start-trap.wat", wantLoad: host.ErrInstantiate},
		{name: "nested-loop compile bomb", wat: "loop-nest-bomb.wat", wantLoad: host.ErrTooComplex},
	}
}

// TestHostilePlugins runs every hostile kind in both stop modes. No hostile
// plugin ever yields accepted; each ends inconclusive with its reason, or
// refuses to load; the host survives; and the next request on the same host
// is served by a fresh instance.
func TestHostilePlugins(t *testing.T) {
	goGuest, err := testwasm.Go("internal/testing/testguests/hostile")
	require.NoError(t, err)
	kinds := hostileKinds()
	var runtimeKinds, loadKinds, accepted int
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if k.reserves && !wasmrt.MemoryAllocatorSupported {
				t.Skipf("%s reallocates a growing memory", wasmrt.Name)
			}
			plugin := host.PluginConfig{Path: goGuest}
			subject := fmt.Sprintf(`{"id":%q,"actions":[]}`, k.goID)
			if k.wat != "" {
				b, err := testwasm.WAT("testdata/hostile/" + k.wat)
				require.NoError(t, err)
				plugin = host.PluginConfig{Module: b}
				subject = okProposal
			}
			hostile := host.StageConfig{Name: "hostile", Plugin: "hostile", Timeout: k.timeout, MemoryLimit: k.memory}
			good := host.StageConfig{Name: "good", Plugin: "good"}
			cfg := host.Config{
				Plugins:  map[string]host.PluginConfig{"hostile": plugin, "good": {Path: flakyWasm}},
				PoolSize: 1, // so "fresh instance" is observable
				Pipelines: map[string]host.PipelineConfig{
					"stop":   {Subject: "proposal", StopOnReject: true, Stages: []host.StageConfig{hostile, good}},
					"all":    {Subject: "proposal", StopOnReject: false, Stages: []host.StageConfig{hostile, good}},
					"advise": {Subject: "proposal", Stages: []host.StageConfig{{Name: "hostile", Plugin: "hostile", Mode: host.Advisory, Timeout: k.timeout, MemoryLimit: k.memory}, good}},
					"good":   {Subject: "proposal", Stages: []host.StageConfig{good}},
				},
				LoadTimeout: 2 * time.Second,
			}
			if k.wantLoad != nil {
				loadKinds++
				cfg.CacheDir = testwasm.CacheDir()
				_, err := host.New(context.Background(), cfg)
				require.Error(t, err)
				assert.ErrorIs(t, err, k.wantLoad)
				var le *host.LoadError
				require.ErrorAs(t, err, &le)
				assert.Equal(t, "hostile", le.Plugin)
				assert.Contains(t, err.Error(), abi.ReasonLoadError)
				return
			}
			runtimeKinds++
			h := hosttest.New(t, cfg)
			ctx := context.Background()
			var lastCreated int64
			for i, p := range []string{"stop", "all", "stop"} {
				d, err := h.Check(ctx, p, []byte(subject), host.RunOptions{})
				require.NoError(t, err)
				if d.Verdict == abi.Accepted {
					accepted++
				}
				require.NotEqual(t, abi.Accepted, d.Verdict, "pipeline %s", p)
				assert.Equal(t, abi.Inconclusive, d.Verdict, "pipeline %s", p)
				st := d.Stages[0]
				assert.Equal(t, abi.Inconclusive, st.Verdict)
				if strings.HasPrefix(st.Reason, "plugin_") || st.Reason == abi.ReasonABIViolation {
					var pe *host.PluginError
					require.ErrorAs(t, d.Err(), &pe)
					assert.Equal(t, st.Reason, pe.Code)
				} else {
					assert.NoError(t, st.Err(), "the gate answered; the host did not decide")
				}
				assert.Equal(t, k.wantReason, st.Reason, "evidence: %v", st.Evidence)
				if k.check != nil {
					k.check(t, st.Evidence)
				}
				// The good stage still ran and accepted: the host survived.
				assert.Equal(t, abi.Accepted, d.Stages[1].Verdict)
				created, discarded := host.InstanceCounts(h, "hostile")
				assert.EqualValues(t, i+1, discarded, "the failed instance is discarded")
				if i > 0 {
					assert.Equal(t, lastCreated+1, created, "each run gets a fresh instance")
				}
				lastCreated = created
			}
			// An advisory hostile stage never decides, and never fails open either.
			d, err := h.Check(ctx, "advise", []byte(subject), host.RunOptions{})
			require.NoError(t, err)
			assert.Equal(t, abi.Inconclusive, d.Stages[0].Verdict)
			// Next request on the same host: served.
			d, err = h.Check(ctx, "good", []byte(okProposal), host.RunOptions{})
			require.NoError(t, err)
			assert.Equal(t, abi.Accepted, d.Verdict)
			if k.goID != "" {
				// The Go guest itself, asked for an honest answer right after
				// failing, answers from a fresh instance (its first evaluation).
				d, err := h.Check(ctx, "all", []byte(`{"id":"fine","actions":[]}`), host.RunOptions{})
				require.NoError(t, err)
				assert.Equal(t, abi.Accepted, d.Verdict)
				assert.Equal(t, json.Number("1"), d.Stages[0].Evidence["evaluations"])
			}
		})
	}
	t.Logf("hostile kinds: %d (%d at run time, %d refused at load); accepted: %d", len(kinds), runtimeKinds, loadKinds, accepted)
	assert.GreaterOrEqual(t, len(kinds), 20)
	assert.Zero(t, accepted)
}
