package gatetest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoWebAssemblyRuntime: the native harness runs a gate's Go code in go
// test, so a gate's tests must not pull in a WebAssembly runtime (that is
// the conformance kit's, sdk/gatekit), with either runtime build.
func TestNoWebAssemblyRuntime(t *testing.T) {
	for _, tags := range []string{"", "wazy"} {
		t.Run("tags="+tags, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-tags", tags, "github.com/gatehost/gatehost/sdk/gatetest").CombinedOutput()
			require.NoError(t, err, "%s", out)
			deps := strings.Fields(string(out))
			require.Contains(t, deps, "github.com/gatehost/gatehost/sdk", "the listing is of the harness")
			for _, d := range deps {
				assert.NotContains(t, d, "tetratelabs/wazero")
				assert.NotContains(t, d, "samyfodil/wazy")
				assert.NotEqual(t, "github.com/gatehost/gatehost/host", d)
			}
		})
	}
}
