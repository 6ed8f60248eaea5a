package host_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// schemaStore is a catalog whose schemas no other test has: a nonce in each
// makes their digests new to the process-wide compiled-schema cache.
func schemaStore(t *testing.T, schemas map[string]string) *catalog.Store {
	t.Helper()
	nonce := make([]byte, 8)
	_, err := rand.Read(nonce)
	require.NoError(t, err)
	var tools []catalog.Tool
	for name, s := range schemas {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m))
		m["$comment"] = hex.EncodeToString(nonce)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		tools = append(tools, catalog.Tool{ID: "ext.test:" + name, Name: name, InputSchema: b})
	}
	store, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return store
}

// Each schema is compiled once per digest by the host, however many runs,
// actions and pooled instances use it. Not parallel: the counter is the
// process's.
func TestSchemaCompiledOncePerDigestAcrossRuns(t *testing.T) {
	store := schemaStore(t, map[string]string{
		"a": `{"type":"object","properties":{"n":{"type":"integer"}}}`,
		"b": `{"type":"object","required":["s"]}`,
		"c": `{"type":"object","properties":{"n":{"type":"integer"}}}`, // a's schema, so a's digest
	})
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:   store,
		Pipelines: hosttest.OnePipeline("sv", "catalog", "schema"),
	})
	ok := []byte(`{"actions":[{"tool":"a","parameters":{"n":1}},{"tool":"b","parameters":{"s":1}},{"tool":"a","parameters":{"n":2}},{"tool":"c"}]}`)
	bad := []byte(`{"actions":[{"tool":"a","parameters":{"n":"x"}},{"tool":"b","parameters":{}}]}`)
	before := host.SchemaCompiles()
	for i := range 3 {
		d, err := h.Check(context.Background(), "p", ok, host.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, abi.Accepted, d.Verdict, "run %d: %+v", i, d)
		d, err = h.Check(context.Background(), "p", bad, host.RunOptions{})
		require.NoError(t, err)
		require.Equal(t, abi.Rejected, d.Verdict, "run %d", i)
		assert.Equal(t, int64(2), host.SchemaCompiles()-before, "run %d: two distinct digests", i)
	}
}

// A schema the host cannot compile is an error answer, and static-verify
// is then inconclusive: never accepted, never a finding against the agent.
func TestSchemaCompileErrorIsInconclusive(t *testing.T) {
	store := schemaStore(t, map[string]string{"t": `{"type":"objekt"}`})
	h := hosttest.New(t, host.Config{
		Plugins:   map[string]host.PluginConfig{"sv": {Path: staticVerifyWasm}},
		Catalog:   store,
		Pipelines: hosttest.OnePipeline("sv", "catalog", "schema"),
	})
	d, err := h.Check(context.Background(), "p", []byte(`{"actions":[{"tool":"t","parameters":{}}]}`), host.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, d.Verdict)
	require.Len(t, d.Stages, 1)
	assert.Equal(t, abi.Inconclusive, d.Stages[0].Verdict)
	assert.Empty(t, d.Stages[0].Findings)
}
