package gatee2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/counter"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

func policyWasm(t *testing.T) string {
	t.Helper()
	p, err := testwasm.Go("plugins/policy/wasm")
	require.NoError(t, err)
	return p
}

// TestPolicyRateLimit: the host counts the calls it accepts, a rejected
// call is not counted, and the RateLimitN+1th accepted call of a session
// is refused whichever of two hosts sharing the counts decides it; another
// session has its own count.
func TestPolicyRateLimit(t *testing.T) {
	wasm := policyWasm(t)
	shared := counter.NewMemStore(time.Hour)
	hosts := []*host.Host{hosttest.PolicyHost(t, wasm, shared, host.Config{}), hosttest.PolicyHost(t, wasm, shared, host.Config{})}

	calls := [][]byte{hosttest.Email("hi"), hosttest.Email("SPAM"), hosttest.Email("hi"), hosttest.Email("hi"), hosttest.Email("hi"), hosttest.Email("hi")}
	got := hosttest.Alternate(t, hosts, "s1", calls...)
	assert.Equal(t, []abi.Verdict{abi.Accepted, abi.Rejected, abi.Accepted, abi.Accepted, abi.Rejected, abi.Rejected}, got)
	assert.Equal(t, []abi.Verdict{abi.Accepted}, hosttest.Alternate(t, hosts[1:], "s2", hosttest.Email("hi")))
	assert.Equal(t, []abi.Verdict{abi.Accepted}, hosttest.Alternate(t, hosts, "s1",
		[]byte(`{"tool":"read_inbox","parameters":{}}`)), "another tool is not limited")

	c, err := shared.Counts(context.Background(), counter.Query{Session: "s1", Windows: []time.Duration{time.Hour}, Now: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"mcp.mail:send_email": hosttest.RateLimitN, "mcp.mail:read_inbox": 1}, c.Session, "rejected calls are not counted")
}

type failingCounters struct {
	counter.Store
	countsErr, addErr error
}

func (f failingCounters) Counts(ctx context.Context, q counter.Query) (counter.Counts, error) {
	if f.countsErr != nil {
		return counter.Counts{}, f.countsErr
	}
	return f.Store.Counts(ctx, q)
}

func (f failingCounters) Add(ctx context.Context, c counter.Call) error {
	if f.addErr != nil {
		return f.addErr
	}
	return f.Store.Add(ctx, c)
}

// TestPolicyCountersFailClosed: counts that cannot be read make a call
// whose policies name context.session inconclusive; a call that cannot be
// counted is not accepted.
func TestPolicyCountersFailClosed(t *testing.T) {
	wasm := policyWasm(t)
	down := fmt.Errorf("%w: dial tcp 10.0.0.1:5432: refused", counter.ErrStore)

	h := hosttest.PolicyHost(t, wasm, failingCounters{Store: counter.NewMemStore(time.Hour), countsErr: down}, host.Config{})
	d, err := h.Check(context.Background(), "p", hosttest.Email("hi"), host.RunOptions{Session: "s1"})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	require.Len(t, d.Stages, 1)
	assert.Equal(t, "counters_unavailable", d.Stages[0].Reason)
	assert.NotContains(t, fmt.Sprint(d), "10.0.0.1", "the store's error stays in the host's log")

	mem := counter.NewMemStore(time.Hour)
	h = hosttest.PolicyHost(t, wasm, failingCounters{Store: mem, addErr: down}, host.Config{})
	d, err = h.Check(context.Background(), "p", hosttest.Email("hi"), host.RunOptions{Session: "s1"})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, d.Stages[0].Verdict, "the gate accepted")
	assert.Equal(t, abi.Inconclusive, d.Verdict, "the host could not count it")
	require.NotEmpty(t, d.Findings)
	assert.Equal(t, host.CodeCountersUnavailable, d.Findings[len(d.Findings)-1].Code)
	assert.True(t, errors.Is(down, counter.ErrStore))
}
