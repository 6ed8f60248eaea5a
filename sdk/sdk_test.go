package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/sdk"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

var accepting = sdk.Gate{
	Descriptor: abi.Descriptor{Name: "t", Version: "1", SubjectKinds: []abi.SubjectKind{abi.SubjectProposal}},
	Evaluate: func(ctx context.Context, req sdk.Request) (abi.Response, error) {
		if _, err := req.Proposal(); err != nil {
			return abi.Response{}, err
		}
		return abi.Response{Verdict: abi.Accepted, Evidence: map[string]any{"ok": true}}, nil
	},
}

func TestHandleFailuresAreInconclusive(t *testing.T) {
	panics := accepting
	panics.Evaluate = func(context.Context, sdk.Request) (abi.Response, error) { panic("boom") }
	errs := accepting
	errs.Evaluate = func(context.Context, sdk.Request) (abi.Response, error) { return abi.Response{}, errors.New("no") }
	good := `{"abi_version":1,"run_id":"r","stage":"s","subject_kind":"proposal","subject":{"actions":[]},"context":{"catalog_generation":0,"now":"2026-01-01T00:00:00Z"}}`
	tests := []struct {
		name   string
		gate   *sdk.Gate
		req    string
		reason string
	}{
		{"panic", &panics, good, sdk.ReasonGatePanic},
		{"error", &errs, good, sdk.ReasonGateError},
		{"no gate", nil, good, sdk.ReasonNotRegistered},
		{"not JSON", &accepting, `{`, sdk.ReasonBadRequest},
		{"empty", &accepting, ``, sdk.ReasonBadRequest},
		{"wrong major", &accepting, `{"abi_version":2}`, sdk.ReasonUnsupportedABI},
		{"wrong kind", &accepting, `{"abi_version":1,"subject_kind":"merge","subject":{}}`, sdk.ReasonGateError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := sdk.Handle(context.Background(), tt.gate, gatetest.NewHost(), []byte(tt.req))
			require.NoError(t, abischema.Validate(abi.SchemaResponse, out), "%s", out)
			var r abi.Response
			require.NoError(t, json.Unmarshal(out, &r))
			assert.Equal(t, abi.Inconclusive, r.Verdict)
			assert.Equal(t, tt.reason, r.Reason)
		})
	}
}

func TestCapabilityDenied(t *testing.T) {
	h := &gatetest.Host{} // grants nothing
	_, _, err := sdk.CatalogGet(h, "x")
	assert.ErrorIs(t, err, sdk.ErrCapabilityDenied)
	var ce *abi.CallError
	assert.ErrorAs(t, err, &ce)
}

// FuzzHandle feeds arbitrary request bytes: the answer is always a response
// that passes the ABI schema.
func FuzzHandle(f *testing.F) {
	f.Add([]byte(`{"abi_version":1,"subject_kind":"proposal","subject":{"actions":[]}}`))
	f.Add([]byte(`{"abi_version":1,"subject_kind":"proposal","subject":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := sdk.Handle(context.Background(), &accepting, gatetest.NewHost(), b)
		if err := abischema.Validate(abi.SchemaResponse, out); err != nil {
			t.Fatalf("response %s fails the ABI: %v", out, err)
		}
	})
}

// TestInconclusiveCutsErrorText: a long error's text is cut to 1 KiB on a
// rune boundary, so the evidence stays valid UTF-8 and JSON keeps it as is.
func TestInconclusiveCutsErrorText(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{"short", "boom", "boom"},
		{"exactly 1 KiB", strings.Repeat("a", 1024), strings.Repeat("a", 1024)},
		{"ascii over", strings.Repeat("a", 1025), strings.Repeat("a", 1024) + "…"},
		{"two-byte rune across the cut", strings.Repeat("a", 1023) + "éz", strings.Repeat("a", 1023) + "…"},
		{"four-byte runes", strings.Repeat("😀", 300), strings.Repeat("😀", 256) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sdk.Inconclusive(abi.ReasonGateError, errors.New(tt.msg))
			got, _ := r.Evidence["error"].(string)
			assert.Equal(t, tt.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
	assert.Nil(t, sdk.Inconclusive(abi.ReasonGateError, nil).Evidence, "no error, no evidence")
}
