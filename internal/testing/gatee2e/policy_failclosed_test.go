package gatee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// policyConfig is a policy stage's config holding text, and the counting
// windows it declares.
func policyConfig(t *testing.T, text string, windows ...string) json.RawMessage {
	t.Helper()
	cfg := map[string]any{"policies": []map[string]string{{"file": "p.cedar", "text": text}}}
	if len(windows) > 0 {
		cfg["windows"] = windows
	}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	return b
}

// TestPolicyFailClosed: the policy gate in the host never turns what it
// cannot decide into an acceptance. A policy that errs (Cedar itself would
// allow: the erring forbid is left out) is inconclusive; a set reading
// counts of a window the host does not count is inconclusive (a failing
// counters store: TestPolicyCountersFailClosed); a config that does not
// parse is inconclusive on every call, however many calls with a good
// config the same instance served between them (the instance's parsed
// policies are keyed by the whole config); a config outside the gate's
// schema refuses the host; a malformed, oversized or unrepresentable call
// is refused or inconclusive; the gate past its deadline is inconclusive.
func TestPolicyFailClosed(t *testing.T) {
	wasm := policyWasm(t)
	ctx := context.Background()
	permitAll := `@id("all") permit (principal, action, resource);`
	erring := permitAll + "\n" + `@id("reads-absent") forbid (principal, action, resource) when { context.arguments.absent == "x" };`
	forbidSpam := permitAll + "\n" + `@id("spam") forbid (principal, action, resource) when { context.arguments has subject && context.arguments.subject like "*SPAM*" };`
	session := permitAll + "\n" + `@id("limit") forbid (principal, action, resource) when { context.session.window["1d"].calls["mcp.mail:send_email"] >= 3 };`
	stage := func(name, text string, windows ...string) host.StageConfig {
		return host.StageConfig{Name: name, Plugin: "policy", Capabilities: []string{abi.CapabilityCatalog}, Config: policyConfig(t, text, windows...)}
	}
	pipe := func(stages ...host.StageConfig) host.PipelineConfig {
		return host.PipelineConfig{Subject: abi.SubjectToolCall, Stages: stages}
	}
	slow := stage("slow", hundredLikePolicies())
	slow.Timeout = time.Millisecond
	h := hosttest.New(t, host.Config{
		Plugins:  map[string]host.PluginConfig{"policy": {Path: wasm}},
		Catalog:  hosttest.MailCatalog(t),
		PoolSize: 1, // every stage runs on the one instance
		Pipelines: map[string]host.PipelineConfig{
			"good":     pipe(stage("good", permitAll)),
			"erring":   pipe(stage("erring", erring)),
			"spam":     pipe(stage("spam", forbidSpam)),
			"session":  pipe(stage("session", session, "1d")),
			"unparsed": pipe(stage("unparsed", `permit (principal, action, resource) when { context.x ==  };`)),
			"mixed":    pipe(stage("good", permitAll), stage("unparsed", `permit (principal, action`), stage("spam", forbidSpam)),
			"slow":     pipe(slow),
		},
	})
	check := func(pipeline string, call []byte) *host.Decision {
		t.Helper()
		d, err := h.Check(ctx, pipeline, call, host.RunOptions{})
		require.NoError(t, err)
		return d
	}
	inconclusive := func(d *host.Decision, stage int, reason string) {
		t.Helper()
		assert.Equal(t, abi.Inconclusive, d.Verdict, "%v", d)
		require.Greater(t, len(d.Stages), stage)
		assert.Equal(t, abi.Inconclusive, d.Stages[stage].Verdict)
		assert.Equal(t, reason, d.Stages[stage].Reason, "evidence %v", d.Stages[stage].Evidence)
	}

	for range 3 { // in turn on one instance: each config decides its own calls
		assert.Equal(t, abi.Accepted, check("good", hosttest.Email("hi")).Verdict)
		inconclusive(check("erring", hosttest.Email("hi")), 0, "policy_error")
		inconclusive(check("unparsed", hosttest.Email("hi")), 0, abi.ReasonBadConfig)
		assert.Equal(t, abi.Rejected, check("spam", hosttest.Email("SPAM")).Verdict)
		assert.Equal(t, abi.Accepted, check("spam", hosttest.Email("hi")).Verdict)
		// The host counts no window of a day: a set reading one is not
		// decided as if its counts were 0.
		inconclusive(check("session", hosttest.Email("hi")), 0, "counters_unavailable")
		d := check("mixed", hosttest.Email("hi"))
		inconclusive(d, 1, abi.ReasonBadConfig)
		assert.Equal(t, abi.Accepted, d.Stages[0].Verdict)
		assert.Equal(t, abi.Accepted, d.Stages[2].Verdict)
	}

	// Calls the gate cannot represent, or the host refuses at the edge
	// (want "refused"), under a set that permits everything and one that
	// forbids a marker.
	big := fmt.Sprintf(`{"tool":"send_email","parameters":{"to":"a@example.com","subject":%q}}`, strings.Repeat("x", 3<<20)+"SPAM")
	for _, tc := range []struct {
		name, call string
		good, spam string // "refused", or verdict/reason
	}{
		{"unknown tool", `{"tool":"no_such_tool","parameters":{}}`, "rejected/", "rejected/"},
		{"argument of the wrong type", `{"tool":"send_email","parameters":{"to":"a@example.com","subject":7}}`,
			"inconclusive/argument_unrepresentable", "inconclusive/argument_unrepresentable"},
		{"number out of range", `{"tool":"send_email","parameters":{"to":"a@example.com","subject":"x","n":1e400}}`, "refused", "refused"},
		{"arguments not JSON", `{"tool":"send_email","parameters":{"to":"a@example.com","subject":"x"`, "refused", "refused"},
		{"arguments an array", `{"tool":"send_email","parameters":["to"]}`, "refused", "refused"},
		{"no tool", `{"parameters":{}}`, "refused", "refused"},
		{"above the subject cap", fmt.Sprintf(`{"tool":"send_email","parameters":{"to":"a@example.com","subject":%q}}`, strings.Repeat("x", 5<<20)), "refused", "refused"},
		{"3 MiB, the marker at its end", big, "accepted/", "rejected/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for p, want := range map[string]string{"good": tc.good, "spam": tc.spam} {
				d, err := h.Check(ctx, p, []byte(tc.call), host.RunOptions{})
				got := "refused"
				if err == nil {
					got = string(d.Verdict) + "/" + d.Stages[0].Reason
				}
				assert.Equal(t, want, got, "%s: %v", p, err)
			}
		})
	}

	// Past its deadline: inconclusive, and the next call is served.
	d := check("slow", hosttest.Email("hi"))
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	assert.Equal(t, abi.ReasonPluginTimeout, d.Stages[0].Reason)
	assert.Equal(t, abi.Accepted, check("good", hosttest.Email("hi")).Verdict)

	// A config outside the gate's schema refuses the host.
	bad := host.Config{Plugins: map[string]host.PluginConfig{"policy": {Path: wasm}}, Catalog: hosttest.MailCatalog(t),
		CacheDir: testwasm.CacheDir(),
		Pipelines: map[string]host.PipelineConfig{"p": pipe(host.StageConfig{Plugin: "policy", Capabilities: []string{abi.CapabilityCatalog},
			Config: json.RawMessage(`{"polices":[{"text":"permit (principal, action, resource);"}]}`)})}}
	_, err := host.New(ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "polices")
}

// hundredLikePolicies: 100 policies that each match a pattern against the
// call's subject, more than a millisecond of work in a guest.
func hundredLikePolicies() string {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "@id(\"p%d\") permit (principal, action, resource) when { context.arguments has subject && context.arguments.subject like \"*%d*x*y*z*\" };\n", i, i)
	}
	return b.String()
}
