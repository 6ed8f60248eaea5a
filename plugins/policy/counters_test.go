package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	gate "github.com/gatehost/gatehost/plugins/policy"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

const rateLimit = `
@id("fs-any")
permit (principal, action, resource);

@id("writes-per-hour")
@message("at most 20 writes per session per hour")
forbid (principal, action == Action::"mcp.fs:write_file", resource)
when { context.session.window["1h"].calls["mcp.fs:write_file"] >= 20 };

@id("writes-per-caller-per-day")
forbid (principal, action == Action::"mcp.fs:write_file", resource)
when { context.session.principal.window["1d"].calls["mcp.fs:write_file"] >= 100 };

@id("reads-per-session")
forbid (principal, action == Action::"mcp.fs:read_file", resource)
when { context.session.calls["mcp.fs:read_file"] >= 1000 };
`

func counterConfig(t *testing.T, policies string, windows ...string) string {
	t.Helper()
	b, err := json.Marshal(gate.Config{Policies: []gatePolicy{{File: "rate.cedar", Text: policies}}, Windows: windows})
	require.NoError(t, err)
	return string(b)
}

func counts(writesHour, writesDay, reads int64) *abi.CountersGetAnswer {
	w := func(n int64) abi.CounterWindow {
		return abi.CounterWindow{Calls: map[string]int64{writeFile.ID: n, readFile.ID: 0}}
	}
	return &abi.CountersGetAnswer{Session: "s1",
		Calls:     map[string]int64{writeFile.ID: writesDay, readFile.ID: reads},
		Windows:   map[string]abi.CounterWindow{"1h": w(writesHour), "1d": w(writesDay)},
		Principal: map[string]abi.CounterWindow{"1h": w(writesHour), "1d": w(writesDay)}}
}

func counterHost(c *abi.CountersGetAnswer) *gatetest.Host {
	h := gatetest.NewHost(writeFile, readFile)
	h.Granted = append(h.Granted, abi.CapabilityCounters)
	h.Counts = c
	return h
}

const aWrite = `{"path":"/srv/a","content":"x"}`

func TestGateRateLimit(t *testing.T) {
	cfg := counterConfig(t, rateLimit, "1h", "24h")
	r := evaluate(t, counterHost(counts(19, 19, 0)), cfg, "write_file", aWrite, nil)
	assert.Equal(t, abi.Accepted, r.Verdict, "%+v", r)

	r = evaluate(t, counterHost(counts(20, 20, 0)), cfg, "write_file", aWrite, nil)
	assert.Equal(t, abi.Rejected, r.Verdict, "%+v", r)
	require.NotEmpty(t, r.Findings)
	assert.Equal(t, "policy_forbid", r.Findings[0].Code)
	assert.Equal(t, "at most 20 writes per session per hour", r.Findings[0].Message)

	r = evaluate(t, counterHost(counts(3, 100, 0)), cfg, "write_file", aWrite, nil)
	assert.Equal(t, abi.Rejected, r.Verdict, "the principal's day: %+v", r)
	assert.Equal(t, []any{"writes-per-caller-per-day"}, r.Evidence["policies"])

	r = evaluate(t, counterHost(counts(20, 20, 999)), cfg, "read_file", `{"path":"/srv/a"}`, nil)
	assert.Equal(t, abi.Accepted, r.Verdict, "another tool's count: %+v", r)
	r = evaluate(t, counterHost(counts(0, 0, 1000)), cfg, "read_file", `{"path":"/srv/a"}`, nil)
	assert.Equal(t, abi.Rejected, r.Verdict, "the session's total: %+v", r)
}

// Counters unavailable never accept a call whose policies name
// context.session: not granted, the store failed, a window the host does
// not count.
func TestGateCountersFailClosed(t *testing.T) {
	cfg := counterConfig(t, rateLimit, "1h", "1d")
	notGranted := gatetest.NewHost(writeFile, readFile)
	failing := counterHost(nil)
	failing.Operations = map[string]gatetest.Operation{abi.OpCountersGet: func([]byte) (any, error) {
		return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: "counters store unavailable"}
	}}
	noWindow := counterHost(counts(0, 0, 0))
	delete(noWindow.Counts.Windows, "1d")
	for name, h := range map[string]*gatetest.Host{"not granted": notGranted, "store failed": failing, "window not counted": noWindow} {
		t.Run(name, func(t *testing.T) {
			r := evaluate(t, h, cfg, "write_file", aWrite, nil)
			assert.Equal(t, abi.Inconclusive, r.Verdict, "%+v", r)
			assert.Equal(t, "counters_unavailable", r.Reason)
		})
	}
	// A set that does not name the session is decided without counters.
	r := evaluate(t, notGranted, counterConfig(t, `permit (principal, action, resource);`), "write_file", aWrite, nil)
	assert.Equal(t, abi.Accepted, r.Verdict, "%+v", r)
}

func TestGateBadWindow(t *testing.T) {
	r := evaluate(t, counterHost(nil), counterConfig(t, rateLimit, "90 minutes"), "write_file", aWrite, nil)
	assert.Equal(t, abi.Inconclusive, r.Verdict)
	assert.Equal(t, abi.ReasonBadConfig, r.Reason)
}
