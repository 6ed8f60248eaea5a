package exec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/exec"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// principalRules: reviewers may merge, a CI certificate may call anything,
// an anonymous caller may only read.
const principalRules = `{"confirm_effects":[],"principals":[
  {"name":"reviewers","when":{"claims":{"role":"reviewer"}},"allow_tools":["mcp.gh:merge"],"read_only":true},
  {"when":{"method":"mtls","subject":"CN=ci"},"allow_tools":["*"]},
  {"name":"anonymous","when":{"anonymous":true},"read_only":true}]}`

func TestExecPrincipalRules(t *testing.T) {
	merge := abi.Tool{ID: "mcp.gh:merge", Name: "merge", SchemaDigest: "d3", PolicyDigest: "p3", Provenance: "mcp_config{gh}", Source: "gh", Effect: "non_idempotent"}
	issue := abi.Tool{ID: "mcp.gh:issue", Name: "issue", SchemaDigest: "d4", PolicyDigest: "p4", Provenance: "mcp_config{gh}", Source: "gh", Effect: "idempotent_write"}
	list := abi.Tool{ID: "mcp.gh:list", Name: "list", SchemaDigest: "d5", PolicyDigest: "p5", Provenance: "mcp_config{gh}", Source: "gh", Effect: "read_only"}
	h := gatetest.NewHost(merge, issue, list)
	h.Granted = []string{"catalog", "session"}
	h.SessionLookup = func(tool string) abi.SessionGetAnswer {
		for _, tl := range []abi.Tool{merge, issue, list} {
			if tl.ID == tool {
				return abi.SessionGetAnswer{Session: "s", Known: true, Core: &abi.SessionPin{SchemaDigest: tl.SchemaDigest, PolicyDigest: tl.PolicyDigest, Provenance: tl.Provenance}}
			}
		}
		return abi.SessionGetAnswer{Session: "s", Known: true}
	}
	reviewer := &abi.Principal{Issuer: "https://idp", Subject: "alice", Method: abi.MethodOIDC, Claims: map[string]any{"role": "reviewer"}}
	inGroup := &abi.Principal{Issuer: "https://idp", Subject: "bob", Method: abi.MethodOIDC, Claims: map[string]any{"role": []any{"dev", "reviewer"}}}
	dev := &abi.Principal{Issuer: "https://idp", Subject: "carol", Method: abi.MethodOIDC, Claims: map[string]any{"role": "dev"}}
	ci := &abi.Principal{Issuer: "CN=clients", Subject: "CN=ci", Method: abi.MethodMTLS}
	for _, tc := range []struct {
		name      string
		config    string
		principal *abi.Principal
		tool      string
		rule      string // the deciding rule; "" none
		allowed   bool
	}{
		{"reviewer merges", principalRules, reviewer, "merge", "reviewers", true},
		{"reviewer in a role array merges", principalRules, inGroup, "merge", "reviewers", true},
		{"reviewer reads", principalRules, reviewer, "list", "reviewers", true},
		{"reviewer may not open issues", principalRules, reviewer, "issue", "reviewers", false},
		{"ci calls anything", principalRules, ci, "issue", "principals[1]", true},
		{"anonymous reads", principalRules, nil, "list", "anonymous", true},
		{"anonymous may not merge", principalRules, nil, "merge", "anonymous", false},
		{"a principal no rule matches", principalRules, dev, "list", "", false},
		{"no rules: unchanged", `{"confirm_effects":[]}`, nil, "merge", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subj, _ := json.Marshal(abi.ToolCall{Tool: tc.tool, Parameters: json.RawMessage(`{}`)})
			req := abi.Request{SubjectKind: abi.SubjectToolCall, Subject: subj, Config: json.RawMessage(tc.config),
				Context: abi.Context{Session: "s", Principal: tc.principal}}
			r, err := gatetest.Evaluate(context.Background(), exec.Gate, req, h)
			require.NoError(t, err)
			if tc.allowed {
				require.Equal(t, abi.Accepted, r.Verdict, "%+v", r.Findings)
			} else {
				require.Equal(t, abi.Rejected, r.Verdict)
				require.Len(t, r.Findings, 1)
				f := r.Findings[0]
				assert.Equal(t, exec.CodePrincipalNotAllowed, f.Code)
				assert.EqualValues(t, 6, f.Details["check"])
				if tc.rule != "" {
					assert.Equal(t, tc.rule, f.Details["principal_rule"])
					assert.Contains(t, f.Message, "rule "+tc.rule)
				} else {
					assert.Contains(t, f.Message, "no principals rule matches")
				}
			}
			if tc.config == principalRules {
				if tc.rule != "" {
					assert.Equal(t, tc.rule, r.Evidence["principal_rule"])
				}
				if tc.principal == nil {
					assert.Equal(t, map[string]any{"anonymous": true}, r.Evidence["principal"])
				} else {
					assert.Equal(t, tc.principal.Subject, r.Evidence["principal"].(map[string]any)["subject"])
				}
			} else {
				assert.NotContains(t, r.Evidence, "principal")
			}
		})
	}
}

func TestExecPrincipalRulesConfig(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"empty when", `{"principals":[{"when":{}}]}`, "principals[0].when"},
		{"anonymous with a claim", `{"principals":[{"when":{"anonymous":true,"claims":{"a":"b"}}}]}`, "combines with nothing"},
		{"object claim value", `{"principals":[{"when":{"claims":{"a":{"b":1}}}}]}`, "principals[0].when.claims.a"},
		{"unknown method", `{"principals":[{"when":{"method":"kerberos"}}]}`, "principals[0].when.method"},
		{"allow_tools not an id", `{"principals":[{"when":{"authenticated":true},"allow_tools":["merge"]}]}`, "principals[0].allow_tools"},
		{"unknown key", `{"principals":[{"when":{"authenticated":true},"allow":["*"]}]}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exec.ParseConfig(json.RawMessage(tc.config))
			require.ErrorContains(t, err, tc.want)
		})
	}
}
