package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// TestQueryAnswersKeptByDigest: the host names its domain catalogs'
// content in context.query_digest (abi/SPEC.md §7.12), only to a stage
// granted the query capability, and the preconditions gate's warm
// instance answers query.capability from what it kept under that digest,
// while every query.rows still goes to the host: rows read data, which
// the digest does not name.
func TestQueryAnswersKeptByDigest(t *testing.T) {
	r := newAdmissionRig(t)
	cfg := r.cfg
	cfg.PoolSize = 1 // one instance per gate, warm from run to run
	h := hosttest.New(t, cfg)
	var mu sync.Mutex
	calls := map[string]int{}
	digests := map[string]string{} // stage → its last request's query_digest
	host.OnHostCall(h, func(op string) {
		mu.Lock()
		calls[op]++
		mu.Unlock()
	})
	for _, plugin := range []string{"static-verify", "preconditions"} {
		host.OnRequest(h, plugin, func(b []byte) {
			var req abi.Request
			require.NoError(t, json.Unmarshal(b, &req))
			mu.Lock()
			digests[req.Stage] = req.Context.QueryDigest
			mu.Unlock()
		})
	}
	run := func() (capability, rows int) {
		mu.Lock()
		clear(calls)
		mu.Unlock()
		r.check(t, h)
		mu.Lock()
		defer mu.Unlock()
		return calls[abi.OpQueryCapability], calls[abi.OpQueryRows]
	}

	firstCaps, firstRows := run()
	require.Positive(t, firstCaps, "a cold instance asks the host")
	require.Positive(t, firstRows)
	mu.Lock()
	first := digests["preconditions"]
	assert.True(t, abi.IsQueryDigest(first), "preconditions is granted query: %q", first)
	assert.Empty(t, digests["static-verify"], "static-verify is not granted query")
	mu.Unlock()
	for i := range 2 {
		caps, rows := run()
		assert.Zero(t, caps, "run %d: a warm instance answers query.capability from what it kept", i+2)
		assert.Equal(t, firstRows, rows, "run %d: every query.rows is asked", i+2)
		mu.Lock()
		assert.Equal(t, first, digests["preconditions"], "run %d: the same domains have the same digest", i+2)
		mu.Unlock()
	}
}

// TestQueryDigestNamesTheCatalogs: two hosts have the same query digest
// exactly when their domains answer query.capability alike: a catalog
// loaded again gives the same digest; a changed message, a domain under
// another name, or another domain added gives another.
func TestQueryDigestNamesTheCatalogs(t *testing.T) {
	src := hosttest.ReadFile(t, "testdata/domains/github-bench/domain.yaml")
	parse := func(b []byte) *domain.Catalog {
		c, err := domain.Parse(b)
		require.NoError(t, err)
		return c
	}
	changed := bytes.Replace(src, []byte("The branch already exists; pick another name."), []byte("The branch already exists."), 1)
	require.NotEqual(t, src, changed)
	var db map[string]map[string]any
	require.NoError(t, json.Unmarshal(hosttest.ReadFile(t, "testdata/domains/github-bench/db.json"), &db))
	digest := func(domains map[string]*domain.Catalog) string {
		t.Helper()
		cfg := host.Config{Domains: map[string]host.Domain{}}
		for name, c := range domains {
			cfg.Domains[name] = host.Domain{Catalog: c, Source: hosttest.Docs(db)}
		}
		h, err := host.New(context.Background(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close(context.Background()) })
		return host.QueryDigest(h)
	}
	base := digest(map[string]*domain.Catalog{"github": parse(src)})
	require.True(t, abi.IsQueryDigest(base), base)
	assert.Equal(t, base, digest(map[string]*domain.Catalog{"github": parse(src)}), "the same catalog loaded again")
	for name, domains := range map[string]map[string]*domain.Catalog{
		"a changed message":    {"github": parse(changed)},
		"another domain name":  {"gh": parse(src)},
		"another domain added": {"github": parse(src), "other": parse(src)},
	} {
		assert.NotEqual(t, base, digest(domains), name)
	}
	assert.Empty(t, digest(nil), "no domains, no digest")
}
