package server

import (
	"testing"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

var (
	repoRoot string
	svWasm   string
)

func TestMain(m *testing.M) {
	testwasm.Main(m, func() (err error) {
		if repoRoot, err = testwasm.Root(); err != nil {
			return err
		}
		svWasm, err = testwasm.Go("plugins/static-verify/wasm")
		return err
	})
}
