package engine

import (
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/internal/engine/wasmop"
)

// A structural pre-check of a module's bytes, before the runtime compiles
// them. The runtime's compile time grows much faster than linearly in some
// shapes — deeply nested blocks, many locals live across many branches —
// so a module of a few hundred kilobytes can compile for minutes, and the
// runtime cannot be interrupted meanwhile. Bounding those shapes bounds
// the compile. The decoder reads only what it needs: section framing, and
// in the code section each function's locals and instruction stream (to
// follow control nesting); the runtime's own decoder still validates
// everything.

// Limits bounds the shape of a module the engine will compile. Zero fields
// take the defaults of DefaultLimits.
type Limits struct {
	// ModuleBytes caps the module's size in bytes.
	ModuleBytes int
	// Functions caps the functions the module defines (its code section).
	Functions int
	// FunctionBytes caps the size of one function body in bytes.
	FunctionBytes int
	// Nesting caps the depth of nested block, loop and if instructions
	// within one function.
	Nesting int
	// Locals caps the locals of one function, its parameters included.
	Locals int
	// LoopNesting caps the depth of nested loop instructions within one
	// function: compile time grows with about its cube.
	LoopNesting int
	// LocalBlocks caps, per function, its locals times its block, loop
	// and if instructions: the runtime's SSA construction considers every
	// local at every block, so compile time and memory grow with this
	// product.
	LocalBlocks int
	// TotalLocalBlocks caps the sum of LocalBlocks over all functions.
	TotalLocalBlocks int
	// Blocks caps the block, loop and if instructions of one function:
	// compile time grows with about their cube, whatever the locals.
	Blocks int
	// TotalBlocksSquared caps the sum over all functions of the square of
	// their Blocks, so that many functions each under Blocks cannot add
	// up without bound.
	TotalBlocksSquared int
	// TotalDepth caps the sum, over every block, loop and if instruction
	// of the module, of its nesting depth: compile time grows with it
	// (quadratically in the depth of one nest).
	TotalDepth int
}

// DefaultLimits are far above what real gates need. The four built-in Go
// gates (3.7-5.7 MB) measure at most: 3,108 functions, bodies of 143 KB,
// nesting 2,146 (Go's resume-point jump tables), loop nesting 1, 21
// locals, 2,850 blocks in one function and 22.6 million blocks squared in
// all, local_blocks 54,150 in one function and 914,959 in all, total
// depth 8.4 million. docs/RATIONALE.md "Bounding compilation" has the
// figures and what a module at the limits costs to compile.
var DefaultLimits = Limits{
	ModuleBytes:        64 << 20,
	Functions:          100_000,
	FunctionBytes:      4 << 20,
	Nesting:            10_000,
	LoopNesting:        100,
	Locals:             10_000,
	LocalBlocks:        1_000_000,
	TotalLocalBlocks:   8_000_000,
	Blocks:             10_000,
	TotalBlocksSquared: 200_000_000,
	TotalDepth:         100_000_000,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	// A limit of 0 (or less) means the default.
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{
		ModuleBytes:        or(l.ModuleBytes, d.ModuleBytes),
		Functions:          or(l.Functions, d.Functions),
		FunctionBytes:      or(l.FunctionBytes, d.FunctionBytes),
		Nesting:            or(l.Nesting, d.Nesting),
		Locals:             or(l.Locals, d.Locals),
		LoopNesting:        or(l.LoopNesting, d.LoopNesting),
		LocalBlocks:        or(l.LocalBlocks, d.LocalBlocks),
		TotalLocalBlocks:   or(l.TotalLocalBlocks, d.TotalLocalBlocks),
		TotalDepth:         or(l.TotalDepth, d.TotalDepth),
		Blocks:             or(l.Blocks, d.Blocks),
		TotalBlocksSquared: or(l.TotalBlocksSquared, d.TotalBlocksSquared),
	}
}

// ErrTooComplex is the kind of LoadError for a module over one of the
// Limits; the detail names the limit, the value and the function.
var ErrTooComplex = errors.New("module exceeds a compile limit")

// ErrMalformed wraps, in a LoadError of kind ErrCompile, bytes the
// pre-check cannot decode as a WebAssembly module (WebAssembly Core
// Specification 2.0, §5 binary format).
var ErrMalformed = errors.New("module is not well-formed WebAssembly")

// Shape is what the pre-check measured of a module.
type Shape struct {
	Bytes              int `json:"bytes"`
	Functions          int `json:"functions"`
	FunctionBytes      int `json:"max_function_bytes"`
	Nesting            int `json:"max_nesting"`
	Locals             int `json:"max_locals"`
	LoopNesting        int `json:"max_loop_nesting"`
	LocalBlocks        int `json:"max_local_blocks"`
	TotalLocalBlocks   int `json:"total_local_blocks"`
	Blocks             int `json:"max_blocks"`
	TotalBlocksSquared int `json:"total_blocks_squared"`
	TotalDepth         int `json:"total_depth"`
}

// CheckShape decodes wasm far enough to measure its Shape and refuses it
// with a *LoadError: of kind ErrTooComplex when it exceeds lim (zero
// fields: DefaultLimits), naming the limit; of kind ErrCompile wrapping
// ErrMalformed when it cannot be decoded. It never panics
// and reads each byte at most once.
func CheckShape(wasm []byte, lim Limits) (Shape, error) {
	lim = lim.withDefaults()
	s := Shape{Bytes: len(wasm)}
	if len(wasm) > lim.ModuleBytes {
		return s, tooComplex("module_bytes", len(wasm), lim.ModuleBytes, "")
	}
	r := &reader{b: wasm}
	magic, err := r.take(8)
	if err != nil || string(magic) != "\x00asm\x01\x00\x00\x00" {
		return s, malformed(0, "not a WebAssembly 1.0 binary (magic and version)")
	}
	var params []int       // by type index
	var funcTypes []uint32 // by defined function
	for r.off < len(r.b) {
		start := r.off
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			return s, malformed(start, "section size: %v", err)
		}
		body, err := r.take(int(size))
		if err != nil {
			return s, malformed(start, "section %d of %d bytes runs past the end", id, size)
		}
		sr := &reader{b: body, base: r.off - len(body)}
		switch id {
		case 1:
			if params, err = readTypes(sr); err != nil {
				return s, err
			}
		case 3:
			if funcTypes, err = readFuncs(sr, lim); err != nil {
				return s, err
			}
		case 10:
			if err := checkCode(sr, lim, &s, func(i int) int {
				if i < len(funcTypes) && int(funcTypes[i]) < len(params) {
					return params[funcTypes[i]]
				}
				return 0 // the runtime refuses the mismatch
			}); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

func tooComplex(limit string, got, max int, where string) error {
	d := fmt.Sprintf("compile_limits.%s: %d exceeds the limit of %d", limit, got, max)
	if where != "" {
		d += " (" + where + ")"
	}
	return &LoadError{Kind: ErrTooComplex, Detail: d}
}

func malformed(off int, format string, args ...any) error {
	return &LoadError{Kind: ErrCompile, Err: fmt.Errorf("%w: at byte %d: %s", ErrMalformed, off, fmt.Sprintf(format, args...))}
}

// readTypes returns the parameter count of each function type.
func readTypes(r *reader) ([]int, error) {
	n, err := r.u32()
	if err != nil {
		return nil, malformed(r.pos(), "type section count: %v", err)
	}
	var params []int
	for i := uint32(0); i < n; i++ {
		at := r.pos()
		if form, err := r.byte(); err != nil || form != 0x60 {
			return nil, malformed(at, "type %d is not a function type", i)
		}
		np, err := r.u32()
		if err == nil {
			_, err = r.take(int(np))
		}
		if err != nil {
			return nil, malformed(at, "type %d: parameters: %v", i, err)
		}
		nr, err := r.u32()
		if err == nil {
			_, err = r.take(int(nr))
		}
		if err != nil {
			return nil, malformed(at, "type %d: results: %v", i, err)
		}
		params = append(params, int(np))
	}
	return params, nil
}

// readFuncs returns the type index of each defined function.
func readFuncs(r *reader, lim Limits) ([]uint32, error) {
	n, err := r.u32()
	if err != nil {
		return nil, malformed(r.pos(), "function section count: %v", err)
	}
	if int64(n) > int64(lim.Functions) {
		return nil, tooComplex("functions", int(min(n, 1<<31-1)), lim.Functions, "")
	}
	types := make([]uint32, 0, n)
	for range n {
		t, err := r.u32()
		if err != nil {
			return nil, malformed(r.pos(), "function section: %v", err)
		}
		types = append(types, t)
	}
	return types, nil
}

func checkCode(r *reader, lim Limits, s *Shape, params func(int) int) error {
	n, err := r.u32()
	if err != nil {
		return malformed(r.pos(), "code section count: %v", err)
	}
	if int64(n) > int64(lim.Functions) {
		return tooComplex("functions", int(min(n, 1<<31-1)), lim.Functions, "")
	}
	s.Functions = int(n)
	for i := range int(n) {
		where := fmt.Sprintf("function %d of the code section", i)
		start := r.pos()
		size, err := r.u32()
		if err != nil {
			return malformed(start, "%s: size: %v", where, err)
		}
		if int64(size) > int64(lim.FunctionBytes) {
			return tooComplex("function_bytes", int(min(size, 1<<31-1)), lim.FunctionBytes, where)
		}
		s.FunctionBytes = max(s.FunctionBytes, int(size))
		body, err := r.take(int(size))
		if err != nil {
			return malformed(start, "%s: body of %d bytes runs past the section", where, size)
		}
		if err := checkBody(&reader{b: body, base: r.pos() - len(body)}, lim, s, where, params(i)); err != nil {
			return err
		}
	}
	if r.off != len(r.b) {
		return malformed(r.pos(), "code section has %d bytes after its last function", len(r.b)-r.off)
	}
	return nil
}

func checkBody(r *reader, lim Limits, s *Shape, where string, params int) error {
	groups, err := r.u32()
	if err != nil {
		return malformed(r.pos(), "%s: locals: %v", where, err)
	}
	locals := uint64(params)
	if locals > uint64(lim.Locals) {
		return tooComplex("locals", int(locals), lim.Locals, where)
	}
	for range groups {
		n, err := r.u32()
		if err != nil {
			return malformed(r.pos(), "%s: locals: %v", where, err)
		}
		if _, err := r.byte(); err != nil { // the type
			return malformed(r.pos(), "%s: locals: %v", where, err)
		}
		locals += uint64(n)
		if locals > uint64(lim.Locals) {
			return tooComplex("locals", int(min(locals, 1<<31-1)), lim.Locals, where)
		}
	}
	s.Locals = max(s.Locals, int(locals))
	// loops[i] is true when the i+1th open control instruction is a loop.
	var loops []bool
	loopDepth, blocks := 0, 0
	for r.off < len(r.b) {
		at := r.pos()
		op, _ := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			if _, err := r.s(33); err != nil {
				return malformed(at, "%s: block type: %v", where, err)
			}
			loops = append(loops, op == 0x03)
			if len(loops) > lim.Nesting {
				return tooComplex("nesting", len(loops), lim.Nesting, where)
			}
			s.Nesting = max(s.Nesting, len(loops))
			if op == 0x03 {
				loopDepth++
				if loopDepth > lim.LoopNesting {
					return tooComplex("loop_nesting", loopDepth, lim.LoopNesting, where)
				}
				s.LoopNesting = max(s.LoopNesting, loopDepth)
			}
			blocks++
			if blocks > lim.Blocks {
				return tooComplex("blocks", blocks, lim.Blocks, where)
			}
			s.Blocks = max(s.Blocks, blocks)
			// blocks² grows by 2·blocks-1 with each block; blocks <=
			// FunctionBytes/2 and locals <= Locals: no overflow.
			s.TotalBlocksSquared += 2*blocks - 1
			if s.TotalBlocksSquared > lim.TotalBlocksSquared {
				return tooComplex("total_blocks_squared", s.TotalBlocksSquared, lim.TotalBlocksSquared, where)
			}
			if lb := int(locals) * blocks; lb > lim.LocalBlocks {
				return tooComplex("local_blocks", lb, lim.LocalBlocks, where)
			}
			s.LocalBlocks = max(s.LocalBlocks, int(locals)*blocks)
			s.TotalLocalBlocks += int(locals)
			if s.TotalLocalBlocks > lim.TotalLocalBlocks {
				return tooComplex("total_local_blocks", s.TotalLocalBlocks, lim.TotalLocalBlocks, where)
			}
			s.TotalDepth += len(loops)
			if s.TotalDepth > lim.TotalDepth {
				return tooComplex("total_depth", s.TotalDepth, lim.TotalDepth, where)
			}
		case op == 0x0B: // end
			if len(loops) == 0 {
				if r.off != len(r.b) {
					return malformed(at, "%s: code after the function's end", where)
				}
				return nil
			}
			if loops[len(loops)-1] {
				loopDepth--
			}
			loops = loops[:len(loops)-1]
		default:
			if err := skipImmediates(r, op); err != nil {
				return malformed(at, "%s: opcode %#x: %v", where, op, err)
			}
		}
	}
	return malformed(r.pos(), "%s: body ends without end", where)
}

// skipImmediates skips the immediates of op, by the table the interrupt
// rewriter decodes with too (package wasmop).
func skipImmediates(r *reader, op byte) error {
	imm := wasmop.Op(op)
	var err error
	var sub uint32
	switch imm {
	case wasmop.Misc:
		if sub, err = r.u32(); err != nil {
			return err
		}
		if imm = wasmop.MiscOp(sub); imm == wasmop.Unknown {
			return fmt.Errorf("unsupported 0xfc instruction %d", sub)
		}
	case wasmop.SIMD:
		if sub, err = r.u32(); err != nil {
			return err
		}
		if imm = wasmop.SIMDOp(sub); imm == wasmop.Unknown {
			return fmt.Errorf("unsupported 0xfd instruction %d", sub)
		}
	}
	switch imm {
	case wasmop.None:
		return nil
	case wasmop.BlockType:
		_, err = r.s(33)
		return err
	case wasmop.Label, wasmop.Func, wasmop.Local, wasmop.Global, wasmop.Table, wasmop.Memory,
		wasmop.Data, wasmop.Elem:
		_, err = r.u32()
		return err
	case wasmop.LabelTable: // br_table
		n, err := r.u32()
		if err != nil {
			return err
		}
		for range uint64(n) + 1 {
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		return nil
	case wasmop.CallIndirect, wasmop.MemArg, wasmop.DataMemory, wasmop.MemoryPair, wasmop.ElemTable, wasmop.TablePair:
		return r.u32s(2)
	case wasmop.SelectTypes: // select t*
		n, err := r.u32()
		if err != nil {
			return err
		}
		_, err = r.take(int(n))
		return err
	case wasmop.I32:
		_, err = r.s(32)
		return err
	case wasmop.I64:
		_, err = r.s(64)
		return err
	case wasmop.F32:
		_, err = r.take(4)
		return err
	case wasmop.F64:
		_, err = r.take(8)
		return err
	case wasmop.Bytes16:
		_, err = r.take(16)
		return err
	case wasmop.RefType, wasmop.Lane:
		_, err = r.byte()
		return err
	case wasmop.MemArgLane:
		if err := r.u32s(2); err != nil {
			return err
		}
		_, err = r.byte()
		return err
	}
	return errors.New("unsupported opcode")
}

// reader decodes LEB128 and bytes from b; base is b's offset in the module,
// for messages.
type reader struct {
	b    []byte
	off  int
	base int
}

var errEOF = errors.New("unexpected end")

func (r *reader) pos() int { return r.base + r.off }

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errEOF
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, errEOF
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes that fits 32 bits.
func (r *reader) u32() (uint32, error) {
	var v uint64
	for i := 0; i < 5; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > 1<<32-1 {
				return 0, errors.New("integer overflows 32 bits")
			}
			return uint32(v), nil
		}
	}
	return 0, errors.New("integer longer than 5 bytes")
}

func (r *reader) u32s(n int) error {
	for range n {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// s skips a signed LEB128 of at most bits bits (ceil(bits/7) bytes).
func (r *reader) s(bits int) (struct{}, error) {
	for i := 0; i < (bits+6)/7; i++ {
		c, err := r.byte()
		if err != nil {
			return struct{}{}, err
		}
		if c&0x80 == 0 {
			return struct{}{}, nil
		}
	}
	return struct{}{}, fmt.Errorf("integer longer than %d bytes", (bits+6)/7)
}
