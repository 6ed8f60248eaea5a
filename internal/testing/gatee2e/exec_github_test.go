package gatee2e

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/exec"
)

// checkCall checks a call of tool in sess with a confirmation token ("" for
// none), which the default Confirmer resolves to the tool's catalog id.
func checkCall(t testing.TB, h *host.Host, tool, sess, token string) host.StageResult {
	t.Helper()
	call, _ := json.Marshal(abi.ToolCall{Tool: tool, Parameters: json.RawMessage(`{"owner":"octo-org","repo":"widgets"}`)})
	d, err := h.Check(context.Background(), "exec", call, host.RunOptions{Session: sess, ConfirmationToken: token})
	require.NoError(t, err)
	return d.Stages[0]
}

// TestExecGitHubCatalog shows the gate on the real GitHub MCP catalog.
func TestExecGitHubCatalog(t *testing.T) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(t)
	h := hosttest.ExecHost(t, store, 1)
	snap := store.Snapshot()

	merge, _ := snap.Get("merge_pull_request")
	assert.Equal(t, catalog.EffectNonIdempotent, merge.Effect, "no destructiveHint: not read-only, not idempotent")
	assert.Equal(t, "mcp_config{github}", merge.Provenance)

	_, err := session.ActivateMany(ctx, h.Sessions(), snap, "dev", []string{"merge_pull_request", "create_pull_request"})
	require.NoError(t, err)

	r := checkCall(t, h, "create_pull_request", "dev", "")
	assert.Equal(t, abi.Accepted, r.Verdict)
	assert.Equal(t, exec.BasisExact, r.Basis)

	r = checkCall(t, h, "merge_pull_request", "dev", "")
	assert.Equal(t, exec.CodeConfirmationRequired, hosttest.Code(r))
	r = checkCall(t, h, "merge_pull_request", "dev", "ok-by-alice")
	assert.Equal(t, abi.Accepted, r.Verdict)

	// Reload the catalog with one unrelated tool changed.
	_, err = store.Update(hosttest.ReplaceSchema("mcp.github:get_me", `{"type":"object","properties":{"verbose":{"type":"boolean"}}}`))
	require.NoError(t, err)
	r = checkCall(t, h, "create_pull_request", "dev", "")
	assert.Equal(t, abi.Accepted, r.Verdict, "an unrelated change must not kill the session's call")
	assert.Equal(t, json.Number("0"), r.Evidence["grant_generation"])
	assert.Equal(t, json.Number("1"), r.Evidence["catalog_generation"])

	// create_pull_request's own schema changes: denied.
	_, err = store.Update(hosttest.ReplaceSchema("mcp.github:create_pull_request", `{"type":"object","properties":{"owner":{"type":"string"}}}`))
	require.NoError(t, err)
	r = checkCall(t, h, "create_pull_request", "dev", "")
	assert.Equal(t, exec.CodeSchemaDigestMismatch, hosttest.Code(r))

	// Rebuild drops the drifted grant and carries the other forward.
	_, rep, err := session.Rebuild(ctx, h.Sessions(), store.Snapshot(), "dev")
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp.github:merge_pull_request"}, rep.Kept)
	assert.Equal(t, []session.Dropped{{Tool: "mcp.github:create_pull_request", Reason: session.DropDrifted,
		Drift: []string{session.DriftSchema, session.DriftPolicy}}}, rep.Dropped)
	assert.Equal(t, exec.CodeNotActivated, hosttest.Code(checkCall(t, h, "create_pull_request", "dev", "")))
}

// TestExecRaceCatalogMutations runs exec checks while the catalog changes
// under them. The called tool's schema flips at every generation, and the
// session pinned the even generations' schema, so a run that read two
// snapshots would see its two stages disagree, or disagree with the
// generation the decision reports.
func TestExecRaceCatalogMutations(t *testing.T) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(t)
	h := hosttest.ExecHost(t, store, 2)
	_, err := session.Activate(ctx, h.Sessions(), store.Snapshot(), "race", "get_me")
	require.NoError(t, err)
	schemas := [2]string{}
	tl, _ := store.Snapshot().Get("get_me")
	schemas[0], schemas[1] = string(tl.InputSchema), `{"type":"object","properties":{"flipped":{"type":"boolean"}}}`

	pinned := tl.SchemaDigest

	// digests records the digest of get_me at every generation published.
	var mu sync.Mutex
	digests := map[uint64]string{store.Snapshot().Generation(): pinned}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			snap, err := store.Update(hosttest.ReplaceSchema("mcp.github:get_me", schemas[(i+1)%2]))
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := snap.Get("get_me")
			mu.Lock()
			digests[snap.Generation()] = got.SchemaDigest
			mu.Unlock()
		}
	}()
	type seen struct {
		gen     uint64
		digests [2]string
		verdict [2]abi.Verdict
	}
	var wg sync.WaitGroup
	var smu sync.Mutex
	var runs []seen
	for range 4 {
		wg.Go(func() {
			for range 10 {
				call, _ := json.Marshal(abi.ToolCall{Tool: "get_me"})
				d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "race"})
				if !assert.NoError(t, err) {
					return
				}
				r := seen{gen: d.CatalogGeneration}
				for i, st := range d.Stages {
					assert.Equal(t, json.Number(strconv.FormatUint(d.CatalogGeneration, 10)), st.Evidence["catalog_generation"])
					r.digests[i], _ = st.Evidence["schema_digest"].(string)
					r.verdict[i] = st.Verdict
				}
				smu.Lock()
				runs = append(runs, r)
				smu.Unlock()
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	<-done
	flips := 0
	for _, r := range runs {
		want := digests[r.gen]
		require.NotEmpty(t, want, "generation %d was never published", r.gen)
		for i := range 2 {
			assert.Equal(t, want, r.digests[i], "stage %d of a run at generation %d read another generation's record", i, r.gen)
			wantVerdict := abi.Rejected
			if want == pinned {
				wantVerdict = abi.Accepted
			}
			assert.Equal(t, wantVerdict, r.verdict[i])
		}
		if r.verdict[0] == abi.Rejected {
			flips++
		}
	}
	t.Logf("%d runs during %d catalog generations; %d runs saw the flipped schema", len(runs), len(digests), flips)
}
