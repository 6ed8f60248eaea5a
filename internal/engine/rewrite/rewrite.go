package rewrite

import (
	"errors"
	"fmt"
	"math"
)

// Version is the rewriter's version; it is part of every cache key of
// rewritten code. Bump it on any change to the output. 2: no build may
// reuse output of a development build that left bulk instructions of a
// constant length inline (they must test the interrupt word; stop_test.go).
// 3: the test after every call. 4: the guards of WASI imports
// (wasiguard.go). 5: a bulk-memory chunk passes a safepoint only when
// another follows. 6: one counter on the hot path (CountdownExport), and
// no entry test where a loop header's test runs first.
const Version = 6

// InterruptExport is the name of the exported mutable i32 global the rewrite
// adds. Non-zero means: stop. The guest tests it whenever the countdown
// (CountdownExport) runs out and before every bulk-memory chunk, and traps
// with `unreachable`.
const InterruptExport = "gatehost_interrupt"

// CountdownExport is the name of the second exported mutable i32 global:
// the tests left before the guest's next safepoint and test of the
// interrupt word. To stop a guest, set InterruptExport to non-zero, then
// CountdownExport to 0: the guest traps at its next function entry, return
// from a call or loop header. Only the guest's own decrement racing the
// host's write can undo the 0, and then the guest traps within
// SafepointEvery tests.
const CountdownExport = "gatehost_countdown"

// SafepointEvery is how many tests (function entries, returns from calls
// and loop headers) the guest makes between two safepoints: a
// `memory.grow 0`, which wazero serves in Go, so that the goroutine running
// the guest can be preempted. Go cannot preempt compiled wasm code
// asynchronously; a guest that never left it would hold up every
// stop-the-world of the process (garbage collection) and with it the timer
// that sets the interrupt word.
const SafepointEvery = 1024

// DefaultChunkBytes: bulk memory.copy / memory.fill are done in chunks of at
// most this many bytes, with an interrupt test between chunks.
const DefaultChunkBytes = 1 << 20

// Options configures Module.
type Options struct {
	// ChunkBytes bounds one chunk of a rewritten memory.copy or memory.fill,
	// in bytes; 0 means DefaultChunkBytes.
	ChunkBytes uint32
}

// Sentinels for Error.Err; test with errors.Is.
var (
	// ErrMalformed: the input is not a well-formed module (truncated,
	// over-long LEB128, sections out of order, an index past the module's
	// own definitions, ...).
	ErrMalformed = errors.New("malformed module")
	// ErrUnsupported: the input uses something the rewrite does not decode
	// (threads, exceptions, tail calls, GC, relaxed SIMD, multi-memory,
	// memory64), already exports InterruptExport or CountdownExport, or
	// has no memory.
	ErrUnsupported = errors.New("unsupported module")
)

// Error is a module the rewriter refuses: Offset is the byte offset in the
// input, Reason says why, Err is ErrMalformed or ErrUnsupported.
type Error struct {
	Offset int
	Reason string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("rewrite: %v at byte %d: %s", e.Err, e.Offset, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// Section ids and their required order (binary format, "Modules"): custom
// sections (0) may appear anywhere, the others at most once in this order.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13 // exception handling
)

var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5,
	secGlobal: 6, secExport: 7, secStart: 8, secElement: 9, secDataCount: 10,
	secCode: 11, secData: 12,
}

// Value types the rewrite decodes: numeric, v128 and the two reference
// types of the reference-types proposal.
const (
	valI32       = 0x7f
	valI64       = 0x7e
	valF32       = 0x7d
	valF64       = 0x7c
	valV128      = 0x7b
	valFuncref   = 0x70
	valExternref = 0x6f
)

func isValType(b byte) bool {
	switch b {
	case valI32, valI64, valF32, valF64, valV128, valFuncref, valExternref:
		return true
	}
	return false
}

func isRefType(b byte) bool { return b == valFuncref || b == valExternref }

// section is one section of the input: id and its content's range.
type section struct {
	id         byte
	start, end int
}

// edit is one change to a function body: at input offset at, drop bytes of
// the input are replaced by the code of kind.
type edit struct {
	at, drop int
	kind     byte
	guard    int // editGuardCall: the index in module.guards
}

const (
	editCheck     byte = iota // insert the interrupt test
	editCopy                  // memory.copy 0 0 → call $copy
	editFill                  // memory.fill 0 → call $fill
	editGuardCall             // the function index of a call of a guarded import → its guard's
)

type body struct{ start, end int }

// module is what the rewrite learns from the input.
type module struct {
	in   []byte
	secs []section

	nTypes   uint32
	bulkType int64 // index of an existing (i32,i32,i32)->() type, or -1
	// sigs[i] is type i: its parameter types, a NUL, its result types.
	sigs []string

	// guards are the guarded WASI imports (wasiguard.go); guardOf maps
	// their function indices to their place in guards.
	guards  []guarded
	guardOf map[uint32]int

	nFuncImports, nGlobalImports, nMemImports uint32
	nFuncs, nGlobals, nMems, nExports         uint32
	haveFunctionSec, haveCodeSec              bool
	nCode                                     uint32

	// contentAfterCount[id] is the offset just past the vector count of the
	// type, function, global, export and code sections: new entries are
	// appended after the original ones.
	afterCount [secDataCount + 1]int

	bodies          []body
	edits           []edit
	usesCopy        bool
	usesFill        bool
	firstBulkOffset int
}

func (m *module) totalFuncs() uint32 { return m.nFuncImports + m.nFuncs }

func (m *module) totalGlobals() uint32 { return m.nGlobalImports + m.nGlobals }

// Module returns the rewritten module. It never panics on any input and its
// work is linear in len(wasm). A refusal is an *Error wrapping ErrMalformed
// or ErrUnsupported.
func Module(wasm []byte, opts Options) ([]byte, error) {
	chunk := opts.ChunkBytes
	if chunk == 0 {
		chunk = DefaultChunkBytes
	}
	m := &module{in: wasm, bulkType: -1}
	if err := m.parse(); err != nil {
		return nil, err
	}
	return m.encode(chunk)
}

var preamble = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

func (m *module) parse() error {
	r := &reader{buf: m.in}
	magic, err := r.bytes(4, "magic")
	if err != nil {
		return err
	}
	if string(magic) != string(preamble[:4]) {
		return &Error{Offset: 0, Reason: "not a WebAssembly module (bad magic)", Err: ErrMalformed}
	}
	version, err := r.bytes(4, "version")
	if err != nil {
		return err
	}
	if string(version) != string(preamble[4:]) {
		return &Error{Offset: 4, Reason: fmt.Sprintf("binary format version % x, only 1 is decoded", version), Err: ErrUnsupported}
	}
	lastRank := 0
	for !r.done() {
		hdr := r.off()
		id, _ := r.byte("section id")
		size, err := r.u32("section size")
		if err != nil {
			return err
		}
		content, err := r.bytes(int(size), fmt.Sprintf("section %d content", id))
		if err != nil {
			return err
		}
		s := section{id: id, start: r.off() - int(size), end: r.off()}
		if id == secTag {
			return &Error{Offset: hdr, Reason: "tag section (exception handling)", Err: ErrUnsupported}
		}
		if int(id) >= len(sectionRank) || (id != secCustom && sectionRank[id] == 0) {
			return &Error{Offset: hdr, Reason: fmt.Sprintf("unknown section id %d", id), Err: ErrMalformed}
		}
		if id != secCustom {
			if sectionRank[id] <= lastRank {
				return &Error{Offset: hdr, Reason: fmt.Sprintf("section %d duplicated or out of order", id), Err: ErrMalformed}
			}
			lastRank = sectionRank[id]
		}
		sr := &reader{buf: content, base: s.start}
		if err := m.section(id, sr); err != nil {
			return err
		}
		if !sr.done() {
			return sr.malformed("section %d has %d bytes past its content", id, sr.left())
		}
		m.secs = append(m.secs, s)
	}
	if m.nFuncs != m.nCode {
		return &Error{Offset: len(m.in), Reason: fmt.Sprintf("function section declares %d functions, code section has %d bodies", m.nFuncs, m.nCode), Err: ErrMalformed}
	}
	if (m.usesCopy || m.usesFill) && m.nMemImports+m.nMems == 0 {
		return &Error{Offset: m.firstBulkOffset, Reason: "memory.copy or memory.fill in a module with no memory", Err: ErrMalformed}
	}
	if m.nMemImports+m.nMems == 0 {
		return &Error{Offset: len(m.in), Reason: "a module with no memory (the safepoint is a memory.grow)", Err: ErrUnsupported}
	}
	return nil
}

func (m *module) section(id byte, r *reader) error {
	switch id {
	case secCustom:
		_, err := r.name("custom section name")
		r.pos = len(r.buf) // the rest is the custom section's own bytes
		return err
	case secType:
		return m.typeSection(r)
	case secImport:
		return m.importSection(r)
	case secFunction:
		return m.functionSection(r)
	case secTable:
		return vec(r, "table", func() error { return tableType(r) })
	case secMemory:
		return vec(r, "memory", func() error { m.nMems++; return limits(r, "memory", true) })
	case secGlobal:
		return m.globalSection(r)
	case secExport:
		return m.exportSection(r)
	case secStart:
		return m.funcIndex(r, "start function")
	case secElement:
		return vec(r, "element segment", func() error { return m.elemSegment(r) })
	case secDataCount:
		_, err := r.u32("data count")
		return err
	case secCode:
		return m.codeSection(r)
	case secData:
		return vec(r, "data segment", func() error { return m.dataSegment(r) })
	}
	return r.malformed("unknown section id %d", id)
}

// vec reads a vector count and calls each for every element.
func vec(r *reader, what string, each func() error) error {
	n, err := r.count(what)
	if err != nil {
		return err
	}
	for range n {
		if err := each(); err != nil {
			return err
		}
	}
	return nil
}

func valType(r *reader, what string) (byte, error) {
	off := r.off()
	b, err := r.byte(what)
	if err != nil {
		return 0, err
	}
	if !isValType(b) {
		return 0, r.unsupported(off, "%s: value type 0x%02x", what, b)
	}
	return b, nil
}

func refType(r *reader, what string) error {
	off := r.off()
	b, err := r.byte(what)
	if err != nil {
		return err
	}
	if !isRefType(b) {
		return r.unsupported(off, "%s: reference type 0x%02x", what, b)
	}
	return nil
}

func (m *module) typeSection(r *reader) error {
	n, err := r.count("type")
	if err != nil {
		return err
	}
	m.afterCount[secType] = r.off()
	for i := range n {
		off := r.off()
		form, err := r.byte("type form")
		if err != nil {
			return err
		}
		if form != 0x60 {
			return r.unsupported(off, "type form 0x%02x (only function types 0x60 are decoded)", form)
		}
		var params, results []byte
		var sig []byte
		for j, list := range []*[]byte{&params, &results} {
			if j == 1 {
				sig = append(sig, 0)
			}
			k, err := r.count("function type value")
			if err != nil {
				return err
			}
			for range k {
				v, err := valType(r, "function type")
				if err != nil {
					return err
				}
				if len(*list) < 4 { // enough to recognise (i32,i32,i32)->()
					*list = append(*list, v)
				}
				if len(sig) < 16 { // enough for every guarded WASI type
					sig = append(sig, v)
				}
			}
			if k > 4 {
				*list = append(*list, 0) // longer than any list compared
			}
		}
		m.sigs = append(m.sigs, string(sig))
		if m.bulkType < 0 && string(params) == string([]byte{valI32, valI32, valI32}) && len(results) == 0 {
			m.bulkType = int64(i)
		}
	}
	m.nTypes = n
	return nil
}

func (m *module) typeIndex(r *reader, what string) error {
	_, err := m.typeIndexOf(r, what)
	return err
}

func (m *module) typeIndexOf(r *reader, what string) (uint32, error) {
	off := r.off()
	idx, err := r.u32(what)
	if err != nil {
		return 0, err
	}
	if idx >= m.nTypes {
		return 0, &Error{Offset: off, Reason: fmt.Sprintf("%s: type index %d, the module has %d types", what, idx, m.nTypes), Err: ErrMalformed}
	}
	return idx, nil
}

func (m *module) funcIndex(r *reader, what string) error {
	_, err := m.funcIndexOf(r, what)
	return err
}

func (m *module) funcIndexOf(r *reader, what string) (uint32, error) {
	off := r.off()
	idx, err := r.u32(what)
	if err != nil {
		return 0, err
	}
	if idx >= m.totalFuncs() {
		return 0, &Error{Offset: off, Reason: fmt.Sprintf("%s: function index %d, the module has %d functions", what, idx, m.totalFuncs()), Err: ErrMalformed}
	}
	return idx, nil
}

// funcRef reads a function index used other than by a direct call (an
// export, a table element, ref.func): a guarded import is refused there.
func (m *module) funcRef(r *reader, what string) error {
	off := r.off()
	idx, err := m.funcIndexOf(r, what)
	if err != nil {
		return err
	}
	return m.refuseIndirect(off, idx, what)
}

// globalIndex checks a global index against limit, the globals the module
// defines; the interrupt word is appended at index totalGlobals, so no
// index the input uses may reach it.
func globalIndex(r *reader, what string, limit uint32) error {
	off := r.off()
	idx, err := r.u32(what)
	if err != nil {
		return err
	}
	if idx >= limit {
		return &Error{Offset: off, Reason: fmt.Sprintf("%s: global index %d, the module has %d globals", what, idx, limit), Err: ErrMalformed}
	}
	return nil
}

// limits reads limits (binary format, "Limits"); memory64 and shared
// memories (threads) are refused.
func limits(r *reader, what string, memory bool) error {
	off := r.off()
	flag, err := r.byte(what + " limits")
	if err != nil {
		return err
	}
	switch {
	case flag <= 1:
	case memory && (flag == 2 || flag == 3):
		return r.unsupported(off, "%s: shared memory (threads)", what)
	case flag <= 7:
		return r.unsupported(off, "%s: limits flag 0x%02x (64-bit index)", what, flag)
	default:
		return &Error{Offset: off, Reason: fmt.Sprintf("%s: limits flag 0x%02x", what, flag), Err: ErrMalformed}
	}
	if _, err := r.u32(what + " minimum"); err != nil {
		return err
	}
	if flag == 1 {
		if _, err := r.u32(what + " maximum"); err != nil {
			return err
		}
	}
	return nil
}

func tableType(r *reader) error {
	if err := refType(r, "table"); err != nil {
		return err
	}
	return limits(r, "table", false)
}

func globalType(r *reader) error {
	if _, err := valType(r, "global"); err != nil {
		return err
	}
	off := r.off()
	mut, err := r.byte("global mutability")
	if err != nil {
		return err
	}
	if mut > 1 {
		return &Error{Offset: off, Reason: fmt.Sprintf("global mutability 0x%02x", mut), Err: ErrMalformed}
	}
	return nil
}

func (m *module) importSection(r *reader) error {
	return vec(r, "import", func() error {
		module, err := r.name("import module name")
		if err != nil {
			return err
		}
		name, err := r.name("import name")
		if err != nil {
			return err
		}
		off := r.off()
		kind, err := r.byte("import kind")
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			typ, err := m.typeIndexOf(r, "imported function")
			if err != nil {
				return err
			}
			m.guardImport(module, name, m.nFuncImports, typ)
			m.nFuncImports++
			return nil
		case 1:
			return tableType(r)
		case 2:
			m.nMemImports++
			return limits(r, "imported memory", true)
		case 3:
			m.nGlobalImports++
			return globalType(r)
		case 4:
			return r.unsupported(off, "imported tag (exception handling)")
		}
		return &Error{Offset: off, Reason: fmt.Sprintf("import kind 0x%02x", kind), Err: ErrMalformed}
	})
}

func (m *module) functionSection(r *reader) error {
	n, err := r.count("function")
	if err != nil {
		return err
	}
	m.afterCount[secFunction] = r.off()
	for range n {
		if err := m.typeIndex(r, "function"); err != nil {
			return err
		}
	}
	m.nFuncs, m.haveFunctionSec = n, true
	return nil
}

func (m *module) globalSection(r *reader) error {
	n, err := r.count("global")
	if err != nil {
		return err
	}
	m.afterCount[secGlobal] = r.off()
	for range n {
		if err := globalType(r); err != nil {
			return err
		}
		// A constant expression reads imported or earlier globals only.
		if err := m.constExpr(r, "global initializer", m.totalGlobals()); err != nil {
			return err
		}
		m.nGlobals++
	}
	return nil
}

func (m *module) exportSection(r *reader) error {
	n, err := r.count("export")
	if err != nil {
		return err
	}
	m.afterCount[secExport] = r.off()
	m.nExports = n
	for range n {
		off := r.off()
		name, err := r.name("export name")
		if err != nil {
			return err
		}
		if name == InterruptExport || name == CountdownExport {
			return r.unsupported(off, "the module already exports %q, a name of the rewrite's globals", name)
		}
		koff := r.off()
		kind, err := r.byte("export kind")
		if err != nil {
			return err
		}
		switch kind {
		case 0:
			err = m.funcRef(r, "exported function")
		case 1, 2:
			_, err = r.u32("exported table or memory")
		case 3:
			err = globalIndex(r, "exported global", m.totalGlobals())
		case 4:
			err = r.unsupported(koff, "exported tag (exception handling)")
		default:
			err = &Error{Offset: koff, Reason: fmt.Sprintf("export kind 0x%02x", kind), Err: ErrMalformed}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// elemSegment reads one element segment (binary format, "Element
// Section"): flags 0–7 select table, offset expression and the form of the
// elements.
func (m *module) elemSegment(r *reader) error {
	off := r.off()
	flags, err := r.u32("element segment flags")
	if err != nil {
		return err
	}
	if flags > 7 {
		return &Error{Offset: off, Reason: fmt.Sprintf("element segment flags %d", flags), Err: ErrMalformed}
	}
	if flags&2 != 0 && flags&1 == 0 { // explicit table index
		if _, err := r.u32("element segment table"); err != nil {
			return err
		}
	}
	if flags&1 == 0 { // active: offset expression
		if err := m.constExpr(r, "element segment offset", m.totalGlobals()); err != nil {
			return err
		}
	}
	if flags&3 != 0 { // elemkind or reftype
		if flags&4 == 0 {
			koff := r.off()
			kind, err := r.byte("element kind")
			if err != nil {
				return err
			}
			if kind != 0 {
				return &Error{Offset: koff, Reason: fmt.Sprintf("element kind 0x%02x", kind), Err: ErrMalformed}
			}
		} else if err := refType(r, "element segment"); err != nil {
			return err
		}
	}
	if flags&4 == 0 {
		return vec(r, "element function index", func() error { return m.funcRef(r, "element segment") })
	}
	return vec(r, "element expression", func() error {
		return m.constExpr(r, "element expression", m.totalGlobals())
	})
}

// dataSegment reads one data segment: flags 0 (active, memory 0), 1
// (passive), 2 (active, explicit memory).
func (m *module) dataSegment(r *reader) error {
	off := r.off()
	flags, err := r.u32("data segment flags")
	if err != nil {
		return err
	}
	switch flags {
	case 0, 1:
	case 2:
		moff := r.off()
		mem, err := r.u32("data segment memory")
		if err != nil {
			return err
		}
		if mem != 0 {
			return r.unsupported(moff, "data segment for memory %d (multi-memory)", mem)
		}
	default:
		return &Error{Offset: off, Reason: fmt.Sprintf("data segment flags %d", flags), Err: ErrMalformed}
	}
	if flags != 1 {
		if err := m.constExpr(r, "data segment offset", m.totalGlobals()); err != nil {
			return err
		}
	}
	n, err := r.count("data segment byte")
	if err != nil {
		return err
	}
	_, err = r.bytes(int(n), "data segment bytes")
	return err
}

// constExpr reads a constant expression up to its end (binary format,
// "Constant Expressions", with the extended-const arithmetic).
func (m *module) constExpr(r *reader, what string, globals uint32) error {
	for {
		off := r.off()
		op, err := r.byte(what)
		if err != nil {
			return err
		}
		switch op {
		case 0x0b:
			return nil
		case 0x41:
			_, err = r.sleb(32, "i32.const")
		case 0x42:
			_, err = r.sleb(64, "i64.const")
		case 0x43:
			_, err = r.bytes(4, "f32.const")
		case 0x44:
			_, err = r.bytes(8, "f64.const")
		case 0x23:
			err = globalIndex(r, what+" global.get", globals)
		case 0xd0:
			err = refType(r, "ref.null")
		case 0xd2:
			err = m.funcRef(r, "ref.func")
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // i32/i64 add, sub, mul
		case 0xfd:
			var sub uint32
			if sub, err = r.u32("0xfd sub-opcode"); err == nil {
				if sub != 12 {
					return r.unsupported(off, "%s: opcode 0xfd %d", what, sub)
				}
				_, err = r.bytes(16, "v128.const")
			}
		default:
			return r.unsupported(off, "%s: opcode 0x%02x", what, op)
		}
		if err != nil {
			return err
		}
	}
}

func (m *module) codeSection(r *reader) error {
	n, err := r.count("function body")
	if err != nil {
		return err
	}
	m.afterCount[secCode] = r.off()
	m.nCode, m.haveCodeSec = n, true
	if n != m.nFuncs {
		return r.malformed("code section has %d bodies, function section declares %d functions", n, m.nFuncs)
	}
	for range n {
		size, err := r.u32("function body size")
		if err != nil {
			return err
		}
		start := r.pos
		b, err := r.bytes(int(size), "function body")
		if err != nil {
			return err
		}
		br := &reader{buf: b, base: r.at(start)}
		if err := m.body(br); err != nil {
			return err
		}
	}
	return nil
}

func (m *module) body(r *reader) error {
	var locals uint64
	if err := vec(r, "local declaration", func() error {
		off := r.off()
		k, err := r.u32("local count")
		if err != nil {
			return err
		}
		if locals += uint64(k); locals > math.MaxUint32 {
			return &Error{Offset: off, Reason: "more than 2^32-1 locals", Err: ErrMalformed}
		}
		_, err = valType(r, "local")
		return err
	}); err != nil {
		return err
	}
	m.bodies = append(m.bodies, body{start: r.base, end: r.base + len(r.buf)})
	m.edits = append(m.edits, edit{at: r.off(), kind: editCheck})
	return m.instructions(r)
}
