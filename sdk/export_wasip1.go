//go:build wasip1

package sdk

import (
	"context"
	"runtime"
	"unsafe"

	"github.com/gatehost/gatehost/abi"
)

// maxRequest mirrors the host's request cap; gate_alloc refuses more so a
// bogus size cannot exhaust the guest's memory.
const maxRequest = 64 << 20

// Buffers the host reads or writes. They are package variables so the Go
// GC keeps them alive until the next call, as SPEC.md promises.
var (
	requestBuf  []byte
	responseBuf []byte
)

//go:wasmexport gate_abi_version
func gateABIVersion() int32 { return abi.MajorVersion }

//go:wasmexport gate_alloc
func gateAlloc(size uint32) unsafe.Pointer {
	if size > maxRequest {
		return nil
	}
	requestBuf = make([]byte, size, size+1) // cap ≥ 1 so &buf[:1][0] is valid for size 0
	return unsafe.Pointer(unsafe.SliceData(requestBuf[:1]))
}

//go:wasmexport gate_describe
func gateDescribe() uint64 {
	b, err := DescriptorJSON(registered)
	if err != nil {
		b = []byte(`{}`) // fails the descriptor schema: the host refuses to load
	}
	return publish(b)
}

//go:wasmexport gate_evaluate
func gateEvaluate(ptr unsafe.Pointer, size uint32) uint64 {
	in := unsafe.Slice((*byte)(ptr), size)
	out := publish(Handle(context.Background(), registered, wasmHost{}, in))
	// The guest runs only inside a call, on one thread: the GC's
	// background workers run only when this goroutine yields. Without
	// this, a cycle started under load may not finish before the next
	// calls allocate, and the heap (whose linear memory never shrinks)
	// grows until the instance runs out of memory.
	runtime.Gosched()
	return out
}

func publish(b []byte) uint64 {
	responseBuf = b
	if len(b) == 0 {
		return 0
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b)))
}

//go:wasmimport gatehost_v1 log
func hostLog(level int32, ptr unsafe.Pointer, size uint32)

//go:wasmimport gatehost_v1 call
func hostCall(opPtr unsafe.Pointer, opLen uint32, reqPtr unsafe.Pointer, reqLen uint32) int32

//go:wasmimport gatehost_v1 result
func hostResult(ptr unsafe.Pointer, size uint32) int32

// wasmHost is the module's Host. Handle pins it to the run (pinnedRun):
// the instance serves one host, whose generations each name one catalog.
type wasmHost struct{}

func (wasmHost) pinRun(p runPins) Host { return pinnedHost{run: p} }

// pinnedHost is wasmHost during a run.
type pinnedHost struct {
	wasmHost
	run runPins
}

func (h pinnedHost) pins() runPins { return h.run }

func (wasmHost) Log(level Level, msg string) {
	hostLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

func (h wasmHost) Call(op string, request []byte) ([]byte, error) {
	answer, err := h.CallEnvelope(op, request)
	if err != nil {
		return nil, err
	}
	return DecodeAnswer(answer)
}

// CallEnvelope implements EnvelopeCaller.
func (wasmHost) CallEnvelope(op string, request []byte) ([]byte, error) {
	n := hostCall(unsafe.Pointer(unsafe.StringData(op)), uint32(len(op)),
		unsafe.Pointer(unsafe.SliceData(request)), uint32(len(request)))
	if n < 0 {
		return nil, statusError(n)
	}
	answer := make([]byte, n, n+1)
	if got := hostResult(unsafe.Pointer(unsafe.SliceData(answer[:1])), uint32(n)); got != n {
		return nil, statusError(got)
	}
	return answer, nil
}
