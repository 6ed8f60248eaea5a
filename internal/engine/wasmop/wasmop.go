// Package wasmop is the one table of WebAssembly instructions the engine
// accepts and the shape of their immediates (WebAssembly Core 2.0 §5.4,
// with the features the engine enables: sign extension, saturating
// truncation, bulk memory, reference types, multi-value, fixed-width
// SIMD). The pre-compile shape check (package engine) and the interrupt
// rewriter (package rewrite) both decode function bodies by it, so they
// cannot disagree on which instructions exist or how long they are; each
// reads the immediates with its own reader and checks.
package wasmop

// Imm is the shape of an instruction's immediates.
type Imm uint8

const (
	Unknown      Imm = iota // not an instruction the engine accepts
	None                    // no immediates
	BlockType               // block, loop, if: a block type (0x40, a value type or an s33 type index)
	Label                   // br, br_if: a label index
	LabelTable              // br_table: a vector of label indices, then the default
	Func                    // call, ref.func: a function index
	CallIndirect            // call_indirect: a type index, a table index
	SelectTypes             // select t*: a vector of value types
	Local                   // local.get, local.set, local.tee
	Global                  // global.get, global.set
	Table                   // table.get, table.set; 0xfc table.grow, table.size, table.fill
	MemArg                  // loads and stores: align, offset
	Memory                  // memory.size, memory.grow; 0xfc memory.fill: a memory index byte
	I32                     // i32.const: a signed LEB128 of 32 bits
	I64                     // i64.const: a signed LEB128 of 64 bits
	F32                     // f32.const: 4 bytes
	F64                     // f64.const: 8 bytes
	RefType                 // ref.null: a reference type byte
	Misc                    // the 0xfc prefix: a u32 sub-opcode, see MiscOp
	SIMD                    // the 0xfd prefix: a u32 sub-opcode, see SIMDOp
	DataMemory              // 0xfc memory.init: a data index, a memory index byte
	Data                    // 0xfc data.drop: a data index
	MemoryPair              // 0xfc memory.copy: two memory index bytes
	ElemTable               // 0xfc table.init: an element index, a table index
	Elem                    // 0xfc elem.drop: an element index
	TablePair               // 0xfc table.copy: two table indices
	Bytes16                 // 0xfd v128.const, i8x16.shuffle: 16 bytes
	Lane                    // 0xfd extract_lane, replace_lane: a lane index byte
	MemArgLane              // 0xfd load_lane, store_lane: align, offset, a lane index byte
)

// Op is the immediate shape of the one-byte opcode op.
func Op(op byte) Imm {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0b || op == 0x0f || // unreachable, nop, else, end, return
		op == 0x1a || op == 0x1b || // drop, select
		op >= 0x45 && op <= 0xc4 || // numeric, sign extension
		op == 0xd1: // ref.is_null
		return None
	case op >= 0x02 && op <= 0x04:
		return BlockType
	case op == 0x0c || op == 0x0d:
		return Label
	case op == 0x0e:
		return LabelTable
	case op == 0x10 || op == 0xd2:
		return Func
	case op == 0x11:
		return CallIndirect
	case op == 0x1c:
		return SelectTypes
	case op >= 0x20 && op <= 0x22:
		return Local
	case op == 0x23 || op == 0x24:
		return Global
	case op == 0x25 || op == 0x26:
		return Table
	case op >= 0x28 && op <= 0x3e:
		return MemArg
	case op == 0x3f || op == 0x40:
		return Memory
	case op == 0x41:
		return I32
	case op == 0x42:
		return I64
	case op == 0x43:
		return F32
	case op == 0x44:
		return F64
	case op == 0xd0:
		return RefType
	case op == 0xfc:
		return Misc
	case op == 0xfd:
		return SIMD
	}
	return Unknown
}

// MiscOp is the immediate shape of the 0xfc instruction sub: saturating
// truncation (0–7), bulk memory (8–11), table operations (12–17).
func MiscOp(sub uint32) Imm {
	switch {
	case sub <= 7:
		return None
	case sub == 8:
		return DataMemory
	case sub == 9:
		return Data
	case sub == 10:
		return MemoryPair
	case sub == 11:
		return Memory
	case sub == 12:
		return ElemTable
	case sub == 13:
		return Elem
	case sub == 14:
		return TablePair
	case sub <= 17:
		return Table
	}
	return Unknown
}

// simdGaps are the sub-opcodes below 256 the fixed-width SIMD proposal
// leaves unassigned (https://github.com/WebAssembly/simd, "Binary
// encoding"); 256 and up is relaxed SIMD, refused too.
var simdGaps = map[uint32]bool{
	154: true, 162: true, 165: true, 166: true, 175: true, 176: true, 178: true,
	179: true, 180: true, 187: true, 194: true, 197: true, 198: true, 207: true,
	208: true, 210: true, 211: true, 212: true, 226: true, 238: true,
}

// SIMDOp is the immediate shape of the 0xfd instruction sub.
func SIMDOp(sub uint32) Imm {
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		return MemArg
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		return Bytes16
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		return Lane
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		return MemArgLane
	case sub < 256 && !simdGaps[sub]:
		return None
	}
	return Unknown
}
