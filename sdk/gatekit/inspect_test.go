package gatekit_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

func TestDescribeAndInspect(t *testing.T) {
	t.Parallel()
	wasm, err := os.ReadFile(build(t, "plugins/static-verify/wasm"))
	require.NoError(t, err)
	d, raw, err := gatekit.Describe(context.Background(), wasm, testwasm.CacheDir())
	require.NoError(t, err)
	assert.Equal(t, "static-verify", d.Name)
	assert.Contains(t, string(raw), `"subject_kinds":["proposal"]`)
	info, err := gatekit.Inspect(context.Background(), wasm)
	require.NoError(t, err)
	assert.Empty(t, info.Problems)
	require.NotNil(t, info.Memory)

	// A module with every shape problem at once: each is listed.
	bad := []byte("\x00asm\x01\x00\x00\x00")
	info, err = gatekit.Inspect(context.Background(), bad)
	require.NoError(t, err)
	assert.Len(t, info.Problems, 5, "four missing exports and no memory: %v", info.Problems)
	_, err = gatekit.Inspect(context.Background(), []byte("not wasm"))
	assert.ErrorIs(t, err, host.ErrCompile)
	_, _, err = gatekit.Describe(context.Background(), bad, "")
	var le *host.LoadError
	assert.ErrorAs(t, err, &le)
}
