package mcpgateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway"
)

// TestSessionsInTheStore: each MCP session is one gatehost session in the
// host's store, readable by another process (`gatehost session show`
// reads the same file) while it lasts, with its core pins and the grants
// its listing made; it is removed when the gateway closes it.
func TestSessionsInTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.json")
	f := newFixtureWith(t, confirmNonIdempotent, nil, nil, func(c *host.Config) { c.Sessions = session.NewFileStore(path) })
	g, err := mcpgateway.New(context.Background(), f.cfg, mcpgateway.Options{Pipeline: "exec", Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		CoreTools: []string{"read_note"}, ActivateOnList: []string{"write_note"}})
	require.NoError(t, err)
	cs := connect(t, g, nil)
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	other := session.NewFileStore(path)
	ids, err := other.IDs(context.Background())
	require.NoError(t, err)
	require.Len(t, ids, 1)
	assert.True(t, strings.HasPrefix(ids[0], "mcp-"))
	set, err := other.Load(context.Background(), ids[0])
	require.NoError(t, err)
	assert.Contains(t, set.Core, "mcp.notes:read_note")
	assert.Contains(t, set.Activated, "mcp.notes:write_note")
	assert.NotContains(t, set.Activated, "mcp.notes:delete_note", "only the listed names are activated")

	require.NoError(t, g.Close())
	ids, err = other.IDs(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ids)
}

// TestListSessionToolsOnly: with ListSessionToolsOnly, tools/list shows
// only what the session holds after activation.
func TestListSessionToolsOnly(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")},
		CoreTools: []string{"read_note"}, ActivateOnList: []string{"write_note"}, ListSessionToolsOnly: true})
	names := toolNames(t, connect(t, g, nil))
	assert.ElementsMatch(t, []string{"read_note", "write_note"}, names)
}

// TestCoreStar: core "*" pins every tool listed at session start, so a
// client may call without listing first; a drift still denies.
func TestCoreStar(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes")}, CoreTools: []string{"*"}})
	opts, changed := listChanged()
	cs := connect(t, g, opts)
	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "x"})
	assert.False(t, w.IsError, text(w))
	require.False(t, call(t, cs, "rug_pull", map[string]any{"mode": "annotations"}).IsError)
	<-changed
	assert.Equal(t, []string{"tool_drifted"}, findingCodes(t, call(t, cs, "write_note", map[string]any{"name": "a"})))
}
