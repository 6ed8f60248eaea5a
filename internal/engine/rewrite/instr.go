package rewrite

import (
	"fmt"

	"github.com/gatehost/gatehost/internal/engine/wasmop"
)

// instructions decodes a function body's expression up to its final end,
// which must be the body's last byte, recording the edits.
func (m *module) instructions(r *reader) error {
	depth := 0
	// entry is the body's entry test (the last edit body recorded) while
	// only straight-line instructions that neither branch, call nor trap
	// have been read: if a loop follows, its header's test runs once on
	// every entry before anything else, and the entry test is dropped as
	// its duplicate. Every function Go compiles starts this way.
	entry := len(m.edits) - 1
	for {
		off := r.off()
		op, err := r.byte("instruction (function body ends before its final end)")
		if err != nil {
			return err
		}
		if entry >= 0 {
			switch op {
			case 0x01, 0x02, 0x20, 0x21, 0x22, 0x23, 0x24, 0x41, 0x42:
				// nop, block, local.get/set/tee, global.get/set, i32/i64.const
			case 0x03: // loop: its header test takes the entry test's place
				m.edits = m.edits[:entry]
				entry = -1
			default:
				entry = -1
			}
		}
		switch wasmop.Op(op) {
		case wasmop.None:
			if op == 0x0b { // end
				if depth == 0 {
					if !r.done() {
						return r.malformed("function body has %d bytes past its final end", r.left())
					}
					return nil
				}
				depth--
			}
		case wasmop.BlockType: // block, loop, if
			if err := m.blockType(r); err != nil {
				return err
			}
			depth++
			if op == 0x03 {
				m.edits = append(m.edits, edit{at: r.off(), kind: editCheck})
			}
		case wasmop.Label: // br, br_if
			_, err = r.u32("branch label")
		case wasmop.LabelTable: // br_table
			err = vec(r, "br_table label", func() error { _, err := r.u32("br_table label"); return err })
			if err == nil {
				_, err = r.u32("br_table default label")
			}
		case wasmop.Func:
			if op == 0xd2 {
				err = m.funcRef(r, "ref.func")
				break
			}
			at := r.off()
			var fn uint32
			if fn, err = m.funcIndexOf(r, "call"); err == nil {
				if g, ok := m.guardOf[fn]; ok {
					m.guards[g].used = true
					m.edits = append(m.edits, edit{at: at, drop: r.off() - at, kind: editGuardCall, guard: g})
				}
				m.afterCall(r)
			}
		case wasmop.CallIndirect:
			if err = m.typeIndex(r, "call_indirect"); err == nil {
				if _, err = r.u32("call_indirect table"); err == nil {
					m.afterCall(r)
				}
			}
		case wasmop.SelectTypes: // select t*
			err = vec(r, "select type", func() error { _, err := valType(r, "select"); return err })
		case wasmop.Local:
			_, err = r.u32("local index")
		case wasmop.Global:
			// The interrupt word is index totalGlobals: a guest must never
			// be able to write it (global.set).
			what := "global.get"
			if op == 0x24 {
				what = "global.set"
			}
			err = globalIndex(r, what, m.totalGlobals())
		case wasmop.Table:
			_, err = r.u32("table index")
		case wasmop.MemArg:
			err = memarg(r)
		case wasmop.Memory:
			err = memIndex(r, "memory.size or memory.grow")
		case wasmop.I32:
			_, err = r.sleb(32, "i32.const")
		case wasmop.I64:
			_, err = r.sleb(64, "i64.const")
		case wasmop.F32:
			_, err = r.bytes(4, "f32.const")
		case wasmop.F64:
			_, err = r.bytes(8, "f64.const")
		case wasmop.RefType:
			err = refType(r, "ref.null")
		case wasmop.Misc:
			err = m.miscOp(r, off)
		case wasmop.SIMD:
			err = simdOp(r, off)
		default:
			return r.unsupported(off, "opcode 0x%02x", op)
		}
		if err != nil {
			return err
		}
	}
}

// blockType reads a block type: 0x40 (empty), a value type, or a
// non-negative s33 type index.
func (m *module) blockType(r *reader) error {
	off := r.off()
	if r.done() {
		return r.malformed("truncated: block type")
	}
	b := r.buf[r.pos]
	if b == 0x40 || isValType(b) {
		r.pos++
		return nil
	}
	idx, err := r.sleb(33, "block type")
	if err != nil {
		return err
	}
	if idx < 0 {
		return r.unsupported(off, "block type 0x%02x", b)
	}
	if idx >= int64(m.nTypes) {
		return &Error{Offset: off, Reason: fmt.Sprintf("block type: type index %d, the module has %d types", idx, m.nTypes), Err: ErrMalformed}
	}
	return nil
}

// memIndex reads the memory index byte of memory.size, memory.grow,
// memory.init, memory.copy and memory.fill: 0x00 (multi-memory refused).
func memIndex(r *reader, what string) error {
	off := r.off()
	b, err := r.byte(what + " memory index")
	if err != nil {
		return err
	}
	if b != 0 {
		return r.unsupported(off, "%s: memory index byte 0x%02x (multi-memory)", what, b)
	}
	return nil
}

// memarg reads align and offset; bit 6 of align announces a memory index
// (multi-memory), which is refused.
func memarg(r *reader) error {
	off := r.off()
	align, err := r.u32("memarg align")
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		return r.unsupported(off, "memarg with a memory index (multi-memory)")
	}
	_, err = r.u32("memarg offset")
	return err
}

// miscOp reads a 0xfc instruction: saturating truncation (0–7), bulk
// memory (8–11), table operations (12–17).
func (m *module) miscOp(r *reader, off int) error {
	sub, err := r.u32("0xfc sub-opcode")
	if err != nil {
		return err
	}
	switch wasmop.MiscOp(sub) {
	case wasmop.None:
		return nil
	case wasmop.DataMemory: // memory.init
		if _, err := r.u32("memory.init data index"); err != nil {
			return err
		}
		return memIndex(r, "memory.init")
	case wasmop.Data:
		_, err = r.u32("data.drop data index")
		return err
	case wasmop.MemoryPair, wasmop.Memory: // memory.copy, memory.fill
		if !m.usesCopy && !m.usesFill {
			m.firstBulkOffset = off
		}
		what, kind, n := "memory.copy", editCopy, 2
		if sub == 11 {
			what, kind, n = "memory.fill", editFill, 1
			m.usesFill = true
		} else {
			m.usesCopy = true
		}
		for range n {
			if err := memIndex(r, what); err != nil {
				return err
			}
		}
		m.edits = append(m.edits, edit{at: off, drop: r.off() - off, kind: kind})
		return nil
	case wasmop.ElemTable, wasmop.TablePair: // table.init elem table, table.copy table table
		if _, err := r.u32("table.init or table.copy index"); err != nil {
			return err
		}
		_, err = r.u32("table.init or table.copy index")
		return err
	case wasmop.Elem, wasmop.Table: // elem.drop, table.grow, table.size, table.fill
		_, err = r.u32("element or table index")
		return err
	}
	return r.unsupported(off, "opcode 0xfc %d", sub)
}

// simdOp reads a 0xfd instruction by its immediate class.
func simdOp(r *reader, off int) error {
	sub, err := r.u32("0xfd sub-opcode")
	if err != nil {
		return err
	}
	switch wasmop.SIMDOp(sub) {
	case wasmop.MemArg: // loads, store, load_zero
		return memarg(r)
	case wasmop.Bytes16:
		what := "v128.const"
		if sub == 13 {
			what = "i8x16.shuffle lanes"
		}
		_, err = r.bytes(16, what)
	case wasmop.Lane: // extract_lane, replace_lane
		_, err = r.byte("lane index")
	case wasmop.MemArgLane: // load_lane, store_lane
		if err = memarg(r); err == nil {
			_, err = r.byte("lane index")
		}
	case wasmop.None:
	default:
		return r.unsupported(off, "opcode 0xfd %d", sub)
	}
	return err
}

// afterCall inserts the interrupt test right after a call returns. Entries
// and loop headers alone leave the way back up the stack untested: a guest
// that recursed deep, then ran a long loop-free tail in every frame on the
// way back, ran unstopped for depth × tail (100,000 frames of a
// 20,000-instruction tail: 0.57 s after the word was set, and the call then
// returned normally). With a test after every call, what runs untested
// after a return is the rest of one body up to its next call, loop or end.
// The test leaves the operand stack as it was, so the call's results are
// untouched.
func (m *module) afterCall(r *reader) {
	m.edits = append(m.edits, edit{at: r.off(), kind: editCheck})
}
