package engine

import "bytes"

// Module builders for tests: pathological shapes are generated, not
// stored, so each test states the shape it means.

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func section(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(payload)))...), payload...)
}

// fn is one function of a generated module: its parameter count (all
// i32), declared i32 locals and body (without the final end).
type fn struct {
	params, locals int
	body           []byte
}

// genModule returns a module defining fns, each of type (i32^params) -> ().
func genModule(fns ...fn) []byte {
	var types, funcs, code bytes.Buffer
	types.Write(uleb(uint64(len(fns))))
	funcs.Write(uleb(uint64(len(fns))))
	code.Write(uleb(uint64(len(fns))))
	for i, f := range fns {
		types.WriteByte(0x60)
		types.Write(uleb(uint64(f.params)))
		types.Write(bytes.Repeat([]byte{0x7f}, f.params))
		types.WriteByte(0)
		funcs.Write(uleb(uint64(i)))
		var b []byte
		if f.locals > 0 {
			b = append(append([]byte{1}, uleb(uint64(f.locals))...), 0x7f)
		} else {
			b = []byte{0}
		}
		b = append(append(b, f.body...), 0x0b)
		code.Write(uleb(uint64(len(b))))
		code.Write(b)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, section(1, types.Bytes())...)
	m = append(m, section(3, funcs.Bytes())...)
	return append(m, section(10, code.Bytes())...)
}

// nest returns depth nested op (block 0x02, loop 0x03) instructions, empty.
func nest(op byte, depth int) []byte {
	var b []byte
	for range depth {
		b = append(b, op, 0x40)
	}
	for range depth {
		b = append(b, 0x0b)
	}
	return b
}

// ifs returns n sequential ifs on local 0, each setting one of locals
// locals: real branches, which the compiler cannot fold.
func ifs(n, locals int) []byte {
	var b []byte
	for i := range n {
		b = append(b, 0x20, 0x00, 0x04, 0x40, 0x41, 0x01, 0x21) // local.get 0; if; i32.const 1; local.set
		b = append(b, uleb(uint64(i%locals))...)
		b = append(b, 0x0b)
	}
	return b
}
