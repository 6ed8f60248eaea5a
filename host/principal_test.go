package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// principalExecConfig: reviewers may merge pull requests; an anonymous
// caller may only call read-only tools.
var principalExecConfig = json.RawMessage(`{"confirm_effects":[],"principals":[
  {"name":"reviewers","when":{"claims":{"role":"reviewer"}},"allow_tools":["mcp.github:merge_pull_request"],"read_only":true},
  {"name":"anonymous","when":{"anonymous":true},"read_only":true}]}`)

// TestExecPrincipalNativeEqualsWasm: the run's principal reaches the wasm
// exec gate (Request.Context.Principal, decoded by the SDK's guestjson),
// which answers as the native gate does, and the decision record carries
// it.
func TestExecPrincipalNativeEqualsWasm(t *testing.T) {
	ctx := context.Background()
	store := hosttest.GitHubCatalog(t)
	logPath := t.TempDir() + "/events.jsonl"
	h := hosttest.New(t, host.Config{
		Plugins: map[string]host.PluginConfig{"exec": {Path: execWasm}}, Catalog: store, EventLogPath: logPath,
		Pipelines: map[string]host.PipelineConfig{"exec": {Subject: abi.SubjectToolCall, Stages: []host.StageConfig{{
			Plugin: "exec", Capabilities: []string{"catalog", "session"}, Config: principalExecConfig}}}},
	})
	snap := store.Snapshot()
	_, err := session.ActivateMany(ctx, h.Sessions(), snap, "dev", []string{"merge_pull_request", "get_me"})
	require.NoError(t, err)
	set, err := h.Sessions().Load(ctx, "dev")
	require.NoError(t, err)
	reviewer := &abi.Principal{Issuer: "https://idp.example", Subject: "alice", Method: abi.MethodOIDC,
		Claims: map[string]any{"role": "reviewer", "email": "alice@example.org"}}
	dev := &abi.Principal{Issuer: "https://idp.example", Subject: "bob", Method: abi.MethodOIDC, Claims: map[string]any{"role": "dev"}}
	for i, tc := range []struct {
		name      string
		principal *abi.Principal
		tool      string
		want      string // "" accepted
	}{
		{"reviewer merges", reviewer, "merge_pull_request", ""},
		{"anonymous reads", nil, "get_me", ""},
		{"anonymous may not merge", nil, "merge_pull_request", exec.CodePrincipalNotAllowed},
		{"no rule for a dev", dev, "get_me", exec.CodePrincipalNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call, _ := json.Marshal(abi.ToolCall{Tool: tc.tool, Parameters: json.RawMessage(`{"owner":"o","repo":"r","pullNumber":1}`)})
			reqID := "principal-" + string(rune('a'+i))
			d, err := h.Check(ctx, "exec", call, host.RunOptions{Session: "dev", Principal: tc.principal, RequestID: reqID})
			require.NoError(t, err)
			wasm := d.Stages[0]
			gh := hosttest.NativeExecHost(snap, set, "dev")
			native := evalNativePrincipal(t, gh, snap.Generation(), call, tc.principal)
			hosttest.AssertSameAnswer(t, native, wasm)
			if tc.want == "" {
				require.Equal(t, abi.Accepted, wasm.Verdict, "%+v", wasm.Findings)
			} else {
				require.Equal(t, abi.Rejected, wasm.Verdict)
				assert.Equal(t, tc.want, wasm.Findings[0].Code)
			}
			assert.Equal(t, tc.principal, recordedPrincipal(t, logPath, reqID))
		})
	}
}

func evalNativePrincipal(t *testing.T, gh *gatetest.Host, gen uint64, call []byte, p *abi.Principal) abi.Response {
	t.Helper()
	resp, err := gatetest.Evaluate(context.Background(), exec.Gate, abi.Request{SubjectKind: abi.SubjectToolCall, Subject: call,
		Config: principalExecConfig, Context: abi.Context{CatalogGeneration: gen, Session: "dev", Principal: p}}, gh)
	require.NoError(t, err)
	return resp
}

// recordedPrincipal is the principal of the decision record of reqID.
func recordedPrincipal(t *testing.T, logPath, reqID string) *abi.Principal {
	t.Helper()
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind      string `json:"kind"`
			RequestID string `json:"request_id"`
			Data      struct {
				Principal *abi.Principal `json:"principal"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Kind == "decision" && rec.RequestID == reqID {
			return rec.Data.Principal
		}
	}
	t.Fatalf("no decision record for %s", reqID)
	return nil
}

// TestCheckRefusesBadPrincipal: a principal gates could not rely on is
// refused before any run.
func TestCheckRefusesBadPrincipal(t *testing.T) {
	store := hosttest.GitHubCatalog(t)
	h := hosttest.ExecHost(t, store, 1)
	call, _ := json.Marshal(abi.ToolCall{Tool: "get_me", Parameters: json.RawMessage(`{}`)})
	for _, tc := range []struct {
		name string
		p    *abi.Principal
	}{
		{"no subject", &abi.Principal{Method: abi.MethodOIDC}},
		{"unknown method", &abi.Principal{Subject: "a", Method: "kerberos"}},
		{"too large", &abi.Principal{Subject: "a", Method: abi.MethodOIDC, Claims: map[string]any{"x": strings.Repeat("y", abi.MaxPrincipalBytes)}}},
		{"does not encode", &abi.Principal{Subject: "a", Method: abi.MethodOIDC, Claims: map[string]any{"f": func() {}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := h.Check(context.Background(), "exec", call, host.RunOptions{Principal: tc.p})
			assert.Nil(t, d)
			require.ErrorIs(t, err, host.ErrBadOptions)
			var oe *host.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, "Principal", oe.Field)
		})
	}
}
