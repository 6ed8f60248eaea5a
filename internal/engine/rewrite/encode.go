package rewrite

import (
	"fmt"
	"math"
)

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// helperType is (i32,i32,i32)->(), the type of $copy and $fill.
var helperType = []byte{0x60, 0x03, valI32, valI32, valI32, 0x00}

// check is `global.get g; if; unreachable; end`.
func check(b []byte, g uint32) []byte {
	b = append(b, 0x23)
	b = appendULEB(b, uint64(g))
	return append(b, 0x04, 0x40, 0x00, 0x0b)
}

// boundsCheck traps unless base+n fits in memory, for the locals base and
// n (i32), computed in i64 so that it cannot wrap: the bounds rule of
// memory.copy and memory.fill, which write nothing when it fails.
func boundsCheck(b []byte, base byte) []byte {
	return append(b,
		0x20, base, 0xad, // local.get base; i64.extend_i32_u
		0x20, 2, 0xad, // local.get n; i64.extend_i32_u
		0x7c,             // i64.add
		0x3f, 0x00, 0xad, // memory.size; i64.extend_i32_u
		0x42, 16, 0x86, // i64.const 16; i64.shl (pages → bytes)
		0x56, // i64.gt_u
	)
}

// chunkHead opens `block loop`, tests the interrupt word, leaves when n
// (local 2) is 0 and sets k (local 3) to min(n, chunk).
func chunkHead(b []byte, g, chunk uint32) []byte {
	b = append(b, 0x02, 0x40, 0x03, 0x40)
	b = check(b, g)
	b = append(b, 0x20, 2, 0x45, 0x0d, 1) // local.get n; i32.eqz; br_if 1
	b = append(b, 0x41)
	b = appendSLEB(b, int64(int32(chunk))) // i32.const chunk
	b = append(b, 0x20, 2, 0x20, 2, 0x41)
	b = appendSLEB(b, int64(int32(chunk)))
	return append(b, 0x4b, 0x1b, 0x21, 3) // i32.gt_u; select; local.set k
}

// advance adds k to local i.
func advance(b []byte, i byte) []byte { return append(b, 0x20, i, 0x20, 3, 0x6a, 0x21, i) }

// shrink subtracts k from n.
func shrink(b []byte) []byte { return append(b, 0x20, 2, 0x20, 3, 0x6b, 0x21, 2) }

// copyBody is $copy(dst, src, n): memory.copy in chunks, backwards when
// dst > src so that overlapping ranges behave as one memmove.
func copyBody(g, chunk uint32) []byte {
	b := []byte{0x01, 0x01, valI32} // one i32 local: k
	b = boundsCheck(b, 0)
	b = boundsCheck(b, 1)
	b = append(b, 0x72, 0x04, 0x40, 0x00, 0x0b)       // i32.or; if unreachable end
	b = append(b, 0x20, 0, 0x20, 1, 0x4b, 0x04, 0x40) // if dst > src
	b = chunkHead(b, g, chunk)
	b = shrink(b)
	b = append(b, 0x20, 0, 0x20, 2, 0x6a, 0x20, 1, 0x20, 2, 0x6a, 0x20, 3) // dst+n, src+n, k
	b = append(b, 0xfc, 10, 0, 0, 0x0c, 0, 0x0b, 0x0b)                     // memory.copy; br 0; end; end
	b = append(b, 0x05)                                                    // else
	b = chunkHead(b, g, chunk)
	b = append(b, 0x20, 0, 0x20, 1, 0x20, 3, 0xfc, 10, 0, 0) // memory.copy dst src k
	b = advance(b, 0)
	b = advance(b, 1)
	b = shrink(b)
	return append(b, 0x0c, 0, 0x0b, 0x0b, 0x0b, 0x0b) // br 0; end loop, block, if; end func
}

// fillBody is $fill(dst, val, n): memory.fill in chunks.
func fillBody(g, chunk uint32) []byte {
	b := []byte{0x01, 0x01, valI32}
	b = boundsCheck(b, 0)
	b = append(b, 0x04, 0x40, 0x00, 0x0b)
	b = chunkHead(b, g, chunk)
	b = append(b, 0x20, 0, 0x20, 1, 0x20, 3, 0xfc, 11, 0) // memory.fill dst val k
	b = advance(b, 0)
	b = shrink(b)
	return append(b, 0x0c, 0, 0x0b, 0x0b, 0x0b)
}

// encode writes the rewritten module: sections the rewrite does not change
// byte for byte, the changed ones re-encoded, absent ones it needs created
// at their place in the section order.
func (m *module) encode(chunk uint32) ([]byte, error) {
	g := m.totalGlobals()
	if g == math.MaxUint32 || m.totalFuncs() > math.MaxUint32-2 || m.nTypes == math.MaxUint32 {
		return nil, &Error{Offset: 0, Reason: "no index left for the added global, type or functions", Err: ErrUnsupported}
	}
	var helpers [][]byte
	var copyIdx, fillIdx uint32
	next := m.totalFuncs()
	if m.usesCopy {
		copyIdx, next = next, next+1
		helpers = append(helpers, copyBody(g, chunk))
	}
	if m.usesFill {
		fillIdx = next
		helpers = append(helpers, fillBody(g, chunk))
	}
	typeIdx := uint32(m.helperTyp)
	addType := len(helpers) > 0 && m.helperTyp < 0
	if addType {
		typeIdx = m.nTypes
	}

	// New contents, by section id.
	contents := map[byte][]byte{}
	extend := func(id byte, count uint32, added uint32, tail []byte) {
		b := appendULEB(nil, uint64(count+added))
		if s, ok := m.find(id); ok {
			b = append(b, m.in[m.afterCount[id]:s.end]...)
		}
		contents[id] = append(b, tail...)
	}
	if addType {
		extend(secType, m.nTypes, 1, helperType)
	}
	if len(helpers) > 0 {
		var tail []byte
		for range helpers {
			tail = appendULEB(tail, uint64(typeIdx))
		}
		extend(secFunction, m.nFuncs, uint32(len(helpers)), tail)
	}
	extend(secGlobal, m.nGlobals, 1, []byte{valI32, 0x01, 0x41, 0x00, 0x0b})
	exp := appendULEB(nil, uint64(len(InterruptExport)))
	exp = append(exp, InterruptExport...)
	exp = appendULEB(append(exp, 0x03), uint64(g))
	extend(secExport, m.nExports, 1, exp)
	if m.haveCodeSec || len(helpers) > 0 {
		contents[secCode] = m.code(g, copyIdx, fillIdx, helpers)
	}

	out := make([]byte, 0, len(m.in)+len(m.in)/4+256)
	out = append(out, preamble...)
	emit := func(id byte, c []byte) []byte {
		out = append(out, id)
		out = appendULEB(out, uint64(len(c)))
		return append(out, c...)
	}
	// Created sections go before the first present section ranked after
	// them; present ones are replaced in place.
	placed := map[byte]bool{}
	flush := func(before int) {
		for _, id := range []byte{secType, secFunction, secGlobal, secExport, secCode} {
			if c, ok := contents[id]; ok && !placed[id] && sectionRank[id] < before {
				out = emit(id, c)
				placed[id] = true
			}
		}
	}
	for _, s := range m.secs {
		if s.id != secCustom {
			flush(sectionRank[s.id])
		}
		if c, ok := contents[s.id]; ok && s.id != secCustom {
			out = emit(s.id, c)
			placed[s.id] = true
			continue
		}
		out = emit(s.id, m.in[s.start:s.end])
	}
	flush(math.MaxInt)
	for _, c := range contents {
		if uint64(len(c)) > math.MaxUint32 {
			return nil, &Error{Offset: 0, Reason: fmt.Sprintf("a rewritten section would be %d bytes, over 2^32-1", len(c)), Err: ErrUnsupported}
		}
	}
	return out, nil
}

func (m *module) find(id byte) (section, bool) {
	for _, s := range m.secs {
		if s.id == id {
			return s, true
		}
	}
	return section{}, false
}

// code re-encodes the code section: every body with its edits applied, then
// the helpers.
func (m *module) code(g, copyIdx, fillIdx uint32, helpers [][]byte) []byte {
	out := appendULEB(nil, uint64(m.nCode)+uint64(len(helpers)))
	chk := check(nil, g)
	call := func(idx uint32) []byte { return appendULEB([]byte{0x10}, uint64(idx)) }
	copyCall, fillCall := call(copyIdx), call(fillIdx)
	var buf []byte
	e := 0
	for _, b := range m.bodies {
		buf = buf[:0]
		at := b.start
		for ; e < len(m.edits) && m.edits[e].at < b.end; e++ {
			ed := m.edits[e]
			buf = append(buf, m.in[at:ed.at]...)
			switch ed.kind {
			case editCheck:
				buf = append(buf, chk...)
			case editCopy:
				buf = append(buf, copyCall...)
			case editFill:
				buf = append(buf, fillCall...)
			}
			at = ed.at + ed.drop
		}
		buf = append(buf, m.in[at:b.end]...)
		out = appendULEB(out, uint64(len(buf)))
		out = append(out, buf...)
	}
	for _, h := range helpers {
		out = appendULEB(out, uint64(len(h)))
		out = append(out, h...)
	}
	return out
}
