package approval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/approval"
)

// TestRuleCheckSignIns: an approver that no principal of the configured
// sign-ins can match is refused, naming its index, the field that rules
// every sign-in out and the value nearest it; one that some sign-in can
// match passes.
func TestRuleCheckSignIns(t *testing.T) {
	tokens := approval.SignIn{Name: "the approver tokens", Method: "token", Issuer: "gatehost-approvers", Subjects: []string{"alice", "bob"}}
	oidc := approval.SignIn{Name: "approvals.page.oidc", Method: "oidc", Issuer: "https://id.example.com", Claims: []string{"groups"}}
	both := []approval.SignIn{tokens, oidc}
	for _, tc := range []struct {
		name      string
		ins       []approval.SignIn
		approvers []approval.Approver
		want      string // the error; empty: none
	}{
		{"a token subject misspelt", both, []approval.Approver{{Method: "token", Subject: "alcie"}},
			`approvers[0].subject: "alcie": none of the approver tokens is named so; did you mean "alice"?`},
		{"a subject no token has, without OIDC", []approval.SignIn{tokens}, []approval.Approver{{Subject: "carol"}},
			`approvers[0].subject: "carol": none of the approver tokens is named so`},
		{"the second approver", both, []approval.Approver{{Method: "token", Subject: "alice"}, {Method: "token", Issuer: "gatehost-approvers", Subject: "bbo"}},
			`approvers[1].subject: "bbo": none of the approver tokens is named so; did you mean "bob"?`},
		{"mtls: nobody signs in so", both, []approval.Approver{{Method: "mtls", Subject: "alice"}},
			`approvers[0].method: "mtls": no approver signs in with it (the approver tokens: token; approvals.page.oidc: oidc)`},
		{"oidc without an OIDC sign-in", []approval.SignIn{tokens}, []approval.Approver{{Method: "oidc", Subject: "alice"}},
			`approvers[0].method: "oidc": no approver signs in with it (the approver tokens: token)`},
		{"no sign-in at all", nil, []approval.Approver{{Method: "token", Subject: "alice"}},
			`approvers[0].method: "token": no approver signs in with it (no sign-in for approvers is configured)`},
		{"an issuer not configured", both, []approval.Approver{{Method: "oidc", Issuer: "https://id.exmple.com"}},
			`approvers[0].issuer: "https://id.exmple.com": no approver signs in with it (approvals.page.oidc: "https://id.example.com"); did you mean "https://id.example.com"?`},
		{"the OIDC issuer on a token approver", both, []approval.Approver{{Method: "token", Issuer: "https://id.example.com"}},
			`approvers[0].issuer: "https://id.example.com": no approver signs in with it (the approver tokens: "gatehost-approvers")`},
		{"a claim the OIDC sign-in does not carry", both, []approval.Approver{{Claims: map[string]string{"grups": "ops"}}},
			`approvers[0].claims: "grups": no approver signs in with this claim (the approver tokens: no claim; approvals.page.oidc: groups); did you mean "groups"?`},
		{"a claim on a token approver", both, []approval.Approver{{Method: "token", Claims: map[string]string{"groups": "ops"}}},
			`approvers[0].claims: "groups": no approver signs in with this claim (the approver tokens: no claim)`},
		{"approvers some sign-in matches", both, []approval.Approver{
			{Method: "token", Subject: "alice"}, {Issuer: "gatehost-approvers"}, {Subject: "carol"}, // an OIDC subject
			{Method: "oidc", Issuer: "https://id.example.com", Claims: map[string]string{"groups": "ops"}}}, ""},
		{"no approvers", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := approval.Rule{Approvers: tc.approvers}.CheckSignIns(tc.ins)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ae *approval.ApproverError
			require.ErrorAs(t, err, &ae)
			assert.ErrorIs(t, err, approval.ErrApproverMatchesNobody)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}
