package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// TestConfigSentOncePerInstance: a gate built with the SDK declares
// config_cache, so its instance is sent the stage config in full once and
// then config_digest alone (abi/SPEC.md §5.3); the gate still decides by
// the config. A gate that says it does not hold the config it was sent
// makes the host send it in full again.
func TestConfigSentOncePerInstance(t *testing.T) {
	ctx := context.Background()
	h := prefixDenyHost(t)
	var mu sync.Mutex
	var sent []abi.Request
	host.OnRequest(h, "deny", func(b []byte) {
		var r abi.Request
		require.NoError(t, json.Unmarshal(b, &r))
		mu.Lock()
		sent = append(sent, r)
		mu.Unlock()
	})
	last := func() abi.Request {
		mu.Lock()
		defer mu.Unlock()
		return sent[len(sent)-1]
	}
	check := func(proposal string, want abi.Verdict) {
		t.Helper()
		d, err := h.Check(ctx, "p", []byte(proposal), host.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, want, d.Verdict, "stages: %+v", d.Stages)
	}
	deleting := `{"actions":[{"id":"a","tool":"delete_repo"}]}`

	check(okProposal, abi.Accepted)
	first := last()
	assert.JSONEq(t, `{"denyPrefixes":["delete_"]}`, string(first.Config))
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, first.ConfigDigest)

	check(deleting, abi.Rejected) // the config the gate holds still denies
	assert.Empty(t, last().Config, "a config the instance holds is left out")
	assert.Equal(t, first.ConfigDigest, last().ConfigDigest)
	check(okProposal, abi.Accepted)
	assert.Empty(t, last().Config)

	// A request naming a config the gate does not hold is inconclusive,
	// never evaluated as though the stage had none.
	req, err := json.Marshal(abi.Request{ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion, RunID: "r", Stage: "deny",
		SubjectKind: abi.SubjectProposal, Subject: json.RawMessage(deleting), ConfigDigest: "sha256:" + strings.Repeat("0", 64),
		Context: abi.Context{Now: "2026-01-01T00:00:00Z"}})
	require.NoError(t, err)
	r, err := h.EvaluateRequest(ctx, "p", req)
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, r.Verdict)
	assert.Equal(t, abi.ReasonConfigNotHeld, r.Reason)

	// After config_not_held the host no longer counts on the instance
	// holding anything.
	check(deleting, abi.Rejected)
	assert.JSONEq(t, `{"denyPrefixes":["delete_"]}`, string(last().Config))
	check(okProposal, abi.Accepted)
	assert.Empty(t, last().Config)
}

// TestConfigDigestChecked: the SDK keeps a config only under its own
// digest; a config sent with another config's digest is a bad request.
func TestConfigDigestChecked(t *testing.T) {
	ctx := context.Background()
	h := prefixDenyHost(t)
	var digest string
	host.OnRequest(h, "deny", func(b []byte) {
		var r abi.Request
		if json.Unmarshal(b, &r) == nil && digest == "" {
			digest = r.ConfigDigest
		}
	})
	d, err := h.Check(ctx, "p", []byte(okProposal), host.RunOptions{})
	require.NoError(t, err)
	require.Equal(t, abi.Accepted, d.Verdict)
	require.NotEmpty(t, digest)
	for _, tc := range []struct{ name, digest string }{
		{"another config under a held digest", digest},
		{"another config under a digest not held", "sha256:" + strings.Repeat("1", 64)},
		{"a digest of another algorithm", "md5:" + strings.Repeat("1", 32)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := json.Marshal(abi.Request{ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion, RunID: "r", Stage: "deny",
				SubjectKind: abi.SubjectProposal, Subject: json.RawMessage(`{"actions":[{"id":"a","tool":"delete_repo"}]}`),
				Config: json.RawMessage(`{"denyPrefixes":[]}`), ConfigDigest: tc.digest, Context: abi.Context{Now: "2026-01-01T00:00:00Z"}})
			require.NoError(t, err)
			r, err := h.EvaluateRequest(ctx, "p", req)
			require.NoError(t, err)
			assert.Equal(t, abi.Inconclusive, r.Verdict)
			assert.Equal(t, abi.ReasonBadRequest, r.Reason)
		})
	}
}

// prefixDenyHost is a host whose pipeline p runs the prefixdeny gate,
// denying tools that start with delete_, on a pool of one instance.
func prefixDenyHost(t *testing.T) *host.Host {
	return hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"deny": {Path: prefixDenyWasm}},
		Pipelines: map[string]host.PipelineConfig{"p": {Subject: abi.SubjectProposal, Stages: []host.StageConfig{{
			Plugin: "deny", Config: json.RawMessage(`{"denyPrefixes":["delete_"]}`),
		}}}},
		PoolSize: 1,
	})
}
