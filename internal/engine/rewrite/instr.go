package rewrite

import "fmt"

// instructions decodes a function body's expression up to its final end,
// which must be the body's last byte, recording the edits.
func (m *module) instructions(r *reader) error {
	depth := 0
	for {
		off := r.off()
		op, err := r.byte("instruction (function body ends before its final end)")
		if err != nil {
			return err
		}
		switch {
		case op == 0x0b: // end
			if depth == 0 {
				if !r.done() {
					return r.malformed("function body has %d bytes past its final end", r.left())
				}
				return nil
			}
			depth--
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			if err := m.blockType(r); err != nil {
				return err
			}
			depth++
			if op == 0x03 {
				m.edits = append(m.edits, edit{at: r.off(), kind: editCheck})
			}
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || // unreachable, nop, else, return
			op == 0x1a || op == 0x1b || // drop, select
			op >= 0x45 && op <= 0xc4 || // numeric, sign extension
			op == 0xd1: // ref.is_null
		case op == 0x0c || op == 0x0d: // br, br_if
			_, err = r.u32("branch label")
		case op == 0x0e: // br_table
			err = vec(r, "br_table label", func() error { _, err := r.u32("br_table label"); return err })
			if err == nil {
				_, err = r.u32("br_table default label")
			}
		case op == 0x10:
			err = m.funcIndex(r, "call")
		case op == 0x11:
			if err = m.typeIndex(r, "call_indirect"); err == nil {
				_, err = r.u32("call_indirect table")
			}
		case op == 0x1c: // select t*
			err = vec(r, "select type", func() error { _, err := valType(r, "select"); return err })
		case op >= 0x20 && op <= 0x22:
			_, err = r.u32("local index")
		case op == 0x23:
			err = globalIndex(r, "global.get", m.totalGlobals())
		case op == 0x24:
			// The interrupt word is index totalGlobals: a guest must never
			// be able to write it.
			err = globalIndex(r, "global.set", m.totalGlobals())
		case op == 0x25 || op == 0x26:
			_, err = r.u32("table index")
		case op >= 0x28 && op <= 0x3e:
			err = memarg(r)
		case op == 0x3f || op == 0x40:
			err = memIndex(r, "memory.size or memory.grow")
		case op == 0x41:
			_, err = r.sleb(32, "i32.const")
		case op == 0x42:
			_, err = r.sleb(64, "i64.const")
		case op == 0x43:
			_, err = r.bytes(4, "f32.const")
		case op == 0x44:
			_, err = r.bytes(8, "f64.const")
		case op == 0xd0:
			err = refType(r, "ref.null")
		case op == 0xd2:
			err = m.funcIndex(r, "ref.func")
		case op == 0xfc:
			err = m.miscOp(r, off)
		case op == 0xfd:
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
	switch {
	case sub <= 7:
		return nil
	case sub == 8: // memory.init
		if _, err := r.u32("memory.init data index"); err != nil {
			return err
		}
		return memIndex(r, "memory.init")
	case sub == 9:
		_, err = r.u32("data.drop data index")
		return err
	case sub == 10 || sub == 11:
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
	case sub == 12 || sub == 14: // table.init elem table, table.copy table table
		if _, err := r.u32("table.init or table.copy index"); err != nil {
			return err
		}
		_, err = r.u32("table.init or table.copy index")
		return err
	case sub <= 17: // elem.drop, table.grow, table.size, table.fill
		_, err = r.u32("element or table index")
		return err
	}
	return r.unsupported(off, "opcode 0xfc %d", sub)
}

// simdGaps are the sub-opcodes below 256 the fixed-width SIMD proposal
// leaves unassigned (https://github.com/WebAssembly/simd, "Binary
// encoding"); 256 and up is relaxed SIMD, refused too.
var simdGaps = map[uint32]bool{
	154: true, 162: true, 165: true, 166: true, 175: true, 176: true, 178: true,
	179: true, 180: true, 187: true, 194: true, 197: true, 198: true, 207: true,
	208: true, 210: true, 211: true, 212: true, 226: true, 238: true,
}

// simdOp reads a 0xfd instruction by its immediate class.
func simdOp(r *reader, off int) error {
	sub, err := r.u32("0xfd sub-opcode")
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		return memarg(r)
	case sub == 12: // v128.const
		_, err = r.bytes(16, "v128.const")
	case sub == 13: // i8x16.shuffle
		_, err = r.bytes(16, "i8x16.shuffle lanes")
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		_, err = r.byte("lane index")
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err = memarg(r); err == nil {
			_, err = r.byte("lane index")
		}
	case sub < 256 && !simdGaps[sub]:
	default:
		return r.unsupported(off, "opcode 0xfd %d", sub)
	}
	return err
}
