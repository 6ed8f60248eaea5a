package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/engine/rewrite"
	"github.com/gatehost/gatehost/internal/engine/wasmop"
)

// TestShapeCheckAndRewriterShareOneTable: the pre-compile shape check and
// the interrupt rewriter decode instructions by one table (package
// wasmop), so for every opcode and every 0xfc and 0xfd sub-opcode each
// refuses the instruction as unknown exactly when the table does not know
// it. The immediates are zeros, which every shape reads as some value.
func TestShapeCheckAndRewriterShareOneTable(t *testing.T) {
	check := func(t *testing.T, name string, instr []byte, known bool) {
		t.Helper()
		body := append(append([]byte{}, instr...), make([]byte, 20)...) // zeros: immediates, then unreachables
		wasm := genModule(fn{body: body})

		_, err := CheckShape(wasm, Limits{})
		shapeUnknown := err != nil && strings.Contains(err.Error(), "unsupported")
		assert.Equal(t, !known, shapeUnknown, "%s: shape check: %v", name, err)

		_, err = rewrite.Module(wasm, rewrite.Options{})
		var re *rewrite.Error
		rewriteUnknown := errors.As(err, &re) && errors.Is(err, rewrite.ErrUnsupported) && strings.HasPrefix(re.Reason, "opcode ")
		assert.Equal(t, !known, rewriteUnknown, "%s: rewriter: %v", name, err)
	}
	var n int
	for op := range 256 {
		switch op {
		case 0xfc, 0xfd:
			for sub := range uint64(300) {
				imm := wasmop.MiscOp(uint32(sub))
				if op == 0xfd {
					imm = wasmop.SIMDOp(uint32(sub))
				}
				check(t, fmt.Sprintf("%#x %d", op, sub), append([]byte{byte(op)}, uleb(sub)...), imm != wasmop.Unknown)
				n++
			}
		default:
			check(t, fmt.Sprintf("%#x", op), []byte{byte(op)}, wasmop.Op(byte(op)) != wasmop.Unknown)
			n++
		}
	}
	require.Equal(t, 254+600, n)
}
