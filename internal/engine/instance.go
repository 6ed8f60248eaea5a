package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// outputCap bounds what is kept of a guest's stdout and stderr per call: the
// tail, which is where a Go panic's message is.
const outputCap = 8 << 10

// Fault is a guest call that did not produce an answer, with the stable
// reason code of abi.Reason*.
type Fault struct {
	Reason string
	Err    error
}

func (f *Fault) Error() string { return f.Reason + ": " + f.Err.Error() }
func (f *Fault) Unwrap() error { return f.Err }

// Instance is one instantiation of a Module. It must be used by one
// goroutine at a time, and discarded after any Fault: a guest that trapped
// or panicked may answer later calls with corrupt state.
type Instance struct {
	m              *Module
	mod            rt.Module
	alloc, eval    rt.Function
	describe       rt.Function
	version        rt.Function
	stdout, stderr tailBuffer
	// intr stops the guest when a call's context ends (InterruptRewrite).
	intr interrupter
	// configs are the config digests sent to this instance in full,
	// oldest first, at most abi.ConfigCacheSize (HoldsConfig).
	configs []string
}

// HoldsConfig reports whether digest is among the last
// abi.ConfigCacheSize distinct config digests SentConfig recorded: what a
// gate declaring config_cache still holds (abi/SPEC.md §5.3).
func (i *Instance) HoldsConfig(digest string) bool { return slices.Contains(i.configs, digest) }

// SentConfig records that a request carried the config of digest in full
// and the gate answered it.
func (i *Instance) SentConfig(digest string) {
	if i.HoldsConfig(digest) {
		return
	}
	if len(i.configs) == abi.ConfigCacheSize {
		i.configs = slices.Delete(i.configs, 0, 1)
	}
	i.configs = append(i.configs, digest)
}

// ForgetConfigs drops the record: the gate said it holds a config the
// record says it was sent (config_not_held), so every config is sent in
// full again.
func (i *Instance) ForgetConfigs() { i.configs = nil }

// Instantiate creates an instance and runs its _initialize, if any, under
// ctx: a slow initializer is stopped by ctx's deadline.
func (m *Module) Instantiate(ctx context.Context) (*Instance, error) {
	inst := &Instance{m: m}
	cfg := rt.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _initialize is called below, to classify its failure
		WithStdout(&inst.stdout).
		WithStderr(&inst.stderr)
	mod, err := m.e.rt.InstantiateModule(withGuestMemory(ctx), m.cm, cfg)
	if err != nil {
		return nil, inst.fault(ctx, err)
	}
	inst.mod = mod
	if m.interrupt {
		it, ok := newInterrupter(mod)
		if !ok { // the rewrite always adds it: a module without it cannot be stopped
			_ = mod.Close(context.Background())
			return nil, &Fault{Reason: abi.ReasonPluginTrap, Err: errors.New("rewritten module lacks its interrupt globals")}
		}
		inst.intr = it
	}
	inst.alloc = mod.ExportedFunction(abi.ExportAlloc)
	inst.eval = mod.ExportedFunction(abi.ExportEvaluate)
	inst.describe = mod.ExportedFunction(abi.ExportDescribe)
	inst.version = mod.ExportedFunction(abi.ExportABIVersion)
	if m.initialize {
		if _, err := inst.intr.call(ctx, mod.ExportedFunction(abi.ExportInitialize)); err != nil {
			f := inst.fault(ctx, err)
			_ = mod.Close(context.Background())
			return nil, f
		}
	}
	return inst, nil
}

// Close releases the instance.
func (i *Instance) Close(ctx context.Context) error {
	if i.mod == nil {
		return nil
	}
	return i.mod.Close(ctx)
}

// MemoryBytes is the current size of the instance's memory, in bytes: up
// to 4 GiB, one more than a uint32 holds.
func (i *Instance) MemoryBytes() uint64 { return memoryBytes(i.mod.Memory()) }

// memoryBytes counts pages, not bytes: the runtime's Size is a uint32 of
// bytes and reads 0 for a full 4 GiB memory (65536 pages).
func memoryBytes(mem interface {
	Grow(uint32) (uint32, bool)
}) uint64 {
	pages, _ := mem.Grow(0) // growing by 0 only reports the page count
	return uint64(pages) * PageSize
}

// Output returns the tails of what the guest wrote to stdout and stderr
// during the last call.
func (i *Instance) Output() (stdout, stderr string) { return i.stdout.String(), i.stderr.String() }

// ABIVersion calls gate_abi_version.
func (i *Instance) ABIVersion(ctx context.Context) (int32, error) {
	i.resetOutput()
	res, err := i.intr.call(ctx, i.version)
	if err != nil {
		return 0, i.fault(ctx, err)
	}
	return rt.DecodeI32(res[0]), nil
}

// Describe calls gate_describe and returns a copy of the descriptor JSON,
// at most maxBytes long.
func (i *Instance) Describe(ctx context.Context, maxBytes uint32) ([]byte, error) {
	i.resetOutput()
	res, err := i.intr.call(ctx, i.describe)
	if err != nil {
		return nil, i.fault(ctx, err)
	}
	return i.read(res[0], maxBytes)
}

// Evaluate writes request into the guest, calls gate_evaluate and returns a
// copy of the response, at most maxBytes long. state is handed to the
// CallHandler for the host calls the guest makes meanwhile. Every error is a
// *Fault.
func (i *Instance) Evaluate(ctx context.Context, state any, request []byte, maxBytes uint32) ([]byte, error) {
	i.resetOutput()
	ctx = context.WithValue(ctx, frameKey{}, &frame{state: state})
	res, err := i.intr.call(ctx, i.alloc, uint64(len(request)))
	if err != nil {
		return nil, i.fault(ctx, err)
	}
	ptr := rt.DecodeU32(res[0])
	if ptr == 0 && len(request) > 0 {
		return nil, &Fault{Reason: abi.ReasonABIViolation, Err: fmt.Errorf("%s(%d) returned 0", abi.ExportAlloc, len(request))}
	}
	if !i.mod.Memory().Write(ptr, request) {
		return nil, &Fault{Reason: abi.ReasonABIViolation, Err: fmt.Errorf("%s(%d) returned %#x, outside memory", abi.ExportAlloc, len(request), ptr)}
	}
	res, err = i.intr.call(ctx, i.eval, uint64(ptr), uint64(len(request)))
	if err != nil {
		return nil, i.fault(ctx, err)
	}
	return i.read(res[0], maxBytes)
}

func (i *Instance) read(packed uint64, maxBytes uint32) ([]byte, error) {
	ptr, n := abi.Unpack(packed)
	switch {
	case n == 0:
		return nil, &Fault{Reason: abi.ReasonABIViolation, Err: errors.New("empty answer (length 0)")}
	case n > maxBytes:
		return nil, &Fault{Reason: abi.ReasonABIViolation, Err: fmt.Errorf("answer of %d bytes exceeds the cap of %d", n, maxBytes)}
	}
	b, ok := i.mod.Memory().Read(ptr, n)
	if !ok {
		return nil, &Fault{Reason: abi.ReasonABIViolation, Err: fmt.Errorf("answer [%#x, +%d) lies outside memory of %d bytes", ptr, n, memoryBytes(i.mod.Memory()))}
	}
	return append([]byte(nil), b...), nil
}

func (i *Instance) resetOutput() {
	i.stdout.Reset()
	i.stderr.Reset()
}

// fault classifies a failed guest call.
func (i *Instance) fault(ctx context.Context, err error) *Fault {
	var exit *rt.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded),
		errors.As(err, &exit) && exit.ExitCode() == rt.ExitCodeDeadlineExceeded:
		return &Fault{Reason: abi.ReasonPluginTimeout, Err: err}
	case errors.Is(ctx.Err(), context.Canceled),
		errors.As(err, &exit) && exit.ExitCode() == rt.ExitCodeContextCanceled:
		return &Fault{Reason: abi.ReasonCanceled, Err: err}
	case i.outOfMemory():
		return &Fault{Reason: abi.ReasonPluginOutOfMemory, Err: err}
	}
	return &Fault{Reason: abi.ReasonPluginTrap, Err: err}
}

// outOfMemory reports whether the guest's memory is at its cap, or its
// runtime said it ran out. A grow that fails leaves memory below the cap by
// up to the size asked, so the runtime's own words count too.
func (i *Instance) outOfMemory() bool {
	if i.mod != nil {
		limit := uint64(i.m.e.opts.MemoryLimitPages) * PageSize
		if memoryBytes(i.mod.Memory())+PageSize > limit {
			return true
		}
	}
	return strings.Contains(i.stderr.String(), "out of memory")
}

// tailBuffer keeps the last outputCap bytes written to it.
type tailBuffer struct {
	buf     []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= outputCap {
		t.dropped += int64(len(t.buf) + len(p) - outputCap)
		t.buf = append(t.buf[:0], p[len(p)-outputCap:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - outputCap; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) Reset() { t.buf, t.dropped = t.buf[:0], 0 }

func (t *tailBuffer) String() string {
	if t.dropped > 0 {
		return fmt.Sprintf("[%d bytes dropped]\n%s", t.dropped, t.buf)
	}
	return string(t.buf)
}
