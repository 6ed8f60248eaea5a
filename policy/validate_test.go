package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

// TestValidateNames: a policy naming a tool, argument, attribute or claim
// that does not exist, or comparing a string with a number, is refused at
// the name's file:line:column with the nearest real name.
func TestValidateNames(t *testing.T) {
	tools, _ := githubTools(t)
	s, err := policy.NewSchema(tools, githubClaims)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, text string
		want       policy.Problem // File, Policy are checked as test.cedar, p
	}{
		{"a misspelled tool id", `@id("p") permit(principal, action == Action::"mcp.github:merge_pul_request", resource);`,
			policy.Problem{Line: 1, Column: 47, Kind: policy.KindTool, Name: "mcp.github:merge_pul_request", Suggestion: "mcp.github:merge_pull_request"}},
		{"a wire name where the id is wanted", `@id("p") permit(principal, action == Action::"merge_pull_request", resource);`,
			policy.Problem{Line: 1, Column: 47, Kind: policy.KindTool, Name: "merge_pull_request", Suggestion: "mcp.github:merge_pull_request"}},
		{"a misspelled action group", `@id("p") permit(principal, action in Action::"read_onyl", resource);`,
			policy.Problem{Line: 1, Column: 47, Kind: policy.KindTool, Name: "read_onyl", Suggestion: "read_only"}},
		{"a misspelled argument", "@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.arguments.merge_methd == \"squash\" };",
			policy.Problem{Line: 3, Column: 26, Kind: policy.KindArgument, Name: "merge_methd", Suggestion: "merge_method"}},
		{"a misspelled argument tested with has", "@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.arguments has merge_methd };",
			policy.Problem{Line: 3, Column: 30, Kind: policy.KindArgument, Name: "merge_methd", Suggestion: "merge_method"}},
		{"a misspelled path argument", "@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.paths has path };",
			policy.Problem{Line: 3, Column: 26, Kind: policy.KindArgument, Name: "path"}},
		{"a misspelled context attribute", "@id(\"p\") permit(principal, action, resource) when { context.tool.efect == \"read_only\" };",
			policy.Problem{Line: 1, Column: 66, Kind: policy.KindAttribute, Name: "efect", Suggestion: "effect"}},
		{"a misspelled annotation", "@id(\"p\") permit(principal, action, resource) when { context.tool.annotations.destructiv };",
			policy.Problem{Line: 1, Column: 78, Kind: policy.KindAttribute, Name: "destructiv", Suggestion: "destructive"}},
		{"a misspelled principal attribute", "@id(\"p\") permit(principal, action, resource) when { principal.sbject == \"alice\" };",
			policy.Problem{Line: 1, Column: 63, Kind: policy.KindAttribute, Name: "sbject", Suggestion: "subject"}},
		{"a misspelled resource attribute", "@id(\"p\") permit(principal, action, resource) when { resource.nme == \"x\" };",
			policy.Problem{Line: 1, Column: 62, Kind: policy.KindAttribute, Name: "nme", Suggestion: "name"}},
		{"an undeclared claim", "@id(\"p\") permit(principal, action, resource) when { principal.claims has rolez && principal.claims.rolez.contains(\"x\") };",
			policy.Problem{Line: 1, Column: 74, Kind: policy.KindClaim, Name: "rolez", Suggestion: "roles"}},
		{"a claim read without has", "@id(\"p\") permit(principal, action, resource) when { principal.claims.group == \"x\" };",
			policy.Problem{Line: 1, Column: 70, Kind: policy.KindClaim, Name: "group"}},
		{"a string compared with a number", "@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.arguments.owner < 3 };",
			policy.Problem{Line: 3, Column: 1, Kind: policy.KindType}},
		{"an optional argument read without has", "@id(\"p\")\npermit(principal, action == Action::\"mcp.github:merge_pull_request\", resource)\nwhen { context.arguments.merge_method == \"squash\" };",
			policy.Problem{Line: 3, Column: 26, Kind: policy.KindType}},
		{"an unknown entity type", `@id("p") permit(principal is User, action, resource);`,
			policy.Problem{Line: 1, Column: 30, Kind: policy.KindEntity, Name: "User"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := s.Validate(mustSet(t, tc.text))
			require.NotEmpty(t, ps)
			got := ps[0]
			t.Log(got)
			assert.Equal(t, "test.cedar", got.File)
			assert.Equal(t, "p", got.Policy)
			assert.Equal(t, tc.want.Kind, got.Kind)
			assert.Equal(t, tc.want.Name, got.Name)
			assert.Equal(t, tc.want.Suggestion, got.Suggestion)
			assert.Equal(t, [2]int{tc.want.Line, tc.want.Column}, [2]int{got.Line, got.Column}, "line and column")
		})
	}
}

func TestValidateAcceptsTheExamples(t *testing.T) {
	tools, _ := githubTools(t)
	s, err := policy.NewSchema(tools, githubClaims)
	require.NoError(t, err)
	set := mustSet(t, `
@id("ok") permit(principal, action in Action::"mcp.github:*", resource == Server::"mcp.github")
when {
  principal.authenticated && principal.claims has roles && principal.claims.roles.contains("x") &&
  context.tool.annotations.read_only && context.tool.effect == "read_only" &&
  context.now < datetime("2030-01-01T00:00:00Z") && resource.provenance like "mcp_*"
};
@id("args") forbid(principal, action == Action::"mcp.github:merge_pull_request", resource)
when { context.arguments.pullNumber.greaterThan(decimal("100.0")) && context.arguments.owner == "o" };`)
	assert.Empty(t, s.Validate(set))
}

func TestParseErrors(t *testing.T) {
	_, err := policy.Parse([]policy.Source{{File: "a.cedar", Text: `permit(principal, action, resource`}})
	var pe *policy.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "a.cedar", pe.File)

	_, err = policy.Parse([]policy.Source{{File: "a.cedar", Text: "@id(\"x\") permit(principal, action, resource);\n@id(\"x\") forbid(principal, action, resource);"}})
	var de *policy.DuplicateIDError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "a.cedar:2:1: policy id \"x\" is also the id of the policy at a.cedar:1:1", err.Error())

	set, err := policy.Parse([]policy.Source{{File: "a.cedar", Text: "\n  permit(principal, action, resource);"}})
	require.NoError(t, err)
	assert.Equal(t, "a.cedar:2:3", set.Policies[0].ID, "without @id a policy is named by its place")
}

// TestValidateNestedNames: names below the top of context.arguments and
// within context.session are checked at every depth, has included (Cedar's
// validator types a has of a missing attribute as false, so a misspelt
// rule behind it would be dead): a nested argument's attribute, an
// attribute of an object that declares none, a window not declared, a
// tool's wire name where the counts are keyed by id.
func TestValidateNestedNames(t *testing.T) {
	tools := []abi.Tool{{ID: "mcp.x:deploy", Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"options":{"type":"object","properties":{"force":{"type":"boolean"},"region":{"type":"string"}}},
		"free":{"type":"object","additionalProperties":true}}}`)}}
	forbid := "@id(\"p\") forbid(principal, action == Action::\"mcp.x:deploy\", resource) when { "
	for _, tc := range []struct {
		name, cond string
		windows    []string
		want       policy.Problem // Line 1 always
	}{
		{"a nested argument's attribute behind has", "context.arguments has options && context.arguments.options has forse && context.arguments.options.forse };", nil,
			policy.Problem{Column: 142, Kind: policy.KindArgument, Name: "forse", Suggestion: "force"}},
		{"the same in an if", "if context.arguments has options then context.arguments.options has forse else false };", nil,
			policy.Problem{Column: 147, Kind: policy.KindArgument, Name: "forse", Suggestion: "force"}},
		{"an attribute of an object that declares none", "context.arguments has free && context.arguments.free has danger };", nil,
			policy.Problem{Column: 136, Kind: policy.KindArgument, Name: "danger"}},
		{"a window not declared", `context.session.window has "1h" && context.session.window["1h"].calls["mcp.x:deploy"] > 5 };`, nil,
			policy.Problem{Column: 107, Kind: policy.KindAttribute, Name: "1h"}},
		{"a window other than the declared", `context.session.window has "1d" && context.session.window["1d"].calls["mcp.x:deploy"] > 5 };`, []string{"1h"},
			policy.Problem{Column: 107, Kind: policy.KindAttribute, Name: "1d", Suggestion: "1h"}},
		{"a wire name where counts take the id", `context.session.calls has "deploy" && context.session.calls["deploy"] > 3 };`, nil,
			policy.Problem{Column: 106, Kind: policy.KindAttribute, Name: "deploy", Suggestion: "mcp.x:deploy"}},
		{"a misspelt id in a declared window", `context.session.principal.window["1h"].calls["mcp.x:deplo"] > 3 };`, []string{"1h"},
			policy.Problem{Column: 125, Kind: policy.KindAttribute, Name: "mcp.x:deplo", Suggestion: "mcp.x:deploy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := policy.NewSchema(tools, policy.Options{Windows: tc.windows})
			require.NoError(t, err)
			tc.want.Line = 1
			assertFirstProblem(t, s.Validate(mustSet(t, forbid+tc.cond)), tc.want)
		})
	}
	// The right names pass.
	s, err := policy.NewSchema(tools, policy.Options{Windows: []string{"1h"}})
	require.NoError(t, err)
	for _, cond := range []string{
		"context.arguments has options && context.arguments.options has force && context.arguments.options.force };",
		`context.session.window["1h"].calls["mcp.x:deploy"] > 5 && context.session.principal.window["1h"].calls["mcp.x:deploy"] > 5 };`,
		`context.session.calls["mcp.x:deploy"] > 3 };`,
	} {
		assert.Empty(t, s.Validate(mustSet(t, forbid+cond)), cond)
	}
}

// TestValidateLiterals: a value a policy compares that the catalog never
// has is refused like a misspelt name: a Server id that is no upstream's
// namespace, in the scope or a condition, and a string compared with
// context.tool's effect, namespace, id or name, the resource's name,
// source or provenance, or the principal's method that no tool or caller
// has, on either side and in any set operation.
func TestValidateLiterals(t *testing.T) {
	tools, _ := githubTools(t)
	s, err := policy.NewSchema(tools, githubClaims)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, text string
		want       policy.Problem
	}{
		{"a Server id without mcp.", `@id("p") forbid(principal, action, resource == Server::"github");`,
			policy.Problem{Column: 57, Kind: policy.KindEntity, Name: "github", Suggestion: "mcp.github"}},
		{"a Server id in a condition", `@id("p") forbid(principal, action, resource) when { resource in Server::"mcp.gihub" };`,
			policy.Problem{Column: 74, Kind: policy.KindEntity, Name: "mcp.gihub", Suggestion: "mcp.github"}},
		{"a group where an effect is compared", `@id("p") forbid(principal, action, resource) when { context.tool.effect == "destructive" };`,
			policy.Problem{Column: 77, Kind: policy.KindType, Name: "destructive"}},
		{"a namespace no upstream has", `@id("p") forbid(principal, action, resource) when { "github" == context.tool.namespace };`,
			policy.Problem{Column: 54, Kind: policy.KindEntity, Name: "github", Suggestion: "mcp.github"}},
		{"a tool id no tool has", `@id("p") forbid(principal, action, resource) when { context.tool.id != "mcp.github:merge_pull_requst" };`,
			policy.Problem{Column: 73, Kind: policy.KindTool, Name: "mcp.github:merge_pull_requst", Suggestion: "mcp.github:merge_pull_request"}},
		{"a resource name that is no namespace", `@id("p") forbid(principal, action, resource) when { resource.name == "github" };`,
			policy.Problem{Column: 71, Kind: policy.KindEntity, Name: "github", Suggestion: "mcp.github"}},
		{"a group in a set an effect is looked up in", `@id("p") forbid(principal, action, resource) when { ["destructive"].contains(context.tool.effect) };`,
			policy.Problem{Column: 55, Kind: policy.KindType, Name: "destructive"}},
		{"a pattern no effect matches", `@id("p") forbid(principal, action, resource) when { context.tool.effect like "destr*" };`,
			policy.Problem{Column: 79, Kind: policy.KindType, Name: "destr*"}},
		{"a tool name no tool has", `@id("p") forbid(principal, action, resource) when { context.tool.name == "merge_pul_request" };`,
			policy.Problem{Column: 75, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a tool name on the left", `@id("p") forbid(principal, action, resource) when { "merge_pul_request" != context.tool.name };`,
			policy.Problem{Column: 54, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a tool id where the name is compared", `@id("p") forbid(principal, action, resource) when { context.tool.name == "mcp.github:merge_pull_request" };`,
			policy.Problem{Column: 75, Kind: policy.KindTool, Name: "mcp.github:merge_pull_request", Suggestion: "merge_pull_request"}},
		{"a tool name in a set", `@id("p") forbid(principal, action, resource) when { ["get_me", "merge_pul_request"].contains(context.tool.name) };`,
			policy.Problem{Column: 65, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a tool name in containsAny's argument", `@id("p") forbid(principal, action, resource) when { [context.tool.name].containsAny(["merge_pul_request"]) };`,
			policy.Problem{Column: 87, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a tool name in containsAny's receiver", `@id("p") forbid(principal, action, resource) when { ["merge_pul_request"].containsAny([context.tool.name]) };`,
			policy.Problem{Column: 55, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a tool name in containsAll", `@id("p") forbid(principal, action, resource) when { ["get_me", "merge_pul_request"].containsAll([context.tool.name]) };`,
			policy.Problem{Column: 65, Kind: policy.KindTool, Name: "merge_pul_request", Suggestion: "merge_pull_request"}},
		{"a pattern no tool name matches", `@id("p") forbid(principal, action, resource) when { context.tool.name like "deploy_*" };`,
			policy.Problem{Column: 77, Kind: policy.KindTool, Name: "deploy_*"}},
		{"an upstream source no tool has", `@id("p") forbid(principal, action, resource) when { resource.source == "githb" };`,
			policy.Problem{Column: 73, Kind: policy.KindEntity, Name: "githb", Suggestion: "github"}},
		{"a provenance no tool has", `@id("p") forbid(principal, action, resource) when { resource.provenance == "mcp_config{githb}" };`,
			policy.Problem{Column: 77, Kind: policy.KindEntity, Name: "mcp_config{githb}", Suggestion: "mcp_config{github}"}},
		{"a sign-in method no caller has", `@id("p") forbid(principal, action, resource) when { principal.method == "oicd" };`,
			policy.Problem{Column: 74, Kind: policy.KindType, Name: "oicd", Suggestion: "oidc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Line = 1
			assertFirstProblem(t, s.Validate(mustSet(t, tc.text)), tc.want)
		})
	}
	for _, text := range []string{
		`@id("p") forbid(principal, action, resource == Server::"mcp.github") when { context.tool.effect == "non_idempotent" && context.tool.namespace == "mcp.github" && context.tool.id != "mcp.github:merge_pull_request" };`,
		`@id("p") forbid(principal, action, resource) when { context.tool.effect like "non_*" && ["mcp.github"].contains(resource.name) && [context.tool.id].containsAny(["mcp.github:get_me"]) };`,
		`@id("p") forbid(principal, action, resource) when { context.tool.name == "merge_pull_request" || ["get_me"].containsAny([context.tool.name]) || context.tool.name like "merge_*" };`,
		`@id("p") forbid(principal, action, resource) when { resource.source == "github" && resource.provenance == "mcp_config{github}" && ["", "token"].contains(principal.method) };`,
		`@id("p") forbid(principal, action, resource) when { principal.issuer == "https://id.example.com" && principal.subject == "anyone" };`,
	} {
		assert.Empty(t, s.Validate(mustSet(t, text)), text)
	}
}

// assertFirstProblem checks the first of ps against want's kind, name,
// suggestion, line and column.
func assertFirstProblem(t *testing.T, ps []policy.Problem, want policy.Problem) {
	t.Helper()
	require.NotEmpty(t, ps, "the policy type-checks")
	got := ps[0]
	t.Log(got)
	assert.Equal(t, want.Kind, got.Kind)
	assert.Equal(t, want.Name, got.Name)
	assert.Equal(t, want.Suggestion, got.Suggestion)
	assert.Equal(t, [2]int{want.Line, want.Column}, [2]int{got.Line, got.Column}, "line and column")
}
