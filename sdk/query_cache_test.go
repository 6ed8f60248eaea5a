package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func TestQueryCapabilityRemembersAnswersOfADigest(t *testing.T) {
	d1 := abi.QueryDigestPrefix + strings.Repeat("1", 64)
	d2 := abi.QueryDigestPrefix + strings.Repeat("2", 64)
	capability := func(name string) string {
		return `{"result":{"found":true,"capability":{"domain":"retail","name":"` + name + `","kind":"action"}}}`
	}
	cancel, cancel2 := capability("cancel"), capability("cancel_order")
	notFound := `{"result":{"found":false}}`
	unavailable := `{"error":{"code":"unavailable","message":"capability cancel reads var root, which is not bound here"}}`
	newer := `{"result":{"found":true,"capability":{"domain":"retail","name":"cancel","kind":"action","requires_quorum":2}}}`
	type lookup struct {
		digest  string // "" for a Host not pinned to a query digest
		domain  string
		name    string
		answer  string // "" when the host must not be asked
		want    string // the capability's name; "" for not found
		wantErr bool
	}
	tests := []struct {
		name    string
		lookups []lookup
	}{
		{"the same digest asks once", []lookup{{d1, "retail", "cancel", cancel, "cancel", false}, {d1, "retail", "cancel", "", "cancel", false}}},
		{"another digest asks again", []lookup{{d1, "retail", "cancel", cancel, "cancel", false}, {d2, "retail", "cancel", cancel2, "cancel_order", false}, {d2, "retail", "cancel", "", "cancel_order", false}}},
		{"back to an older digest asks again", []lookup{{d2, "retail", "cancel", cancel2, "cancel_order", false}, {d1, "retail", "cancel", cancel, "cancel", false}}},
		{"another domain asks", []lookup{{d1, "retail", "cancel", cancel, "cancel", false}, {d1, "airline", "cancel", notFound, "", false}}},
		{"another name asks", []lookup{{d1, "retail", "cancel", cancel, "cancel", false}, {d1, "retail", "cancel_order", cancel2, "cancel_order", false}}},
		{"not found is remembered too", []lookup{{d1, "retail", "x", notFound, "", false}, {d1, "retail", "x", "", "", false}}},
		{"an error is not remembered", []lookup{{d1, "retail", "cancel", unavailable, "", true}, {d1, "retail", "cancel", cancel, "cancel", false}}},
		{"a member the SDK does not know is an error, not remembered", []lookup{{d1, "retail", "cancel", newer, "", true}, {d1, "retail", "cancel", cancel, "cancel", false}}},
		{"a Host without a digest is always asked", []lookup{{"", "retail", "cancel", cancel, "cancel", false}, {"", "retail", "cancel", cancel2, "cancel_order", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			capabilities, capabilityDecodes = newCapabilityCache(), newCapabilityCache()
			for i, l := range tc.lookups {
				sh := &scriptedHost{}
				if l.answer != "" {
					sh.answers = []string{l.answer}
				}
				var h Host = sh
				if l.digest != "" {
					h = pinnedScripted{sh, runPins{query: l.digest}}
				}
				a, err := QueryCapability(h, l.domain, l.name)
				assert.Len(t, sh.answers, 0, "lookup %d: unused answers", i)
				if l.wantErr {
					require.Error(t, err, "lookup %d", i)
					continue
				}
				require.NoError(t, err, "lookup %d", i)
				if l.want == "" {
					assert.False(t, a.Found, "lookup %d", i)
					continue
				}
				require.True(t, a.Found, "lookup %d", i)
				assert.Equal(t, l.want, a.Capability.Name, "lookup %d", i)
			}
		})
	}
}

// Handle pins a run's query digest only when the run is granted the query
// capability and the digest is well-formed.
func TestHandlePinsTheRunsQueryDigest(t *testing.T) {
	good := abi.QueryDigestPrefix + strings.Repeat("0123456789abcdef", 4)
	var got Host
	g := &Gate{Evaluate: func(_ context.Context, req Request) (abi.Response, error) {
		got = req.Host
		return abi.Response{Verdict: abi.Accepted, Basis: "b"}, nil
	}}
	request := func(caps, digest string) string {
		return `{"abi_version":1,"subject_kind":"tool_call","subject":{},"context":{"catalog_generation":42,"now":"2026-01-01T00:00:00Z","capabilities":[` + caps + `],"query_digest":"` + digest + `"}}`
	}
	tests := []struct {
		name    string
		request string
		want    *runPins // nil: not pinned
	}{
		{"query granted", request(`"query"`, good), &runPins{generation: 42, query: good}},
		{"query and catalog granted", request(`"catalog","query"`, good), &runPins{catalog: true, generation: 42, query: good}},
		{"query not granted", request(`"catalog"`, good), &runPins{catalog: true, generation: 42}},
		{"nothing granted", request(``, good), nil},
		{"no digest", request(`"query"`, ``), nil},
		{"upper-case hex", request(`"query"`, strings.ToUpper(good)), nil},
		{"too short", request(`"query"`, good[:len(good)-1]), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			Handle(context.Background(), g, pinnerHost{&scriptedHost{}}, []byte(tc.request))
			pr, ok := got.(pinnedRun)
			require.Equal(t, tc.want != nil, ok)
			if ok {
				assert.Equal(t, *tc.want, pr.pins())
			}
		})
	}
}
