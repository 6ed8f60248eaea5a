package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"
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

// confirmWrites is the policy of the drift fixtures: only non_idempotent
// tools need a confirmation.
var confirmWrites = json.RawMessage(`{"confirm_effects":["non_idempotent"]}`)

func driftHost(t *testing.T, store *catalog.Store) *host.Host {
	t.Helper()
	return hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"exec": {Path: execWasm}},
		Catalog:   store,
		Confirmer: passConfirmer{},
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
			Plugin: "exec", Capabilities: []string{"catalog", "session"}, Config: confirmWrites,
		}}}},
	})
}

// callBoth runs one call through the wasm gate in h and natively on the
// same snapshot and session set, requires the same answer, and returns the
// wasm stage's code: the finding's code, or the verdict when accepted.
func callBoth(t *testing.T, h *host.Host, store *catalog.Store, tool, sess string, confirm *abi.Confirmation) (string, host.StageResult) {
	t.Helper()
	ctx := context.Background()
	call, _ := json.Marshal(abi.ToolCall{Tool: tool, Parameters: json.RawMessage(`{"owner":"octo-org","repo":"widgets","pullNumber":7}`)})
	d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: sess, ConfirmationToken: passToken(confirm)})
	require.NoError(t, err)
	wasm := d.Stages[0]
	set, err := h.Sessions().Load(ctx, sess)
	require.NoError(t, err)
	hosttest.AssertSameAnswer(t, nativeExec(t, store.Snapshot(), set, call, sess, confirm, confirmWrites), wasm)
	return hosttest.Code(wasm), wasm
}

// mcpDoc loads an MCP tool file of testdata/exec/drift, or the given
// document, as the "github" or "demo" server would publish it.
func importMCP(t *testing.T, server string, doc []byte) catalog.Tool {
	t.Helper()
	tools, err := catalog.Parse(doc, catalog.ImportOptions{Format: catalog.FormatMCP, Server: server})
	require.NoError(t, err)
	require.Len(t, tools, 1)
	return tools[0]
}

func withAnnotations(t *testing.T, doc []byte, annotations string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &m))
	if annotations == "" {
		delete(m, "annotations")
	} else {
		m["annotations"] = json.RawMessage(annotations)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// TestExecDestructiveHintNeedsConfirmation: an explicit or defaulted
// destructiveHint makes a write non_idempotent whatever idempotentHint
// says, so the default policy asks for a confirmation; only a tool that
// says it is not destructive and is idempotent is an idempotent_write.
func TestExecDestructiveHintNeedsConfirmation(t *testing.T) {
	doc := hosttest.ReadFile(t, "testdata/exec/drift/delete_repository.json")
	tests := []struct {
		annotations string // "" = none
		effect      catalog.Effect
		want        string
	}{
		{`{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired}, // the fixture
		{`{"destructiveHint":true,"idempotentHint":true}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"idempotentHint":true}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"destructiveHint":null,"idempotentHint":true}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"destructiveHint":true,"idempotentHint":false}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"DestructiveHint":false,"idempotentHint":true}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{"", catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"destructiveHint":false,"idempotentHint":false}`, catalog.EffectNonIdempotent, exec.CodeConfirmationRequired},
		{`{"destructiveHint":false,"idempotentHint":true}`, catalog.EffectIdempotentWrite, string(abi.Accepted)},
		{`{"readOnlyHint":true,"destructiveHint":true}`, catalog.EffectReadOnly, string(abi.Accepted)},
	}
	for i, tc := range tests {
		t.Run(tc.annotations, func(t *testing.T) {
			tl := importMCP(t, "demo", withAnnotations(t, doc, tc.annotations))
			require.Equal(t, tc.effect, tl.Effect)
			store, err := catalog.NewStore(tl)
			require.NoError(t, err)
			h := driftHost(t, store)
			sess := fmt.Sprintf("d%d", i)
			_, err = session.Activate(context.Background(), h.Sessions(), store.Snapshot(), sess, "delete_repository")
			require.NoError(t, err)
			got, r := callBoth(t, h, store, "delete_repository", sess, nil)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, string(tc.effect), r.Evidence["effect"])
			if tc.want == exec.CodeConfirmationRequired {
				got, _ = callBoth(t, h, store, "delete_repository", sess, &abi.Confirmation{Tool: tl.ID, Token: "ok-by-alice"})
				assert.Equal(t, string(abi.Accepted), got, "a confirmation of this tool lets it run")
			}
		})
	}
	// A hint the server sends as a string is not read as anything: the tool
	// is refused at import.
	_, err := catalog.Parse(withAnnotations(t, doc, `{"destructiveHint":"false","idempotentHint":true}`), catalog.ImportOptions{Server: "demo"})
	assert.ErrorIs(t, err, catalog.ErrInvalidTool)
}

// TestExecGrantPinsPolicy: a grant or core pin made before a change to
// anything that decides policy about the tool (each annotation, the effect,
// provenance, source) is denied after it until the tool is granted again;
// a change to nothing of that (title, description) leaves it authorized.
func TestExecGrantPinsPolicy(t *testing.T) {
	ctx := context.Background()
	v1 := hosttest.ReadFile(t, "testdata/exec/drift/merge_pull_request.v1.json")
	granted := importMCP(t, "github", v1)
	require.Equal(t, catalog.EffectNonIdempotent, granted.Effect)
	modified := func(f func(*catalog.Tool)) func(*testing.T) catalog.Tool {
		return func(*testing.T) catalog.Tool {
			tl := granted
			h := *granted.Hints
			tl.Hints = &h
			f(&tl)
			return tl
		}
	}
	annotated := func(annotations string) func(*testing.T) catalog.Tool {
		return func(t *testing.T) catalog.Tool { return importMCP(t, "github", withAnnotations(t, v1, annotations)) }
	}
	confirm := &abi.Confirmation{Tool: granted.ID, Token: "ok-by-alice"}
	tests := []struct {
		name   string
		change func(*testing.T) catalog.Tool
		want   string // after the change, with a confirmation
	}{
		{"readOnlyHint true (the published downgrade)", func(t *testing.T) catalog.Tool {
			return importMCP(t, "github", hosttest.ReadFile(t, "testdata/exec/drift/merge_pull_request.v2-readonly.json"))
		}, exec.CodeToolDrifted},
		{"destructiveHint false", annotated(`{"readOnlyHint":false,"idempotentHint":false,"destructiveHint":false}`), exec.CodeToolDrifted},
		{"destructiveHint false, idempotentHint true", annotated(`{"destructiveHint":false,"idempotentHint":true}`), exec.CodeToolDrifted},
		{"idempotentHint true", annotated(`{"readOnlyHint":false,"idempotentHint":true}`), exec.CodeToolDrifted},
		{"openWorldHint false", annotated(`{"readOnlyHint":false,"idempotentHint":false,"openWorldHint":false}`), exec.CodeToolDrifted},
		{"hints and effect overridden", modified(func(tl *catalog.Tool) {
			tl.Hints.Destructive, tl.Hints.Idempotent = false, true
			tl.Effect = catalog.EffectNonIdempotent
		}), exec.CodeToolDrifted},
		{"hints dropped", modified(func(tl *catalog.Tool) { tl.Hints = nil }), exec.CodeToolDrifted},
		{"source", modified(func(tl *catalog.Tool) { tl.Source = "github-mirror" }), exec.CodeToolDrifted},
		{"provenance", modified(func(tl *catalog.Tool) { tl.Provenance = "plugin_config{github}" }), exec.CodeSourceProvenanceMismatch},
		{"provenance unverified", modified(func(tl *catalog.Tool) { tl.Provenance = catalog.ProvenanceUnverified }), exec.CodeSourceProvenanceMismatch},
		{"title only", annotated(`{"readOnlyHint":false,"idempotentHint":false,"title":"Merge it now"}`), string(abi.Accepted)},
		{"description and spelling of defaults", func(t *testing.T) catalog.Tool {
			tl := importMCP(t, "github", withAnnotations(t, v1, `{"destructiveHint":true,"openWorldHint":true}`))
			tl.Description = "Merge a pull request, carefully."
			return tl
		}, string(abi.Accepted)},
		{"nothing", func(*testing.T) catalog.Tool { return granted }, string(abi.Accepted)},
	}
	for i, tc := range tests {
		for _, basis := range []string{exec.BasisExact, exec.BasisCore} {
			t.Run(tc.name+"/"+basis, func(t *testing.T) {
				store, err := catalog.NewStore(granted)
				require.NoError(t, err)
				h := driftHost(t, store)
				sess := fmt.Sprintf("p%d-%s", i, basis)
				if basis == exec.BasisCore {
					_, err = session.Create(ctx, h.Sessions(), store.Snapshot(), sess, "merge_pull_request")
				} else {
					_, err = session.Activate(ctx, h.Sessions(), store.Snapshot(), sess, "merge_pull_request")
				}
				require.NoError(t, err)
				got, r := callBoth(t, h, store, "merge_pull_request", sess, nil)
				require.Equal(t, exec.CodeConfirmationRequired, got, "as granted: a write")
				got, r = callBoth(t, h, store, "merge_pull_request", sess, confirm)
				require.Equal(t, string(abi.Accepted), got)
				require.Equal(t, basis, r.Basis)

				changed := tc.change(t)
				_, err = store.Update(func(b *catalog.Builder) error { return b.Replace(changed) })
				require.NoError(t, err)
				// With and without a confirmation: drift decides first.
				for _, cf := range []*abi.Confirmation{confirm, nil} {
					got, r = callBoth(t, h, store, "merge_pull_request", sess, cf)
					if tc.want == string(abi.Accepted) && cf == nil {
						assert.Equal(t, exec.CodeConfirmationRequired, got)
						continue
					}
					assert.Equal(t, tc.want, got)
				}
				if tc.want == string(abi.Accepted) {
					return
				}
				assert.Equal(t, json.Number("4"), r.Findings[0].Details["check"])

				// Granting again accepts the changed tool.
				_, err = session.Activate(ctx, h.Sessions(), store.Snapshot(), sess, "merge_pull_request")
				if tc.want == exec.CodeSourceProvenanceMismatch && changed.Provenance == catalog.ProvenanceUnverified {
					assert.ErrorIs(t, err, session.ErrUntrustedSource, "nobody vouches for it: it cannot be granted again")
					return
				}
				require.NoError(t, err)
				got, r = callBoth(t, h, store, "merge_pull_request", sess, confirm)
				switch {
				case tc.name == "provenance":
					// Granted again, but the record itself is inconsistent.
					assert.Equal(t, exec.CodeSourceProvenanceMismatch, got)
					assert.Equal(t, json.Number("5"), r.Findings[0].Details["check"])
				case tc.name == "source":
					assert.Equal(t, exec.CodeSourceProvenanceMismatch, got)
				default:
					assert.Equal(t, string(abi.Accepted), got)
					assert.Equal(t, exec.BasisExact, r.Basis)
				}
			})
		}
	}
}

// TestExecLegacyGrantIsDrifted: a grant written before policy digests
// existed (no policy_digest) authorizes nothing, and the denial says to
// grant the tool again.
func TestExecLegacyGrantIsDrifted(t *testing.T) {
	ctx := context.Background()
	granted := importMCP(t, "github", hosttest.ReadFile(t, "testdata/exec/drift/merge_pull_request.v1.json"))
	store, err := catalog.NewStore(granted)
	require.NoError(t, err)
	h := driftHost(t, store)
	for _, legacy := range []*session.Set{
		{ID: "old-grant", Activated: map[string]session.Activation{granted.ID: {
			Grant:      session.Grant{Session: "old-grant", Tool: granted.ID, SchemaDigest: granted.SchemaDigest},
			Provenance: granted.Provenance,
		}}},
		{ID: "old-core", Core: map[string]session.Pin{granted.ID: {SchemaDigest: granted.SchemaDigest, Provenance: granted.Provenance}}},
	} {
		t.Run(legacy.ID, func(t *testing.T) {
			_, err := h.Sessions().Update(ctx, legacy.ID, func(*session.Set) (*session.Set, error) { return legacy, nil })
			require.NoError(t, err)
			got, r := callBoth(t, h, store, "merge_pull_request", legacy.ID, &abi.Confirmation{Tool: granted.ID, Token: "ok"})
			assert.Equal(t, exec.CodeToolDrifted, got)
			assert.Contains(t, r.Findings[0].Message, "predates policy digests; grant the tool again")

			_, err = session.Activate(ctx, h.Sessions(), store.Snapshot(), legacy.ID, "merge_pull_request")
			require.NoError(t, err)
			got, _ = callBoth(t, h, store, "merge_pull_request", legacy.ID, &abi.Confirmation{Tool: granted.ID, Token: "ok"})
			assert.Equal(t, string(abi.Accepted), got)
		})
	}
}
