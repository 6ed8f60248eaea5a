package engine

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckShapePolicyGate: the policy gate, which links a Cedar
// evaluator and validator and is the largest built-in module, passes the
// default limits, with less margin than the other built-in gates (about
// 6x on total local blocks and 8x on module bytes).
func TestCheckShapePolicyGate(t *testing.T) {
	wasm, err := os.ReadFile("../../build/plugins/policy.wasm")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("run make build first")
	}
	require.NoError(t, err)
	s, err := CheckShape(wasm, Limits{})
	require.NoError(t, err)
	t.Logf("policy: %+v", s)
}
