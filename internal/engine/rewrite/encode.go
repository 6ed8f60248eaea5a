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

// bulkType is (i32,i32,i32)->(), the type of $copy and $fill.
var bulkType = []byte{0x60, 0x03, valI32, valI32, valI32, 0x00}

// indices are those of what the rewrite appends.
type indices struct {
	interrupt, countdown uint32 // globals
	copy, fill           uint32 // functions
}

// check is the code inserted at every function entry, loop header and
// return from a call:
//
//	global.get $countdown  i32.const 1  i32.sub  global.set $countdown
//	global.get $countdown  i32.const 0  i32.le_s  if
//	  global.get $interrupt  if  unreachable  end
//	  i32.const 0  memory.grow  drop  ;; the safepoint
//	  i32.const SafepointEvery  global.set $countdown
//	end
//
// One counter on the hot path, not a test of the word and a counter: the
// word is tested only when the counter runs out, which the host makes
// happen at the next test by zeroing the counter after setting the word
// (CountdownExport). The safepoint is inline: as a call to a helper it
// cost 1.4–1.8× on a call tree without loops, inline 1.0–1.3×.
func check(b []byte, ix indices) []byte {
	b = appendULEB(append(b, 0x23), uint64(ix.countdown))
	b = appendULEB(append(b, 0x41, 0x01, 0x6b, 0x24), uint64(ix.countdown))
	b = appendULEB(append(b, 0x23), uint64(ix.countdown))
	b = append(b, 0x41, 0x00, 0x4c, 0x04, 0x40)
	b = safepoint(interruptTest(b, ix))
	b = appendSLEB(append(b, 0x41), SafepointEvery)
	return append(appendULEB(append(b, 0x24), uint64(ix.countdown)), 0x0b)
}

// interruptTest is `global.get $interrupt; if; unreachable; end`.
func interruptTest(b []byte, ix indices) []byte {
	b = appendULEB(append(b, 0x23), uint64(ix.interrupt))
	return append(b, 0x04, 0x40, 0x00, 0x0b)
}

// safepoint is `i32.const 0; memory.grow; drop`: wazero serves memory.grow
// in Go, where the goroutine running the guest can be preempted.
func safepoint(b []byte) []byte { return append(b, 0x41, 0x00, 0x40, 0x00, 0x1a) }

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

// chunkHead opens `block loop`, leaves when n (local 2) is 0, tests the
// interrupt word and sets k (local 3) to min(n, chunk).
func chunkHead(b []byte, ix indices, chunk uint32) []byte {
	b = append(b, 0x02, 0x40, 0x03, 0x40)
	b = append(b, 0x20, 2, 0x45, 0x0d, 1) // local.get n; i32.eqz; br_if 1
	b = interruptTest(b, ix)
	b = append(b, 0x41)
	b = appendSLEB(b, int64(int32(chunk))) // i32.const chunk
	b = append(b, 0x20, 2, 0x20, 2, 0x41)
	b = appendSLEB(b, int64(int32(chunk)))
	return append(b, 0x4b, 0x1b, 0x21, 3) // i32.gt_u; select; local.set k
}

// chunkTail passes a safepoint when more bytes remain (n, local 2, is not
// 0) and branches back to the chunk loop. A safepoint is a call into the
// runtime (memory.grow is served in Go): between chunks, each of which is
// long enough to pay for it, never for the one chunk of a small copy or
// fill, which Go's memmove and memclr make for every few bytes they move.
func chunkTail(b []byte) []byte {
	b = append(b, 0x20, 2, 0x04, 0x40) // local.get n; if
	b = safepoint(b)
	return append(b, 0x0b, 0x0c, 0) // end; br 0
}

// advance adds k to local i.
func advance(b []byte, i byte) []byte { return append(b, 0x20, i, 0x20, 3, 0x6a, 0x21, i) }

// shrink subtracts k from n.
func shrink(b []byte) []byte { return append(b, 0x20, 2, 0x20, 3, 0x6b, 0x21, 2) }

// copyBody is $copy(dst, src, n): memory.copy in chunks, backwards when
// dst > src so that overlapping ranges behave as one memmove.
func copyBody(ix indices, chunk uint32) []byte {
	b := []byte{0x01, 0x01, valI32} // one i32 local: k
	b = boundsCheck(b, 0)
	b = boundsCheck(b, 1)
	b = append(b, 0x72, 0x04, 0x40, 0x00, 0x0b)       // i32.or; if unreachable end
	b = append(b, 0x20, 0, 0x20, 1, 0x4b, 0x04, 0x40) // if dst > src
	b = chunkHead(b, ix, chunk)
	b = shrink(b)
	b = append(b, 0x20, 0, 0x20, 2, 0x6a, 0x20, 1, 0x20, 2, 0x6a, 0x20, 3) // dst+n, src+n, k
	b = append(b, 0xfc, 10, 0, 0)                                          // memory.copy
	b = append(chunkTail(b), 0x0b, 0x0b)                                   // end loop, block
	b = append(b, 0x05)                                                    // else
	b = chunkHead(b, ix, chunk)
	b = append(b, 0x20, 0, 0x20, 1, 0x20, 3, 0xfc, 10, 0, 0) // memory.copy dst src k
	b = advance(b, 0)
	b = advance(b, 1)
	b = shrink(b)
	return append(chunkTail(b), 0x0b, 0x0b, 0x0b, 0x0b) // end loop, block, if; end func
}

// fillBody is $fill(dst, val, n): memory.fill in chunks.
func fillBody(ix indices, chunk uint32) []byte {
	b := []byte{0x01, 0x01, valI32}
	b = boundsCheck(b, 0)
	b = append(b, 0x04, 0x40, 0x00, 0x0b)
	b = chunkHead(b, ix, chunk)
	b = append(b, 0x20, 0, 0x20, 1, 0x20, 3, 0xfc, 11, 0) // memory.fill dst val k
	b = advance(b, 0)
	b = shrink(b)
	return append(chunkTail(b), 0x0b, 0x0b, 0x0b) // end loop, block; end func
}

// encode writes the rewritten module: sections the rewrite does not change
// byte for byte, the changed ones re-encoded, absent ones it needs created
// at their place in the section order.
func (m *module) encode(chunk uint32) ([]byte, error) {
	if m.totalGlobals() > math.MaxUint32-2 || uint64(m.totalFuncs())+2+uint64(len(m.guards)) > math.MaxUint32 || m.nTypes == math.MaxUint32 {
		return nil, &Error{Offset: 0, Reason: "no index left for the added globals, types or functions", Err: ErrUnsupported}
	}
	ix := indices{interrupt: m.totalGlobals(), countdown: m.totalGlobals() + 1}
	next := m.totalFuncs()
	if m.usesCopy {
		ix.copy, next = next, next+1
	}
	if m.usesFill {
		ix.fill, next = next, next+1
	}
	for i := range m.guards {
		if m.guards[i].used {
			m.guards[i].index, next = next, next+1
		}
	}

	// The helpers' type: an identical existing one, or appended.
	var funcs, newType []byte
	var helpers [][]byte
	if m.usesCopy || m.usesFill {
		bt := uint32(m.bulkType)
		if m.bulkType < 0 {
			bt, newType = m.nTypes, bulkType
		}
		if m.usesCopy {
			funcs = appendULEB(funcs, uint64(bt))
			helpers = append(helpers, copyBody(ix, chunk))
		}
		if m.usesFill {
			funcs = appendULEB(funcs, uint64(bt))
			helpers = append(helpers, fillBody(ix, chunk))
		}
	}
	for _, g := range m.guards {
		if g.used {
			funcs = appendULEB(funcs, uint64(g.typ))
			helpers = append(helpers, guardBody(g.rule, g.fn, ix, chunk))
		}
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
	if newType != nil {
		extend(secType, m.nTypes, 1, newType)
	}
	if len(helpers) > 0 {
		extend(secFunction, m.nFuncs, uint32(len(helpers)), funcs)
	}
	globals := []byte{valI32, 0x01, 0x41, 0x00, 0x0b, valI32, 0x01, 0x41} // interrupt = 0; countdown =
	globals = append(appendSLEB(globals, SafepointEvery), 0x0b)
	extend(secGlobal, m.nGlobals, 2, globals)
	var exp []byte
	for _, e := range []struct {
		name  string
		index uint32
	}{{InterruptExport, ix.interrupt}, {CountdownExport, ix.countdown}} {
		exp = appendULEB(exp, uint64(len(e.name)))
		exp = append(exp, e.name...)
		exp = appendULEB(append(exp, 0x03), uint64(e.index))
	}
	extend(secExport, m.nExports, 2, exp)
	if m.haveCodeSec || len(helpers) > 0 {
		contents[secCode] = m.code(ix, helpers)
	}
	for _, c := range contents {
		if uint64(len(c)) > math.MaxUint32 {
			return nil, &Error{Offset: 0, Reason: fmt.Sprintf("a rewritten section would be %d bytes, over 2^32-1", len(c)), Err: ErrUnsupported}
		}
	}

	out := make([]byte, 0, len(m.in)+len(m.in)/4+256)
	out = append(out, preamble...)
	emit := func(id byte, c []byte) {
		out = append(out, id)
		out = appendULEB(out, uint64(len(c)))
		out = append(out, c...)
	}
	// Created sections go before the first present section ranked after
	// them; present ones are replaced in place.
	placed := map[byte]bool{}
	flush := func(before int) {
		for _, id := range []byte{secType, secFunction, secGlobal, secExport, secCode} {
			if c, ok := contents[id]; ok && !placed[id] && sectionRank[id] < before {
				emit(id, c)
				placed[id] = true
			}
		}
	}
	for _, s := range m.secs {
		if s.id == secCustom {
			emit(s.id, m.in[s.start:s.end])
			continue
		}
		flush(sectionRank[s.id])
		if c, ok := contents[s.id]; ok {
			emit(s.id, c)
			placed[s.id] = true
			continue
		}
		emit(s.id, m.in[s.start:s.end])
	}
	flush(math.MaxInt)
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
func (m *module) code(ix indices, helpers [][]byte) []byte {
	out := appendULEB(nil, uint64(m.nCode)+uint64(len(helpers)))
	chk := check(nil, ix)
	call := func(idx uint32) []byte { return appendULEB([]byte{0x10}, uint64(idx)) }
	copyCall, fillCall := call(ix.copy), call(ix.fill)
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
			case editGuardCall:
				buf = appendULEB(buf, uint64(m.guards[ed.guard].index))
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
