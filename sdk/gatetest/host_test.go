package gatetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// The native host answers schema.validate through the host's own
// implementation; sdk.ValidateSchema turns refusals and self-contradicting
// answers into errors.
func TestHostSchemaValidate(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	tools := []abi.Tool{
		{ID: "x:t", Name: "t", Aliases: []string{"tt"}, SchemaDigest: digest,
			InputSchema: json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`)},
		{ID: "x:free", Name: "free"},
		{ID: "x:broken", Name: "broken", InputSchema: json.RawMessage(`{"type":"objekt"}`)},
	}
	missingA := []abi.SchemaFinding{{Pointer: "", Keyword: "required", Message: "missing properties: 'a'"}}
	tests := []struct {
		name     string
		host     *gatetest.Host
		req      abi.SchemaValidateRequest
		want     abi.SchemaValidateAnswer
		wantCode string
		wantErr  error
	}{
		{name: "by id", req: abi.SchemaValidateRequest{Tool: "x:t", Value: json.RawMessage(`{"a":"b"}`)},
			want: abi.SchemaValidateAnswer{Found: true, SchemaDigest: digest, Valid: true}},
		{name: "by alias, invalid", req: abi.SchemaValidateRequest{Tool: "tt", Value: json.RawMessage(`{}`)},
			want: abi.SchemaValidateAnswer{Found: true, SchemaDigest: digest, Findings: missingA}},
		{name: "by digest", req: abi.SchemaValidateRequest{SchemaDigest: digest, Value: json.RawMessage(`{}`)},
			want: abi.SchemaValidateAnswer{Found: true, SchemaDigest: digest, Findings: missingA}},
		{name: "no input schema", req: abi.SchemaValidateRequest{Tool: "free", Value: json.RawMessage(`[1]`)},
			want: abi.SchemaValidateAnswer{Found: true, Valid: true}},
		{name: "unknown tool", req: abi.SchemaValidateRequest{Tool: "nope", Value: json.RawMessage(`{}`)}},
		{name: "unknown digest", req: abi.SchemaValidateRequest{SchemaDigest: strings.Repeat("0", 64), Value: json.RawMessage(`{}`)}},
		{name: "neither", req: abi.SchemaValidateRequest{Value: json.RawMessage(`{}`)}, wantCode: abi.ErrCodeBadRequest},
		{name: "both", req: abi.SchemaValidateRequest{Tool: "t", SchemaDigest: digest, Value: json.RawMessage(`{}`)}, wantCode: abi.ErrCodeBadRequest},
		{name: "a nil value is sent as null", req: abi.SchemaValidateRequest{Tool: "t"},
			want: abi.SchemaValidateAnswer{Found: true, SchemaDigest: digest, Findings: []abi.SchemaFinding{{Keyword: "type", Message: "expected object, but got null"}}}},
		{name: "schema does not compile", req: abi.SchemaValidateRequest{Tool: "broken", Value: json.RawMessage(`{}`)}, wantCode: abi.ErrCodeUnavailable},
		{name: "not granted", host: &gatetest.Host{Tools: tools, Granted: []string{abi.CapabilityCatalog}},
			req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}, wantCode: abi.ErrCodeCapabilityDenied, wantErr: sdk.ErrCapabilityDenied},
		{name: "valid with findings is refused", host: &gatetest.Host{Granted: []string{abi.CapabilitySchema}, Operations: map[string]gatetest.Operation{
			abi.OpSchemaValidate: func([]byte) (any, error) {
				return abi.SchemaValidateAnswer{Found: true, Valid: true, Findings: missingA}, nil
			}}}, req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}},
		{name: "invalid without findings is refused", host: &gatetest.Host{Granted: []string{abi.CapabilitySchema}, Operations: map[string]gatetest.Operation{
			abi.OpSchemaValidate: func([]byte) (any, error) { return abi.SchemaValidateAnswer{Found: true}, nil }}},
			req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host
			if h == nil {
				h = gatetest.NewHost(tools...)
			}
			a, err := sdk.ValidateSchema(h, tt.req)
			switch {
			case tt.wantCode != "":
				var ce *abi.CallError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.wantCode, ce.Code)
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
				}
			case strings.HasSuffix(tt.name, "is refused"):
				require.Error(t, err)
				assert.Contains(t, err.Error(), "findings")
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.want, a)
			}
		})
	}
}
