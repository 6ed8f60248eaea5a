package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

func TestRunIDOption(t *testing.T) {
	h := hosttest.New(t, host.Config{Plugins: map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}}, Pipelines: hosttest.OnePipeline("sv", "catalog", "schema")})
	id := "0123456789abcdef0123456789abcdef"
	d, err := h.Check(context.Background(), "p", []byte(`{"actions":[]}`), host.RunOptions{RunID: id})
	require.NoError(t, err)
	assert.Equal(t, id, d.RunID)
	_, err = h.Check(context.Background(), "p", []byte(`{"actions":[]}`), host.RunOptions{RunID: "not-hex"})
	assert.ErrorContains(t, err, "RunID")
}

func TestEvaluateRequest(t *testing.T) {
	h := hosttest.New(t, host.Config{Plugins: map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}}, Pipelines: hosttest.OnePipeline("sv", "catalog", "schema")})
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
	require.NoError(t, h.Close(context.Background()))
	_, err = h.EvaluateRequest(context.Background(), "p", []byte("{}"))
	assert.ErrorIs(t, err, host.ErrClosed)
}
