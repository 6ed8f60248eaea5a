package exec_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

var readTool = abi.Tool{ID: "mcp.files:read", Name: "files_read", SchemaDigest: "d1", PolicyDigest: "p1", Provenance: "mcp_config{files}", Source: "files", Effect: "read_only"}

func activated(sess string) func(string) abi.SessionGetAnswer {
	return func(tool string) abi.SessionGetAnswer {
		a := abi.SessionGetAnswer{Session: sess, Known: true}
		if tool == readTool.ID {
			a.Activation = &abi.SessionActivation{Grant: abi.SessionGrant{Session: sess, Tool: tool, CatalogGeneration: 3, SchemaDigest: "d1", PolicyDigest: "p1"}, Provenance: "mcp_config{files}"}
		}
		return a
	}
}

func evaluate(t *testing.T, h *gatetest.Host, tool, sess string, config string) abi.Response {
	t.Helper()
	subj, _ := json.Marshal(abi.ToolCall{Tool: tool, Parameters: json.RawMessage(`{"password":"hunter2"}`)})
	req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: subj, Context: abi.Context{Session: sess, CatalogGeneration: 9}}
	if config != "" {
		req.Config = json.RawMessage(config)
	}
	resp, err := gatetest.Evaluate(context.Background(), exec.Gate, req, h)
	require.NoError(t, err)
	return resp
}

func TestAcceptedEvidence(t *testing.T) {
	h := gatetest.NewHost(readTool)
	h.Granted = []string{"catalog", "session"}
	h.SessionLookup = activated("s")
	r := evaluate(t, h, "files_read", "s", "")
	require.Equal(t, abi.Accepted, r.Verdict)
	assert.Equal(t, exec.BasisExact, r.Basis)
	assert.EqualValues(t, 3, r.Evidence["grant_generation"])
	assert.EqualValues(t, 9, r.Evidence["catalog_generation"])
	assert.Equal(t, "p1", r.Evidence["policy_digest"])
	b, _ := json.Marshal(r)
	assert.NotContains(t, string(b), "hunter2", "the call's arguments never appear in the answer")
}

func TestFailClosed(t *testing.T) {
	t.Run("session capability not granted", func(t *testing.T) {
		h := gatetest.NewHost(readTool) // catalog only
		r := evaluate(t, h, "files_read", "s", "")
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, abi.ReasonCapabilityDenied, r.Reason)
	})
	t.Run("catalog not granted", func(t *testing.T) {
		h := &gatetest.Host{Granted: []string{"session"}}
		r := evaluate(t, h, "files_read", "s", "")
		assert.Equal(t, abi.Inconclusive, r.Verdict)
	})
	t.Run("host answers for another session", func(t *testing.T) {
		h := gatetest.NewHost(readTool)
		h.Granted = []string{"catalog", "session"}
		h.SessionLookup = activated("other")
		r := evaluate(t, h, "files_read", "s", "")
		assert.Equal(t, abi.Inconclusive, r.Verdict)
		assert.Equal(t, "session_unavailable", r.Reason)
	})
	t.Run("grant for another session", func(t *testing.T) {
		h := gatetest.NewHost(readTool)
		h.Granted = []string{"catalog", "session"}
		h.SessionLookup = func(tool string) abi.SessionGetAnswer {
			a := activated("other")(tool)
			a.Session = "s"
			return a
		}
		r := evaluate(t, h, "files_read", "s", "")
		require.Equal(t, abi.Rejected, r.Verdict)
		assert.Equal(t, exec.CodeNotActivated, r.Findings[0].Code)
	})
	t.Run("bad config", func(t *testing.T) {
		_, err := exec.ParseConfig(json.RawMessage(`{"confirm_effects":["scary"]}`))
		assert.Error(t, err)
		_, err = exec.ParseConfig(json.RawMessage(`{"confirm":true}`))
		assert.Error(t, err)
	})
}

func TestLongWireNameIsCut(t *testing.T) {
	h := gatetest.NewHost(readTool)
	h.Granted = []string{"catalog", "session"}
	long := strings.Repeat("é", 200) // 400 bytes
	r := evaluate(t, h, long, "s", "")
	require.Equal(t, abi.Rejected, r.Verdict)
	f := r.Findings[0]
	assert.Equal(t, exec.CodeUnknownTool, f.Code)
	assert.Less(t, len(f.Message), 200)
	assert.Contains(t, f.Message, strings.Repeat("é", 64)+"...")
}

func TestPolicy(t *testing.T) {
	write := abi.Tool{ID: "mcp.files:write", Name: "files_write", SchemaDigest: "d2", PolicyDigest: "p2", Provenance: "mcp_config{files}", Source: "files", Effect: "non_idempotent"}
	h := gatetest.NewHost(readTool, write)
	h.Granted = []string{"catalog", "session"}
	h.SessionLookup = func(tool string) abi.SessionGetAnswer {
		return abi.SessionGetAnswer{Session: "s", Known: true, Core: &abi.SessionPin{SchemaDigest: map[string]string{readTool.ID: "d1", write.ID: "d2"}[tool],
			PolicyDigest: map[string]string{readTool.ID: "p1", write.ID: "p2"}[tool], Provenance: "mcp_config{files}"}}
	}
	for _, tc := range []struct {
		config, tool string
		want         abi.Verdict
	}{
		{"", "files_write", abi.Rejected},
		{"", "files_read", abi.Accepted},
		{`{"confirm_effects":[]}`, "files_write", abi.Accepted},
		{`{"exempt_tools":["mcp.files:write"]}`, "files_write", abi.Accepted},
		{`{"confirm_effects":[],"confirm_tools":["mcp.files:read"]}`, "files_read", abi.Rejected},
		{`{"confirm_effects":["read_only"]}`, "files_read", abi.Rejected},
	} {
		r := evaluate(t, h, tc.tool, "s", tc.config)
		assert.Equal(t, tc.want, r.Verdict, "%s %s", tc.config, tc.tool)
		if r.Verdict == abi.Rejected {
			assert.Equal(t, exec.CodeConfirmationRequired, r.Findings[0].Code)
		} else {
			assert.Equal(t, exec.BasisCore, r.Basis)
		}
	}
}
