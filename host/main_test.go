package host_test

import (
	"testing"

	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// Modules built once for the whole test binary.
var (
	staticVerifyWasm string
	execWasm         string
	flakyWasm        string
	probeWasm        string
	prefixDenyWasm   string
	repoRoot         string
	cacheDir         = testwasm.CacheDir()
)

func TestMain(m *testing.M) {
	hosttest.Main(m, &repoRoot,
		hosttest.Module{Path: &staticVerifyWasm, Pkg: "plugins/static-verify/wasm"},
		hosttest.Module{Path: &flakyWasm, Pkg: "internal/testing/testguests/flaky"},
		hosttest.Module{Path: &probeWasm, Pkg: "internal/testing/testguests/probe"},
		hosttest.Module{Path: &execWasm, Pkg: "plugins/exec/wasm"},
		hosttest.Module{Path: &prefixDenyWasm, Pkg: "internal/testing/testguests/prefixdeny"},
	)
}
