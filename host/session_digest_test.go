package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/exec"
)

// TestSessionAnswersFollowTheSet: the exec gate's warm instance remembers
// session.get answers by the run's session digest (abi/SPEC.md §7.9), so
// every change to the session must reach the next run: an activation, a
// revocation, and a session file replaced by hand with the same id and
// version but other tools, which a key of id and version would have
// mistaken for the set it remembered. The digest goes only to a stage
// granted the session.
func TestSessionAnswersFollowTheSet(t *testing.T) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(t)
	path := filepath.Join(t.TempDir(), "sessions.json")
	sessions := session.NewFileStore(path)
	stage := func(caps ...string) host.PipelineConfig {
		return host.PipelineConfig{Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
			Plugin: "exec", Capabilities: caps, Config: hosttest.GitHubExecConfig}}}
	}
	h := hosttest.NewPartial(t, host.Config{
		Plugins:  map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:  store,
		Sessions: sessions,
		Pipelines: map[string]host.PipelineConfig{
			"exec":       stage("catalog", "session"),
			"no-session": stage("catalog"),
		},
		PoolSize: 1, // one instance, warm from run to run
	})
	var mu sync.Mutex
	digests := map[string]string{} // pipeline → the last request's session_digest
	host.OnRequest(h, "exec", func(b []byte) {
		var r abi.Request
		require.NoError(t, json.Unmarshal(b, &r))
		mu.Lock()
		digests[r.Pipeline] = r.Context.SessionDigest
		mu.Unlock()
	})
	_, err := session.Create(ctx, sessions, store.Snapshot(), "dev")
	require.NoError(t, err)

	call := []byte(`{"id":"c1","tool":"get_me","parameters":{}}`)
	check := func(step string, want abi.Verdict, wantCode string) {
		t.Helper()
		d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "dev"})
		require.NoError(t, err, step)
		require.Len(t, d.Stages, 1, step)
		assert.Equal(t, want, d.Verdict, "%s: %+v", step, d.Stages[0])
		assert.Equal(t, wantCode, hosttest.Code(d.Stages[0]), step)
		set, err := sessions.Load(ctx, "dev")
		require.NoError(t, err, step)
		mu.Lock()
		assert.Equal(t, set.Digest(), digests["exec"], "%s: the request names the set the run read", step)
		mu.Unlock()
	}

	check("not activated", abi.Rejected, exec.CodeNotActivated)
	check("not activated, again", abi.Rejected, exec.CodeNotActivated)
	_, err = session.Activate(ctx, sessions, store.Snapshot(), "dev", "get_me")
	require.NoError(t, err)
	check("activated", abi.Accepted, string(abi.Accepted))
	activated, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = session.Revoke(ctx, sessions, store.Snapshot(), "dev", "get_me")
	require.NoError(t, err)
	check("revoked", abi.Rejected, exec.CodeNotActivated)

	// The file as it was when the tool was activated, then the same set
	// with the activation taken out by hand and the version left alone.
	require.NoError(t, os.WriteFile(path, activated, 0o600))
	check("the activated file put back", abi.Accepted, string(abi.Accepted))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(activated, &doc))
	dev := doc["sessions"].(map[string]any)["dev"].(map[string]any)
	require.NotEmpty(t, dev["activated"])
	dev["activated"] = map[string]any{}
	edited, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, edited, 0o600))
	check("the activation removed by hand, same version", abi.Rejected, exec.CodeNotActivated)

	// A stage not granted the session is sent no digest.
	_, err = h.Check(ctx, "no-session", call, host.RunOptions{Session: "dev"})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, digests["no-session"])
}
