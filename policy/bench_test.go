package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehost/gatehost/policy"
)

// HundredPolicies is a set of 100 policies that all apply to a
// server-filesystem write_file call, so each is evaluated: 50 permits on
// path prefixes, 40 forbids on content, 10 on the caller's claims. The
// benchmark's call is permitted by exactly one.
func HundredPolicies() string {
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "@id(\"permit-%d\") permit(principal, action in Action::\"mcp.fs:*\", resource)\nwhen { context.paths has path && context.paths.path like \"/srv/share/public/team%d/*\" };\n", i, i)
	}
	for i := range 40 {
		fmt.Fprintf(&b, "@id(\"forbid-%d\") @message(\"content marker %d\") forbid(principal, action == Action::\"mcp.fs:write_file\", resource)\nwhen { context.arguments.content like \"*MARKER-%d*\" };\n", i, i, i)
	}
	for i := range 10 {
		fmt.Fprintf(&b, "@id(\"claims-%d\") forbid(principal, action in Action::\"destructive\", resource)\nwhen { principal.claims has emails && principal.claims.emails.contains(\"blocked%d@example.com\") };\n", i, i)
	}
	return b.String()
}

// BenchmarkEvaluate100: one write_file call against 100 policies,
// natively: building the Cedar request from the call and the catalog
// record, and authorizing.
func BenchmarkEvaluate100(b *testing.B) {
	_, lookup := fsTools(b)
	set := mustSet(b, HundredPolicies())
	if len(set.Policies) != 100 {
		b.Fatal(len(set.Policies))
	}
	eng := policy.NewEngine(set, policy.Options{})
	call := policy.Call{Tool: mustTool(b, lookup, "write_file"), Now: now,
		Arguments: json.RawMessage(`{"path":"/srv/share/public/team42/notes/../report.md","content":"A quarterly report with nothing secret in it."}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := eng.Evaluate(call); r.Decision != policy.Allow || len(r.Determining) != 1 {
			b.Fatal(r)
		}
	}
}

// BenchmarkParseValidate100: the one-time cost of a policy set: parsing
// 100 policies, and generating the 117-tool GitHub schema and validating
// the set against the filesystem catalog's.
func BenchmarkParseValidate100(b *testing.B) {
	text := HundredPolicies()
	tools, _ := fsTools(b)
	s, err := policy.NewSchema(tools, policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			mustSet(b, text)
		}
	})
	b.Run("validate", func(b *testing.B) {
		set := mustSet(b, text)
		for b.Loop() {
			if ps := s.Validate(set); len(ps) > 0 {
				b.Fatal(ps)
			}
		}
	})
	gh, _ := githubTools(b)
	b.Run("schema-github", func(b *testing.B) {
		for b.Loop() {
			if _, err := policy.NewSchema(gh, policy.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
