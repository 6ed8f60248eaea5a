package sdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// TestHandleDecodesAsEncodingJSON: the request and the proposal a gate
// sees are what encoding/json decodes from the same bytes, for member
// names in other cases, repeated members and nulls; what encoding/json
// refuses ends inconclusive, the field named in the evidence.
func TestHandleDecodesAsEncodingJSON(t *testing.T) {
	const head = `{"abi_version":1,"subject_kind":"proposal",`
	tests := []struct {
		name   string
		req    string
		reason string // "" : the gate ran and accepted
		field  string // in the error text of a refusal
	}{
		{"case-variant envelope names", `{"ABI_Version":1,"Subject_Kind":"proposal","SUBJECT":{"actions":[]},"Context":{"NOW":"n"}}`, "", ""},
		{"Unicode fold (Kelvin sign) in a name", `{"abi_version":1,"subject_\u212aind":"proposal","subject":{"actions":[]}}`, "", ""},
		{"repeated envelope member: the last wins", head + `"stage":"a","Stage":"b","subject":{"actions":[]}}`, "", ""},
		{"repeated context merges", head + `"subject":{"actions":[]},"context":{"session":"s"},"context":{"now":"n"}}`, "", ""},
		{"case-variant and repeated proposal members", head + `"subject":{"Actions":[{"TOOL":"a","id":"x"}],"actions":[{"tool":"b"}]}}`, "", ""},
		{"nulls", head + `"run_id":null,"config":null,"subject":{"actions":[{"parameters":null,"idempotent":null}],"context":null}}`, "", ""},
		{"invalid UTF-8 and lone surrogates", head + "\"stage\":\"\xff\\ud800\",\"subject\":{\"actions\":[{\"id\":\"\\udc00\xfe\"}]}}", "", ""},
		{"principal (minor 6)", head + `"abi_minor":6,"subject":{"actions":[]},"context":{"principal":{"issuer":"i","subject":"alice","method":"oidc","claims":{"role":"reviewer","n":1}}}}`, "", ""},
		{"principal of the wrong kind", head + `"subject":{"actions":[]},"context":{"principal":"alice"}}`, sdk.ReasonBadRequest, "context.principal"},
		{"major as a string", `{"abi_version":"1"}`, sdk.ReasonBadRequest, "abi_version"},
		{"major with a fraction", `{"abi_version":1.0}`, sdk.ReasonBadRequest, "abi_version"},
		{"negative generation", head + `"subject":{},"context":{"catalog_generation":-1}}`, sdk.ReasonBadRequest, "context.catalog_generation"},
		{"trailing data", head + `"subject":{}} {}`, sdk.ReasonBadRequest, "offset"},
		{"subject not JSON", head + `"subject":{"actions":[}}`, sdk.ReasonBadRequest, "subject"},
		{"action not an object", head + `"subject":{"actions":[{},1]}}`, sdk.ReasonGateError, "actions[1]"},
		{"depends_on not integers", head + `"subject":{"actions":[{"depends_on":[0,2.5]}]}}`, sdk.ReasonGateError, "actions[0].depends_on[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen sdk.Request
			var prop abi.Proposal
			g := accepting
			g.Evaluate = func(ctx context.Context, req sdk.Request) (abi.Response, error) {
				seen = req
				p, err := req.Proposal()
				if err != nil {
					return abi.Response{}, err
				}
				prop = p
				return abi.Response{Verdict: abi.Accepted, Evidence: map[string]any{"ok": true}}, nil
			}
			out := sdk.Handle(context.Background(), &g, gatetest.NewHost(), []byte(tt.req))
			var r abi.Response
			require.NoError(t, json.Unmarshal(out, &r))
			if tt.reason != "" {
				assert.Equal(t, abi.Inconclusive, r.Verdict)
				assert.Equal(t, tt.reason, r.Reason)
				assert.Contains(t, r.Evidence["error"], tt.field)
				return
			}
			require.Equal(t, abi.Accepted, r.Verdict, "%s", out)
			var want abi.Request
			require.NoError(t, json.Unmarshal([]byte(tt.req), &want))
			assert.Equal(t, want, seen.Request)
			var wantP abi.Proposal
			require.NoError(t, json.Unmarshal(want.Subject, &wantP))
			assert.Equal(t, wantP, prop)
		})
	}
}

// TestRequestPrincipal: Principal says whether the run has one.
func TestRequestPrincipal(t *testing.T) {
	var r sdk.Request
	_, ok := r.Principal()
	assert.False(t, ok, "absent: anonymous")
	r.Context.Principal = &abi.Principal{Subject: "alice", Method: abi.MethodOIDC}
	p, ok := r.Principal()
	require.True(t, ok)
	assert.Equal(t, "alice", p.Subject)
}
