package host_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
)

func TestRunIDOption(t *testing.T) {
	h := newHost(t, host.Config{Plugins: map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}}, Pipelines: onePipeline("sv", "catalog")})
	id := "0123456789abcdef0123456789abcdef"
	d, err := h.Check(context.Background(), "p", []byte(`{"actions":[]}`), host.RunOptions{RunID: id})
	require.NoError(t, err)
	assert.Equal(t, id, d.RunID)
	_, err = h.Check(context.Background(), "p", []byte(`{"actions":[]}`), host.RunOptions{RunID: "not-hex"})
	assert.ErrorContains(t, err, "RunID")
}

func TestEvaluateRequest(t *testing.T) {
	h := newHost(t, host.Config{Plugins: map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}}, Pipelines: onePipeline("sv", "catalog")})
	for _, tc := range []struct {
		name, request string
		reason        string
	}{
		{"not JSON", "nope", "bad_request"},
		{"other ABI major", `{"abi_version":2,"subject_kind":"proposal","subject":{"actions":[]}}`, "unsupported_abi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := h.EvaluateRequest(context.Background(), "p", []byte(tc.request))
			require.NoError(t, err)
			assert.NoError(t, r.Err(), "the gate answered")
			assert.Equal(t, abi.Inconclusive, r.Verdict)
			assert.Equal(t, tc.reason, r.Reason)
		})
	}
	_, err := h.EvaluateRequest(context.Background(), "nope", []byte("{}"))
	assert.ErrorIs(t, err, host.ErrUnknownPipeline)
	d, ok := h.Descriptor("sv")
	require.True(t, ok)
	assert.Equal(t, "static-verify", d.Name)
}

func TestDescribeAndInspect(t *testing.T) {
	wasm, err := os.ReadFile(staticVerifyWasm)
	require.NoError(t, err)
	d, raw, err := host.Describe(context.Background(), wasm, cacheDir)
	require.NoError(t, err)
	assert.Equal(t, "static-verify", d.Name)
	assert.Contains(t, string(raw), `"subject_kinds":["proposal"]`)
	info, err := host.Inspect(context.Background(), wasm)
	require.NoError(t, err)
	assert.Empty(t, info.Problems)
	require.NotNil(t, info.Memory)

	// A module with every shape problem at once: each is listed.
	bad := []byte("\x00asm\x01\x00\x00\x00")
	info, err = host.Inspect(context.Background(), bad)
	require.NoError(t, err)
	assert.Len(t, info.Problems, 5, "four missing exports and no memory: %v", info.Problems)
	_, err = host.Inspect(context.Background(), []byte("not wasm"))
	assert.ErrorIs(t, err, host.ErrCompile)
	_, _, err = host.Describe(context.Background(), bad, "")
	var le *host.LoadError
	assert.ErrorAs(t, err, &le)
}
