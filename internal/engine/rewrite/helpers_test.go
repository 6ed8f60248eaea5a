package rewrite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
)

// assemble turns testdata/<name> into a module with wat2wasm, which the
// build machine and .ci/run install: a missing wat2wasm is a failure.
func assemble(t testing.TB, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".wasm")
	b, err := exec.Command("wat2wasm", "--enable-all", filepath.Join("testdata", name), "-o", out).CombinedOutput()
	require.NoError(t, err, "wat2wasm %s: %s", name, b)
	return readFile(t, out)
}

// newRuntime is a compiling wazero runtime with WithCloseOnContextDone
// off: only the rewrite can stop a guest in it.
func newRuntime(t testing.TB) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(false))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	return rt
}

// mustRewrite rewrites wasm and fails the test on a refusal.
func mustRewrite(t testing.TB, wasm []byte, opts Options) []byte {
	t.Helper()
	out, err := Module(wasm, opts)
	require.NoError(t, err)
	return out
}

// Hand-built modules, for inputs wat2wasm will not produce.

var header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

func sec(id byte, content ...byte) []byte {
	return append(appendULEB([]byte{id}, uint64(len(content))), content...)
}

func wasmOf(secs ...[]byte) []byte {
	out := append([]byte(nil), header...)
	for _, s := range secs {
		out = append(out, s...)
	}
	return out
}

// funcModule is a module of one function () -> () with the given body
// (locals and expression) and a memory, with extra sections (table,
// global, export, ...; no custom ones) placed in section order.
func funcModule(body []byte, between ...[]byte) []byte {
	secs := [][]byte{sec(secType, 0x01, 0x60, 0x00, 0x00), sec(secFunction, 0x01, 0x00)}
	secs = append(secs, append(between, sec(secMemory, 0x01, 0x00, 0x01))...)
	slices.SortStableFunc(secs, func(a, b []byte) int { return sectionRank[a[0]] - sectionRank[b[0]] })
	code := appendULEB([]byte{0x01}, uint64(len(body)))
	return wasmOf(append(secs, sec(secCode, append(code, body...)...))...)
}

// sections splits a module into its sections' contents, by id (custom
// sections are listed in order under id 0).
func sections(t testing.TB, wasm []byte) map[byte][][]byte {
	t.Helper()
	require.Equal(t, header, wasm[:8])
	r := &reader{buf: wasm, pos: 8}
	out := map[byte][][]byte{}
	for !r.done() {
		id, err := r.byte("id")
		require.NoError(t, err)
		n, err := r.u32("size")
		require.NoError(t, err)
		c, err := r.bytes(int(n), "content")
		require.NoError(t, err)
		out[id] = append(out[id], c)
	}
	return out
}

// vecCount is the count that starts a section's content.
func vecCount(t testing.TB, content []byte) uint32 {
	t.Helper()
	n, err := (&reader{buf: content}).u32("count")
	require.NoError(t, err)
	return n
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
