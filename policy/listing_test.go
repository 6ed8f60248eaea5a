package policy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/policy"
)

// TestMayPermit: a tool is possible for a principal when a permit's scope
// and context-free conditions match it and no forbid applies regardless of
// the arguments; conditions on the arguments or the clock never hide it.
func TestMayPermit(t *testing.T) {
	_, lookup := githubTools(t)
	eng := policy.NewEngine(mustSet(t, evalPolicies), githubClaims)
	reviewer := &abi.Principal{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "alice", Claims: map[string]any{"roles": []any{"reviewer"}}}
	reader := &abi.Principal{Method: abi.MethodOIDC, Issuer: "https://id", Subject: "bob", Claims: map[string]any{"roles": []any{"reader"}}}
	for _, tc := range []struct {
		name      string
		tool      string
		principal *abi.Principal
		want      bool
	}{
		{"a read, anyone", "get_me", nil, true},
		{"merge by a reviewer (the freeze reads the clock)", "merge_pull_request", reviewer, true},
		{"merge by a reader: big-prs reads the arguments", "merge_pull_request", reader, true},
		{"merge, anonymous: destructive needs auth", "merge_pull_request", nil, false},
		{"a write no permit names", "create_repository", reader, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eng.MayPermit(context.Background(), mustTool(t, lookup, tc.tool), tc.principal)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	// A permit whose condition errs for this principal (roles undeclared
	// for an anonymous caller) keeps the tool listed: the call decides.
	got, err := eng.MayPermit(context.Background(), mustTool(t, lookup, "create_issue"), nil)
	require.NoError(t, err)
	assert.True(t, got)
}
