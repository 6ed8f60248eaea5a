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
		{name: "not found yet valid is refused", host: &gatetest.Host{Granted: []string{abi.CapabilitySchema}, Operations: map[string]gatetest.Operation{
			abi.OpSchemaValidate: func([]byte) (any, error) { return abi.SchemaValidateAnswer{Valid: true}, nil }}},
			req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}},
		{name: "not found with findings is refused", host: &gatetest.Host{Granted: []string{abi.CapabilitySchema}, Operations: map[string]gatetest.Operation{
			abi.OpSchemaValidate: func([]byte) (any, error) { return abi.SchemaValidateAnswer{Findings: missingA}, nil }}},
			req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}},
		{name: "valid yet truncated findings is refused", host: &gatetest.Host{Granted: []string{abi.CapabilitySchema}, Operations: map[string]gatetest.Operation{
			abi.OpSchemaValidate: func([]byte) (any, error) {
				return abi.SchemaValidateAnswer{Found: true, Valid: true, Truncated: true}, nil
			}}},
			req: abi.SchemaValidateRequest{Tool: "t", Value: json.RawMessage(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host
			if h == nil {
				h = gatetest.NewHost(tools...)
			}
			// failed checks an error case and reports whether it was one.
			failed := func(err error) bool {
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
					return false
				}
				return true
			}
			if a, err := sdk.ValidateSchema(h, tt.req); !failed(err) {
				assert.Equal(t, tt.want, a)
			}
			// In a batch (schema.validate_many), beside a valid item:
			// the same answer, or the whole call fails alike.
			many, err := sdk.ValidateSchemas(h, []abi.SchemaValidateRequest{{Tool: "free", Value: json.RawMessage(`{}`)}, tt.req, tt.req})
			if !failed(err) {
				require.Len(t, many, 3)
				assert.Equal(t, abi.SchemaValidateAnswer{Found: true, Valid: true}, many[0])
				assert.Equal(t, tt.want, many[1])
				assert.Equal(t, tt.want, many[2])
			}
		})
	}
}

// countingHost counts the host calls of each operation.
type countingHost struct {
	*gatetest.Host
	calls map[string]int
}

func (h *countingHost) Call(op string, request []byte) ([]byte, error) {
	h.calls[op]++
	return h.Host.Call(op, request)
}

// sdk.ValidateSchemas crosses into the host once per batch of at most
// abi.MaxSchemaItems items under the host-call request cap, asks item by
// item a host without schema.validate_many, and refuses an answer with
// another number of items.
func TestValidateSchemasBatches(t *testing.T) {
	tools := []abi.Tool{{ID: "x:free", Name: "free"}}
	reqs := func(n, valueBytes int) []abi.SchemaValidateRequest {
		v := json.RawMessage(`{"s":"` + strings.Repeat("x", valueBytes) + `"}`)
		out := make([]abi.SchemaValidateRequest, n)
		for i := range out {
			out[i] = abi.SchemaValidateRequest{Tool: "free", Value: v}
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		reqs       []abi.SchemaValidateRequest
		noMany     bool
		want       map[string]int
		wantErrMsg string
	}{
		{name: "none", reqs: nil, want: map[string]int{}},
		{name: "one, on its own", reqs: reqs(1, 1), want: map[string]int{abi.OpSchemaValidate: 1}},
		{name: "two, in one call", reqs: reqs(2, 1), want: map[string]int{abi.OpSchemaValidateMany: 1}},
		{name: "at most MaxSchemaItems a call", reqs: reqs(abi.MaxSchemaItems+2, 1), want: map[string]int{abi.OpSchemaValidateMany: 2}},
		{name: "one left over goes on its own", reqs: reqs(abi.MaxSchemaItems+1, 1), want: map[string]int{abi.OpSchemaValidateMany: 1, abi.OpSchemaValidate: 1}},
		{name: "under the request cap", reqs: reqs(5, abi.MaxHostRequestBytes/3), want: map[string]int{abi.OpSchemaValidateMany: 2, abi.OpSchemaValidate: 1}},
		{name: "a host before minor 12, item by item", reqs: reqs(3, 1), noMany: true, want: map[string]int{abi.OpSchemaValidateMany: 1, abi.OpSchemaValidate: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &countingHost{Host: gatetest.NewHost(tools...), calls: map[string]int{}}
			if tc.noMany {
				h.Operations = map[string]gatetest.Operation{abi.OpSchemaValidateMany: func([]byte) (any, error) {
					return nil, &abi.CallError{Code: abi.ErrCodeUnknownOperation, Message: "unknown operation"}
				}}
			}
			got, err := sdk.ValidateSchemas(h, tc.reqs)
			require.NoError(t, err)
			assert.Len(t, got, len(tc.reqs))
			for _, a := range got {
				assert.Equal(t, abi.SchemaValidateAnswer{Found: true, Valid: true}, a)
			}
			assert.Equal(t, tc.want, h.calls)
		})
	}
	for name, op := range map[string]gatetest.Operation{
		"fewer items": func([]byte) (any, error) {
			return abi.SchemaValidateManyAnswer{Items: []abi.SchemaValidateAnswer{{Found: true, Valid: true}}}, nil
		},
		"more items": func([]byte) (any, error) {
			return abi.SchemaValidateManyAnswer{Items: make([]abi.SchemaValidateAnswer, 3)}, nil
		},
		"no items": func([]byte) (any, error) { return abi.SchemaValidateManyAnswer{}, nil },
		"an item contradicts itself": func([]byte) (any, error) {
			return abi.SchemaValidateManyAnswer{Items: []abi.SchemaValidateAnswer{{Found: true, Valid: true}, {Found: true}}}, nil
		},
		"another refusal": func([]byte) (any, error) {
			return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: "no"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := gatetest.NewHost(tools...)
			h.Operations = map[string]gatetest.Operation{abi.OpSchemaValidateMany: op}
			got, err := sdk.ValidateSchemas(h, reqs(2, 1))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Contains(t, err.Error(), abi.OpSchemaValidateMany)
		})
	}
}
