package gatetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

// policyGate accepts when policy.merge allows, and reports the call's error
// code otherwise.
var policyGate = sdk.Gate{
	Descriptor: abi.Descriptor{Name: "policy-probe", Version: "1", SubjectKinds: []abi.SubjectKind{abi.SubjectMerge}, Capabilities: []string{"policy"}},
	Evaluate: func(_ context.Context, req sdk.Request) (abi.Response, error) {
		a, err := sdk.Call[abi.PolicyMergeAnswer](req.Host, abi.OpPolicyMerge, abi.PolicyMergeRequest{})
		var ce *abi.CallError
		if errors.As(err, &ce) {
			return sdk.Inconclusive(ce.Code, nil), nil
		}
		if err != nil {
			return abi.Response{}, err
		}
		return abi.Response{Verdict: abi.Accepted, Evidence: map[string]any{"decision": a.Decision}}, nil
	},
}

func TestHostOperations(t *testing.T) {
	ops := map[string]gatetest.Operation{
		abi.OpPolicyMerge: func([]byte) (any, error) { return abi.PolicyMergeAnswer{Decision: abi.PolicyAllow}, nil },
	}
	req := abi.Request{SubjectKind: abi.SubjectMerge, Subject: json.RawMessage(`{"file_changes":[]}`)}
	for _, tc := range []struct {
		name    string
		host    *gatetest.Host
		verdict abi.Verdict
		reason  string
	}{
		{"answered", &gatetest.Host{Granted: []string{"policy"}, Operations: ops}, abi.Accepted, ""},
		{"not granted", &gatetest.Host{Operations: ops}, abi.Inconclusive, abi.ErrCodeCapabilityDenied},
		{"typed refusal", &gatetest.Host{Granted: []string{"policy"}, Operations: map[string]gatetest.Operation{
			abi.OpPolicyMerge: func([]byte) (any, error) { return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "no"} },
		}}, abi.Inconclusive, abi.ErrCodeBadRequest},
		{"other error", &gatetest.Host{Granted: []string{"policy"}, Operations: map[string]gatetest.Operation{
			abi.OpPolicyMerge: func([]byte) (any, error) { return nil, errors.New("down") },
		}}, abi.Inconclusive, abi.ErrCodeUnavailable},
		{"no handler", &gatetest.Host{Granted: []string{"policy"}}, abi.Inconclusive, abi.ErrCodeUnknownOperation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := gatetest.Evaluate(context.Background(), policyGate, req, tc.host)
			require.NoError(t, err)
			assert.Equal(t, tc.verdict, resp.Verdict)
			assert.Equal(t, tc.reason, resp.Reason)
		})
	}
}
