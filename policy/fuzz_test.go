package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

// FuzzPolicies: any policy text either fails to parse with a *ParseError
// or *DuplicateIDError, or parses, validates without panicking, and
// evaluates to a well-formed answer that is never an acceptance without
// a permit.
func FuzzPolicies(f *testing.F) {
	tools, lookup := fsTools(f)
	s, err := policy.NewSchema(tools, policy.Options{})
	require.NoError(f, err)
	tool := mustTool(f, lookup, "write_file")
	f.Add(`@id("a") permit(principal, action == Action::"mcp.fs:write_file", resource) when { context.paths.path like "/srv/*" };`, `{"path":"/srv/a","content":"x"}`)
	f.Add(`forbid(principal, action, resource) unless { principal.claims has uris };`, `{}`)
	f.Add(`permit(principal, action in Action::"read_only", resource) when { context.arguments.head.greaterThan(decimal("1.0")) };`, `{"path":1}`)
	f.Fuzz(func(t *testing.T, text, args string) {
		set, err := policy.Parse([]policy.Source{{File: "f.cedar", Text: text}})
		if err != nil {
			var pe *policy.ParseError
			var de *policy.DuplicateIDError
			require.True(t, errorAs(err, &pe) || errorAs(err, &de), "%T %v", err, err)
			return
		}
		for _, p := range s.Validate(set) {
			require.NotEmpty(t, p.Kind)
			require.Positive(t, p.Line)
		}
		r := policy.NewEngine(set, policy.Options{}).Evaluate(policy.Call{Tool: tool, Arguments: json.RawMessage(args), Now: now})
		resp := r.Response()
		require.True(t, resp.Verdict.Valid())
		if resp.Verdict == abi.Accepted {
			require.NotEmpty(t, r.Determining)
			for _, h := range r.Determining {
				require.Equal(t, "permit", h.Effect)
			}
			require.Empty(t, r.Errors)
		}
		if resp.Verdict == abi.Rejected {
			require.NotEmpty(t, resp.Findings)
		}
	})
}

// FuzzArguments: any arguments against any input schema either convert or
// fail with an *ArgumentError; never a panic.
func FuzzArguments(f *testing.F) {
	f.Add(`{"type":"object","properties":{"n":{"type":"number"},"a":{"type":"array","items":{"type":"integer"}}}}`, `{"n":1.5,"a":[1,2]}`)
	f.Add(`{"properties":{"o":{"type":"object","properties":{"s":{"type":["string","null"]}}}}}`, `{"o":{"s":null}}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		typ, _ := policy.FromJSONSchema(json.RawMessage(schema))
		_ = typ.Cedar()
		var v any
		dec := json.NewDecoder(stringsReader(args))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return
		}
		if _, err := typ.Value(v, ""); err != nil {
			var ae *policy.ArgumentError
			require.True(t, errorAs(err, &ae), "%T %v", err, err)
		}
	})
}
