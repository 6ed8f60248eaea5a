package engine

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	rt "github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// Per-evaluation bounds on host function use. A guest past them traps:
// such a guest is broken or hostile, and the deadline is the only other stop.
const (
	maxHostCalls  = 10000
	maxLogEntries = 256
	maxLogBytes   = 4096
)

var errHostCallBudget = errors.New("host call budget exceeded")

// frame is the state of one guest call, reached by host functions through
// the call's context. A nil frame (initialize, describe) grants nothing.
type frame struct {
	state   any
	pending []byte
	calls   int
	logs    int
}

type frameKey struct{}

func frameOf(ctx context.Context) *frame {
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

func (e *Engine) instantiateHostModule(ctx context.Context) error {
	i32 := rt.ValueTypeI32
	b := e.rt.NewHostModuleBuilder(abi.ImportModule)
	b.NewFunctionBuilder().
		WithGoModuleFunction(rt.GoModuleFunc(e.hostLog), []rt.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").Export(abi.ImportLog)
	b.NewFunctionBuilder().
		WithGoModuleFunction(rt.GoModuleFunc(e.hostCall), []rt.ValueType{i32, i32, i32, i32}, []rt.ValueType{i32}).
		WithParameterNames("op_ptr", "op_len", "req_ptr", "req_len").Export(abi.ImportCall)
	b.NewFunctionBuilder().
		WithGoModuleFunction(rt.GoModuleFunc(e.hostResult), []rt.ValueType{i32, i32}, []rt.ValueType{i32}).
		WithParameterNames("ptr", "len").Export(abi.ImportResult)
	_, err := b.Instantiate(ctx)
	return err
}

func (e *Engine) hostLog(ctx context.Context, mod rt.Module, stack []uint64) {
	level := rt.DecodeI32(stack[0])
	ptr, n := rt.DecodeU32(stack[1]), rt.DecodeU32(stack[2])
	f := frameOf(ctx)
	if f != nil {
		if f.logs >= maxLogEntries {
			return
		}
		f.logs++
	}
	if n > maxLogBytes {
		n = maxLogBytes
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return
	}
	msg := string(b)
	if !utf8.ValidString(msg) {
		msg = fmt.Sprintf("%q", msg)
	}
	var state any
	if f != nil {
		state = f.state
	}
	e.opts.Calls.Log(ctx, state, level, msg)
}

func (e *Engine) hostCall(ctx context.Context, mod rt.Module, stack []uint64) {
	opPtr, opLen := rt.DecodeU32(stack[0]), rt.DecodeU32(stack[1])
	reqPtr, reqLen := rt.DecodeU32(stack[2]), rt.DecodeU32(stack[3])
	f := frameOf(ctx)
	if f != nil {
		f.calls++
		if f.calls > maxHostCalls {
			panic(errHostCallBudget) // becomes a trap of this call
		}
		f.pending = nil
	}
	if reqLen > abi.MaxHostRequestBytes || opLen > 256 {
		stack[0] = rt.EncodeI32(int32(abi.StatusTooLarge))
		return
	}
	op, ok1 := mod.Memory().Read(opPtr, opLen)
	req, ok2 := mod.Memory().Read(reqPtr, reqLen)
	if !ok1 || !ok2 || !utf8.Valid(op) {
		stack[0] = rt.EncodeI32(int32(abi.StatusFault))
		return
	}
	var state any
	if f != nil {
		state = f.state
	}
	// The handler gets a copy: guest memory may move when it grows.
	answer := e.opts.Calls.Call(ctx, state, string(op), append([]byte(nil), req...))
	if f == nil {
		// No call in progress: nothing can be pending, so the answer is
		// unreachable. Report it as a fault.
		stack[0] = rt.EncodeI32(int32(abi.StatusFault))
		return
	}
	f.pending = answer
	stack[0] = rt.EncodeI32(int32(len(answer)))
}

func (e *Engine) hostResult(ctx context.Context, mod rt.Module, stack []uint64) {
	ptr, n := rt.DecodeU32(stack[0]), rt.DecodeU32(stack[1])
	f := frameOf(ctx)
	switch {
	case f == nil || f.pending == nil:
		stack[0] = rt.EncodeI32(int32(abi.StatusNoResult))
	case int(n) != len(f.pending):
		stack[0] = rt.EncodeI32(int32(abi.StatusLength))
	case !mod.Memory().Write(ptr, f.pending):
		stack[0] = rt.EncodeI32(int32(abi.StatusFault))
	default:
		f.pending = nil
		stack[0] = rt.EncodeI32(int32(n))
	}
}
