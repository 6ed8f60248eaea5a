package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
	"github.com/gatehost/gatehost/internal/testing/pgtest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// TestRateLimitAcrossReplicas: two hosts, each with its own connection to
// one database, decide the calls of one session in turn; the
// RateLimitN+1th send_email is refused whichever replica gets it, whether
// the count reached the limit on this replica or the other. A rejected
// call is not counted; with the database down no call is accepted.
func TestRateLimitAcrossReplicas(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	wasm, err := testwasm.Go("plugins/policy/wasm")
	require.NoError(t, err)
	t.Cleanup(testwasm.Cleanup)
	a, b := sessReplica(t, dsn, "replica-a"), sessReplica(t, dsn, "replica-b")
	hosts := []*host.Host{
		hosttest.PolicyHost(t, wasm, a.Counters(), host.Config{Sessions: a.Sessions()}),
		hosttest.PolicyHost(t, wasm, b.Counters(), host.Config{Sessions: b.Sessions()}),
	}
	e := hosttest.Email("hi")
	spam := hosttest.Email("SPAM")
	// Accepted on a, rejected (by another policy, so not counted) on b,
	// then a, b: RateLimitN accepted; the next is refused on either.
	got := hosttest.Alternate(t, hosts, "s1", e, spam, e, e, e)
	assert.Equal(t, []abi.Verdict{abi.Accepted, abi.Rejected, abi.Accepted, abi.Accepted, abi.Rejected}, got)
	got = hosttest.Alternate(t, hosts[1:], "s1", e)
	assert.Equal(t, []abi.Verdict{abi.Rejected}, got, "replica b refuses the limit a reached")
	got = hosttest.Alternate(t, []*host.Host{hosts[1], hosts[0]}, "s2", e, e, e, e)
	assert.Equal(t, []abi.Verdict{abi.Accepted, abi.Accepted, abi.Accepted, abi.Rejected}, got, "a session of its own, the limit reached on b")

	// The database down: the counts cannot be read, the call is
	// inconclusive on both replicas, never accepted.
	require.NoError(t, c.Stop())
	for i, h := range hosts {
		d, err := h.Check(context.Background(), "p", e, host.RunOptions{Session: "s3"})
		require.NoError(t, err)
		assert.Equal(t, abi.Inconclusive, d.Verdict, "replica %d", i)
	}
}
