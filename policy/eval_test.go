package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

const evalPolicies = `
@id("read") permit(principal, action in Action::"read_only", resource);
@id("reviewers-merge") permit(principal, action == Action::"mcp.github:merge_pull_request", resource)
when { principal.claims has roles && principal.claims.roles.contains("reviewer") };
@id("merge-freeze") @message("no merges after 2026-06-01")
forbid(principal, action == Action::"mcp.github:merge_pull_request", resource)
when { context.now >= datetime("2026-06-01T00:00:00Z") };
@id("big-prs") permit(principal, action == Action::"mcp.github:merge_pull_request", resource)
when { context.arguments.pullNumber.greaterThan(decimal("1000.0")) };
@id("destructive-needs-auth") forbid(principal, action in Action::"destructive", resource) unless { principal.authenticated };
@id("bad-claim-read") permit(principal, action == Action::"mcp.github:create_issue", resource)
when { principal.claims.roles.contains("writer") };
`

func TestEvaluate(t *testing.T) {
	_, lookup := githubTools(t)
	eng := policy.NewEngine(mustSet(t, evalPolicies), githubClaims)
	reviewer := &abi.Principal{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "alice", Claims: map[string]any{"roles": []any{"reviewer"}}}
	for _, tc := range []struct {
		name      string
		tool      string
		args      string
		principal *abi.Principal
		late      bool
		verdict   abi.Verdict
		ids       []string
		code      string
		message   string
	}{
		{name: "a permit applies", tool: "get_me", verdict: abi.Accepted, ids: []string{"read"}},
		{name: "a reviewer merges", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":7}`, principal: reviewer,
			verdict: abi.Accepted, ids: []string{"reviewers-merge"}},
		{name: "a forbid overrides the permit, with its message", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":7}`,
			principal: reviewer, late: true, verdict: abi.Rejected, ids: []string{"merge-freeze"}, code: policy.CodeForbid, message: "no merges after 2026-06-01"},
		{name: "no permit", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":7}`, principal: &abi.Principal{Method: "token", Subject: "bob"},
			verdict: abi.Rejected, ids: []string{}, code: policy.CodeNoPermit},
		{name: "arguments decide", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":1001}`, principal: &abi.Principal{Method: "token", Subject: "bob"},
			verdict: abi.Accepted, ids: []string{"big-prs"}},
		{name: "an anonymous caller and a destructive tool", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":1001}`,
			verdict: abi.Rejected, ids: []string{"destructive-needs-auth"}, code: policy.CodeForbid, message: "forbidden by policy destructive-needs-auth"},
		{name: "an evaluation error is never an acceptance", tool: "create_issue", args: `{"owner":"o","repo":"r","title":"t"}`, principal: &abi.Principal{Method: "token", Subject: "bob"},
			verdict: abi.Inconclusive, code: policy.CodePolicyError},
		{name: "an unrepresentable argument", tool: "merge_pull_request", args: `{"owner":"o","repo":"r","pullNumber":"7"}`, principal: reviewer,
			verdict: abi.Inconclusive, code: policy.CodeArgumentUnrepresentable},
		{name: "arguments that are not an object", tool: "merge_pull_request", args: `[1]`, principal: reviewer,
			verdict: abi.Inconclusive, code: policy.CodeArgumentUnrepresentable},
		{name: "a claim of the wrong type", tool: "get_me", principal: &abi.Principal{Method: "oidc", Subject: "m", Claims: map[string]any{"roles": map[string]any{}}},
			verdict: abi.Inconclusive, code: policy.CodeClaimUnrepresentable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			if tc.late {
				at = at.AddDate(0, 7, 0)
			}
			r := eng.Evaluate(policy.Call{Tool: mustTool(t, lookup, tc.tool), Arguments: json.RawMessage(tc.args), Principal: tc.principal, Now: at})
			resp := r.Response()
			assert.Equal(t, tc.verdict, resp.Verdict, "%+v", r)
			if tc.ids != nil {
				assert.Equal(t, tc.ids, r.IDs())
			}
			if tc.code != "" {
				require.NotEmpty(t, resp.Findings)
				assert.Equal(t, tc.code, resp.Findings[0].Code)
				assert.Equal(t, abi.Blocking, resp.Findings[0].Severity)
			}
			if tc.message != "" {
				assert.Equal(t, tc.message, resp.Findings[0].Message)
			}
			if resp.Verdict == abi.Accepted {
				assert.NotEmpty(t, resp.Evidence)
			}
		})
	}
}

func TestEmptySetDeniesEverything(t *testing.T) {
	_, lookup := githubTools(t)
	set, err := policy.Parse(nil)
	require.NoError(t, err)
	r := policy.NewEngine(set, policy.Options{}).Evaluate(policy.Call{Tool: mustTool(t, lookup, "get_me"), Now: now})
	assert.Equal(t, policy.Deny, r.Decision)
	assert.Equal(t, policy.CodeNoPermit, r.Response().Findings[0].Code)
}

func TestActionGroups(t *testing.T) {
	tools, _ := githubTools(t)
	s, err := policy.NewSchema(tools, policy.Options{})
	require.NoError(t, err)
	merge, ok := s.Tool("mcp.github:merge_pull_request")
	require.True(t, ok)
	assert.Equal(t, []string{"non_idempotent", "destructive", "mcp.github:*"}, merge.Groups)
	me, ok := s.Tool("mcp.github:get_me")
	require.True(t, ok)
	assert.Equal(t, []string{"read_only", "mcp.github:*"}, me.Groups)
	noHints := policy.NewToolSchema(abi.Tool{ID: "native:x", Effect: abi.EffectIdempotentWrite})
	assert.Equal(t, []string{"idempotent_write", "destructive", "native:*"}, noHints.Groups, "without hints, a write is destructive")
}

// TestClaimsNotChanged: evaluating converts a copy of the principal's
// claims; the caller's values stay as they were.
func TestClaimsNotChanged(t *testing.T) {
	_, lookup := githubTools(t)
	eng := policy.NewEngine(mustSet(t, `permit(principal, action, resource);`), policy.Options{Claims: map[string]policy.ClaimType{"levels": policy.ClaimLongSet}})
	p := &abi.Principal{Method: "oidc", Subject: "a", Claims: map[string]any{"levels": []any{float64(3), float64(4)}}}
	r := eng.Evaluate(policy.Call{Tool: mustTool(t, lookup, "get_me"), Principal: p, Now: now})
	assert.Equal(t, policy.Allow, r.Decision)
	assert.Equal(t, []any{float64(3), float64(4)}, p.Claims["levels"])
}

// TestErrorsInPolicyOrder: several erring policies are reported in id
// order, every time (a gate's answer is deterministic).
func TestErrorsInPolicyOrder(t *testing.T) {
	_, lookup := githubTools(t)
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "@id(\"p%02d\") permit(principal, action, resource) when { context.arguments.nope%d == 1 };\n", i, i)
	}
	eng := policy.NewEngine(mustSet(t, b.String()), policy.Options{})
	first := eng.Evaluate(policy.Call{Tool: mustTool(t, lookup, "get_me"), Now: now})
	require.Len(t, first.Errors, 20)
	assert.Equal(t, "p00", first.Errors[0].Policy)
	for range 10 {
		assert.Equal(t, first.Response(), eng.Evaluate(policy.Call{Tool: mustTool(t, lookup, "get_me"), Now: now}).Response())
	}
}

// An engine keeps a tool's entry while the tool's record is the one it was
// built from: a record that changes under the same id (its hints, its
// effect, its schema) is evaluated as it is now, in either direction.
func TestToolEntryFollowsTheRecord(t *testing.T) {
	_, lookup := githubTools(t)
	eng := policy.NewEngine(mustSet(t, `
@id("read") permit(principal, action in Action::"read_only", resource);
@id("no-destructive") forbid(principal, action in Action::"destructive", resource);
@id("titled") forbid(principal, action, resource) when { context.tool.name == "renamed" };`), githubClaims)
	base := mustTool(t, lookup, "get_me")
	destructive := base
	destructive.Effect, destructive.Hints = abi.EffectNonIdempotent, &abi.ToolHints{Destructive: true}
	renamed := base
	renamed.Name = "renamed"
	for i, tc := range []struct {
		tool abi.Tool
		want abi.Verdict
	}{{base, abi.Accepted}, {destructive, abi.Rejected}, {base, abi.Accepted}, {renamed, abi.Rejected}, {base, abi.Accepted}, {base, abi.Accepted}} {
		r := eng.Evaluate(policy.Call{Tool: tc.tool, Now: now}).Response()
		assert.Equal(t, tc.want, r.Verdict, "call %d", i)
	}
}
