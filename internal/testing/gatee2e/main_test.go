package gatee2e

import (
	"testing"

	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// Modules built once for the whole test binary.
var (
	staticVerifyWasm string
	execWasm         string
	repoRoot         string
)

func TestMain(m *testing.M) {
	hosttest.Main(m, &repoRoot,
		hosttest.Module{Path: &staticVerifyWasm, Pkg: "plugins/static-verify/wasm"},
		hosttest.Module{Path: &execWasm, Pkg: "plugins/exec/wasm"},
	)
}
