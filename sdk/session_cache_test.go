package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func TestSessionGetRemembersAnswersOfADigest(t *testing.T) {
	d1 := abi.SessionDigestPrefix + strings.Repeat("1", 64)
	d2 := abi.SessionDigestPrefix + strings.Repeat("2", 64)
	pinned := `{"result":{"session":"dev","known":true,"version":3,"core":{"schema_digest":"s","policy_digest":"p","provenance":"builtin_runtime"}}}`
	granted := `{"result":{"session":"dev","known":true,"version":4,"activation":{"grant":{"session":"dev","tool":"x:t","catalog_generation":0,"schema_digest":"s","policy_digest":"p"},"provenance":"mcp_config{x}"}}}`
	none := `{"result":{"session":"dev","known":true,"version":5}}`
	unavailable := `{"error":{"code":"unavailable","message":"session store unavailable"}}`
	type lookup struct {
		digest  string // "" for a Host not pinned to a session
		tool    string
		answer  string // "" when the host must not be asked
		version uint64
		wantErr bool
	}
	tests := []struct {
		name    string
		lookups []lookup
	}{
		{"the same digest asks once", []lookup{{d1, "x:t", pinned, 3, false}, {d1, "x:t", "", 3, false}}},
		{"another digest asks again", []lookup{{d1, "x:t", pinned, 3, false}, {d2, "x:t", granted, 4, false}, {d2, "x:t", "", 4, false}}},
		{"back to an older digest asks again", []lookup{{d2, "x:t", granted, 4, false}, {d1, "x:t", pinned, 3, false}}},
		{"a tool the set does not hold is remembered too", []lookup{{d1, "x:u", none, 5, false}, {d1, "x:u", "", 5, false}}},
		{"another tool asks", []lookup{{d1, "x:t", pinned, 3, false}, {d1, "x:u", none, 5, false}}},
		{"an error is not remembered", []lookup{{d1, "x:t", unavailable, 0, true}, {d1, "x:t", pinned, 3, false}}},
		{"a Host without a digest is always asked", []lookup{{"", "x:t", pinned, 3, false}, {"", "x:t", granted, 4, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sessionAnswers = newSessionCache()
			for i, l := range tc.lookups {
				sh := &scriptedHost{}
				if l.answer != "" {
					sh.answers = []string{l.answer}
				}
				var h Host = sh
				if l.digest != "" {
					h = pinnedScripted{sh, runPins{session: l.digest}}
				}
				a, err := SessionGet(h, l.tool)
				assert.Len(t, sh.answers, 0, "lookup %d: unused answers", i)
				if l.wantErr {
					require.Error(t, err, "lookup %d", i)
					continue
				}
				require.NoError(t, err, "lookup %d", i)
				assert.Equal(t, l.version, a.Version, "lookup %d", i)
			}
		})
	}
}

// A gate changing the pin or grant it was given changes nothing the next
// run sees.
func TestSessionGetRememberedAnswerIsACopy(t *testing.T) {
	sessionAnswers = newSessionCache()
	d := abi.SessionDigestPrefix + strings.Repeat("a", 64)
	sh := &scriptedHost{answers: []string{`{"result":{"session":"dev","known":true,"version":3,"core":{"schema_digest":"s","policy_digest":"p","provenance":"builtin_runtime"},"activation":{"grant":{"session":"dev","tool":"x:t","catalog_generation":0,"schema_digest":"s","policy_digest":"p"},"provenance":"mcp_config{x}"}}}`}}
	h := pinnedScripted{sh, runPins{session: d}}
	a, err := SessionGet(h, "x:t")
	require.NoError(t, err)
	a.Core.SchemaDigest, a.Activation.Grant.Tool = "changed", "changed"
	again, err := SessionGet(h, "x:t")
	require.NoError(t, err)
	assert.Equal(t, "s", again.Core.SchemaDigest)
	assert.Equal(t, "x:t", again.Activation.Grant.Tool)
}

// Handle pins a run's session digest only when the run is granted the
// session and the digest is well-formed; the catalog pin is independent.
func TestHandlePinsTheRunsSessionDigest(t *testing.T) {
	good := abi.SessionDigestPrefix + strings.Repeat("0123456789abcdef", 4)
	var got Host
	g := &Gate{Evaluate: func(_ context.Context, req Request) (abi.Response, error) {
		got = req.Host
		return abi.Response{Verdict: abi.Accepted, Basis: "b"}, nil
	}}
	request := func(caps, digest string) string {
		return `{"abi_version":1,"subject_kind":"tool_call","subject":{},"context":{"catalog_generation":42,"now":"2026-01-01T00:00:00Z","capabilities":[` + caps + `],"session":"dev","session_digest":"` + digest + `"}}`
	}
	tests := []struct {
		name    string
		request string
		want    *runPins // nil: not pinned
	}{
		{"session granted", request(`"session"`, good), &runPins{generation: 42, session: good}},
		{"session and catalog granted", request(`"catalog","session"`, good), &runPins{catalog: true, generation: 42, session: good}},
		{"session not granted", request(`"catalog"`, good), &runPins{catalog: true, generation: 42}},
		{"nothing granted", request(``, good), nil},
		{"no digest", request(`"session"`, ``), nil},
		{"upper-case hex", request(`"session"`, strings.ToUpper(good)), nil},
		{"another prefix", request(`"session"`, "sha512:"+good[len("sha256:"):]), nil},
		{"too short", request(`"session"`, good[:len(good)-1]), nil},
		{"not hex", request(`"session"`, good[:len(good)-1]+"g"), nil},
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
