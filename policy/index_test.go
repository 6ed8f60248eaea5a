package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

// scopePolicies names every kind of action scope: none, == a tool, == a
// group (which no tool's action equals), in a tool, in a group of each
// kind, in a set mixing tools and groups, and an action of another server.
const scopePolicies = `
@id("any") permit(principal, action, resource) when { context.tool.name like "*file*" };
@id("eq-tool") forbid(principal, action == Action::"mcp.fs:write_file", resource) when { context.arguments.content like "*SECRET*" };
@id("eq-group") permit(principal, action == Action::"read_only", resource);
@id("in-tool") permit(principal, action in Action::"mcp.github:create_issue", resource);
@id("in-effect") permit(principal, action in Action::"idempotent", resource) when { context.arguments.nope == 1 };
@id("in-destructive") forbid(principal, action in Action::"destructive", resource) unless { principal.authenticated };
@id("in-namespace") permit(principal, action in Action::"mcp.github:*", resource) when { principal.claims.roles.contains("maintainer") };
@id("in-set") forbid(principal, action in [Action::"mcp.fs:move_file", Action::"read_only", Action::"mcp.github:*"], resource)
when { context.now >= datetime("2026-06-01T00:00:00Z") };
@id("other-server") forbid(principal, action == Action::"mcp.slack:post", resource);
`

// TestActionIndexDecidesAsTheWholeSet: evaluating only the policies whose
// action scope can match a call's action decides every call as the whole
// set does: the same decision, the same determining policies and the same
// errors. Over the example policy sets and scopePolicies, every tool of
// the filesystem and GitHub catalogs (the filesystem's again with other
// hints),
// three principals and arguments of several shapes.
func TestActionIndexDecidesAsTheWholeSet(t *testing.T) {
	fs, _ := fsTools(t)
	gh, _ := githubTools(t)
	tools := append(append([]abi.Tool{}, fs...), gh...)
	for _, tool := range fs {
		for _, h := range []abi.ToolHints{{ReadOnly: true}, {Destructive: true}, {Idempotent: true, OpenWorld: true}} {
			other := tool
			other.Hints = &h
			other.SchemaDigest = "" // not cached under the original's key
			tools = append(tools, other)
		}
	}
	sets := map[string]string{"scopes": scopePolicies}
	files, err := filepath.Glob("../examples/policies/*.cedar")
	require.NoError(t, err)
	more, err := filepath.Glob("../examples/policies/*/*.cedar")
	require.NoError(t, err)
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sets[filepath.Base(f)] = string(b)
	}
	require.Greater(t, len(sets), 4)
	principals := []*abi.Principal{nil,
		{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "alice", Claims: map[string]any{"roles": []any{"maintainer"}}},
		{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "bob", Claims: map[string]any{"roles": []any{"reviewer"}}}}
	arguments := []func(abi.Tool) string{
		func(abi.Tool) string { return `{}` },
		func(tool abi.Tool) string { return fillArguments(tool, "/srv/share/public/a.md") },
		func(tool abi.Tool) string { return fillArguments(tool, "SECRET ../../etc/passwd") },
	}
	claims := policy.Options{Claims: map[string]policy.ClaimType{"roles": policy.ClaimStringSet}}
	counts := &policy.Counts{Calls: map[string]int64{"mcp.fs:write_file": 30}}
	checked, skipped, seen := 0, 0, map[string]int{}
	for name, text := range sets {
		set := mustSet(t, text)
		for _, late := range []bool{false, name == "scopes"} {
			eng := policy.NewEngine(set, claims)
			at := now
			if late {
				at = now.AddDate(1, 0, 0)
			}
			for _, tool := range tools {
				for _, p := range principals {
					for _, args := range arguments {
						c := policy.Call{Tool: tool, Arguments: json.RawMessage(args(tool)), Principal: p, Now: at}
						if set.UsesSession() {
							c.Counts = counts
						}
						got, kept := policy.Indexed(eng, c)
						want := policy.Unindexed(eng, c)
						require.Equal(t, want, got, "%s: %s by %v with %s", name, tool.ID, p, c.Arguments)
						checked++
						seen[strings.Fields(got)[0]]++
						if !strings.HasSuffix(got, "errors []") {
							seen["policy errors"]++
						}
						skipped += len(set.Policies) - kept
					}
				}
			}
		}
	}
	t.Logf("%d calls decided alike (%v); %d policy evaluations skipped", checked, seen, skipped)
	assert.Positive(t, seen["allow"])
	assert.Positive(t, seen["deny"])
	assert.Positive(t, seen["policy errors"])
	assert.Positive(t, skipped, "the index leaves policies out")
}

// fillArguments gives every string property of the tool's input schema
// (and every array of strings) the value s.
func fillArguments(tool abi.Tool, s string) string {
	var schema struct {
		Properties map[string]struct {
			Type  any `json:"type"`
			Items *struct {
				Type any `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(tool.InputSchema, &schema)
	var members []string
	for name, p := range schema.Properties {
		q, _ := json.Marshal(s)
		switch {
		case p.Type == "string":
			members = append(members, fmt.Sprintf("%q:%s", name, q))
		case p.Type == "array" && p.Items != nil && p.Items.Type == "string":
			members = append(members, fmt.Sprintf("%q:[%s]", name, q))
		}
	}
	return "{" + strings.Join(members, ",") + "}"
}
