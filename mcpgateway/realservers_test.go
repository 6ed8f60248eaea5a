package mcpgateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
	"github.com/gatehost/gatehost/host/eventlog"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
	"github.com/gatehost/gatehost/mcpgateway"
)

// nodeServer is the path of an MCP server installed from
// testdata/mcp/package-lock.json. Missing servers fail the test (they are
// part of what is tested), except under -short.
func nodeServer(t *testing.T, bin string) string {
	t.Helper()
	root, err := testwasm.Root()
	require.NoError(t, err)
	p := filepath.Join(root, "testdata", "mcp", "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		if testing.Short() {
			t.Skipf("%s not installed (-short)", bin)
		}
		t.Fatalf("%s is not installed: run make mcp-deps (npm ci --prefix testdata/mcp)", p)
	}
	return p
}

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := testwasm.Root()
	require.NoError(t, err)
	return filepath.Join(root, rel)
}

// fsDomain is testdata/mcp/fs-domain.yaml: writes under root's public/
// only; root "" leaves its var unbound.
func fsDomain(t *testing.T, root string) map[string]host.Domain {
	t.Helper()
	cat, err := domain.Load(repoFile(t, "testdata/mcp/fs-domain.yaml"))
	require.NoError(t, err)
	if root != "" {
		cat, err = cat.Bind(map[string]string{"root": root})
		require.NoError(t, err)
	}
	src, err := datasource.OpenDocuments(repoFile(t, "testdata/mcp/empty-db.json"))
	require.NoError(t, err)
	return map[string]host.Domain{"fs": {Catalog: cat, Source: src}}
}

func approveAll(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
}

// TestFilesystemServer: @modelcontextprotocol/server-filesystem behind the
// gateway, with the exec gate (edits and moves need a person's
// confirmation) and the fs domain's write guards. The disk is checked
// after each call.
func TestFilesystemServer(t *testing.T) {
	bin := nodeServer(t, "mcp-server-filesystem")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "public"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "private"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk"), 0o644))

	f := newFixtureWith(t, []byte(`{"confirm_effects":[],"confirm_tools":["mcp.fs:edit_file","mcp.fs:move_file"]}`),
		[]host.StageConfig{{Plugin: "preconditions", Capabilities: []string{"query"}, Config: []byte(`{"domain":"fs"}`)}}, fsDomain(t, dir))
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "fs", Command: []string{bin, dir}}}, ActivateOnList: []string{"*"}})

	approve := false
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if approve {
			return approveAll(ctx, r)
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	lr, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, lr.Tools)

	r := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(dir, "hello.txt")})
	assert.False(t, r.IsError, text(r))
	assert.Contains(t, text(r), "hello from disk")

	pub := filepath.Join(dir, "public", "a.txt")
	w := call(t, cs, "write_file", map[string]any{"path": pub, "content": "v1"})
	assert.False(t, w.IsError, text(w))
	b, err := os.ReadFile(pub)
	require.NoError(t, err)
	assert.Equal(t, "v1", string(b))

	for _, p := range []string{filepath.Join(dir, "private", "b.txt"), filepath.Join(dir, "public", "..", "private", "c.txt"), filepath.Join(dir, "d.txt")} {
		w = call(t, cs, "write_file", map[string]any{"path": p, "content": "nope"})
		assert.True(t, w.IsError, p)
		assert.Equal(t, []string{"precondition_failed"}, findingCodes(t, w), p)
		// write_file declares an output schema, which clients check
		// error results against too: the Decision is in _meta only.
		assert.Nil(t, w.StructuredContent, p)
		assert.NoFileExists(t, filepath.Clean(p), "nothing was written")
	}

	edit := map[string]any{"path": pub, "edits": []map[string]any{{"oldText": "v1", "newText": "v2"}}}
	e := call(t, cs, "edit_file", edit)
	assert.True(t, e.IsError)
	assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, e))
	b, _ = os.ReadFile(pub)
	assert.Equal(t, "v1", string(b), "the declined edit was not sent")

	approve = true
	e = call(t, cs, "edit_file", edit)
	assert.False(t, e.IsError, text(e))
	b, _ = os.ReadFile(pub)
	assert.Equal(t, "v2", string(b), "the approved edit ran")

	_, err = eventlog.Verify(f.logPath)
	assert.NoError(t, err)
}

// TestFilesystemServerPublicOnly: the fs domain keeps writes under the
// served directory's own public/, however a path is spelled: a public/
// made elsewhere, a served directory that itself lies under a directory
// named public, ".." and "." segments. Nothing denied reaches the disk.
// Without the root bound, writes are denied.
func TestFilesystemServerPublicOnly(t *testing.T) {
	bin := nodeServer(t, "mcp-server-filesystem")
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dir := filepath.Join(tmp, "public", "site") // the served tree under a directory named public
	for _, d := range []string{"public", "private/site/public"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	stages := []host.StageConfig{{Plugin: "preconditions", Capabilities: []string{"query"}, Config: []byte(`{"domain":"fs"}`)}}
	exec := []byte(`{"confirm_effects":[]}`)
	f := newFixtureWith(t, exec, stages, fsDomain(t, dir))
	cs := connect(t, f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "fs", Command: []string{bin, dir}}}, ActivateOnList: []string{"*"}}), nil)
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	denied := func(tool string, args map[string]any) {
		t.Helper()
		r := call(t, cs, tool, args)
		assert.True(t, r.IsError, "%s %v: %s", tool, args, text(r))
		assert.Equal(t, []string{"precondition_failed"}, findingCodes(t, r), "%s %v", tool, args)
	}
	denied("create_directory", map[string]any{"path": filepath.Join(dir, "private", "public") + "/"})
	assert.NoDirExists(t, filepath.Join(dir, "private", "public"))
	denied("write_file", map[string]any{"path": filepath.Join(dir, "private", "public", "x.txt"), "content": "x"})
	denied("write_file", map[string]any{"path": filepath.Join(dir, "private", "site", "public", "z.txt"), "content": "x"})
	denied("write_file", map[string]any{"path": filepath.Join(dir, "private", "x"), "content": "x"})
	denied("write_file", map[string]any{"path": dir + "/public/../private/y", "content": "x"})
	denied("write_file", map[string]any{"path": dir + "licity/x", "content": "x"})
	denied("write_file", map[string]any{"path": "public/x", "content": "x"})

	pub := filepath.Join(dir, "public", "x.txt")
	w := call(t, cs, "write_file", map[string]any{"path": pub, "content": "ok"})
	require.False(t, w.IsError, text(w))
	w = call(t, cs, "write_file", map[string]any{"path": dir + "//private/.././public/./y.txt", "content": "ok"})
	require.False(t, w.IsError, text(w))
	assert.FileExists(t, filepath.Join(dir, "public", "y.txt"))
	c := call(t, cs, "create_directory", map[string]any{"path": filepath.Join(dir, "public", "sub") + "/"})
	require.False(t, c.IsError, text(c))
	denied("move_file", map[string]any{"source": pub, "destination": filepath.Join(dir, "private", "x.txt")})
	denied("move_file", map[string]any{"source": filepath.Join(dir, "private", "site"), "destination": filepath.Join(dir, "public", "site")})
	m := call(t, cs, "move_file", map[string]any{"source": pub, "destination": filepath.Join(dir, "public", "sub", "x.txt")})
	require.False(t, m.IsError, text(m))

	var outside []string
	require.NoError(t, filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if rel, _ := filepath.Rel(filepath.Join(dir, "public"), p); rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == "../" {
				outside = append(outside, p)
			}
		}
		return err
	}))
	assert.Empty(t, outside, "files written outside the served tree's public/")

	// Without the root, the fs writes cannot be evaluated: denied.
	f2 := newFixtureWith(t, exec, stages, fsDomain(t, ""))
	cs2 := connect(t, f2.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "fs", Command: []string{bin, dir}}}, ActivateOnList: []string{"*"}}), nil)
	_, err = cs2.ListTools(context.Background(), nil)
	require.NoError(t, err)
	r := call(t, cs2, "write_file", map[string]any{"path": filepath.Join(dir, "public", "z.txt"), "content": "x"})
	assert.True(t, r.IsError, text(r))
	assert.Equal(t, []string{"precondition_unevaluable"}, findingCodes(t, r))
	assert.NoFileExists(t, filepath.Join(dir, "public", "z.txt"))
}

// TestMemoryServer: @modelcontextprotocol/server-memory behind the gateway;
// creating entities passes, deleting them needs a person's confirmation.
func TestMemoryServer(t *testing.T) {
	bin := nodeServer(t, "mcp-server-memory")
	f := newFixtureWith(t, []byte(`{"confirm_effects":[],"confirm_tools":["mcp.memory:delete_entities","mcp.memory:delete_relations"]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "memory", Command: []string{bin},
		Env: []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}}}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	c := call(t, cs, "create_entities", map[string]any{"entities": []map[string]any{{"name": "alice", "entityType": "person", "observations": []string{"likes tea"}}}})
	require.False(t, c.IsError, text(c))

	d := call(t, cs, "delete_entities", map[string]any{"entityNames": []string{"alice"}})
	assert.True(t, d.IsError)
	assert.Equal(t, []string{abi.CodeConfirmationRequired}, findingCodes(t, d))
	g2 := call(t, cs, "read_graph", map[string]any{})
	assert.False(t, g2.IsError, text(g2))
	assert.Contains(t, text(g2), "alice", "the entity is still there")
}

// TestCollisionNamespacing: two upstreams listing the same tool names get
// them as UPSTREAM.NAME, each routed to its own server; names that do not
// collide stay as they are.
func TestCollisionNamespacing(t *testing.T) {
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "left"), stdioUpstream(t, "right")}, ActivateOnList: []string{"*"}})
	cs := connect(t, g, nil)
	names := toolNames(t, cs)
	assert.Contains(t, names, "left.write_note")
	assert.Contains(t, names, "right.write_note")
	assert.NotContains(t, names, "write_note")

	require.False(t, call(t, cs, "left.write_note", map[string]any{"name": "a", "text": "L"}).IsError)
	assert.Equal(t, "note: L", text(call(t, cs, "left.read_note", map[string]any{"name": "a"})))
	assert.Equal(t, "note: ", text(call(t, cs, "right.read_note", map[string]any{"name": "a"})), "right is another server")
	assert.Equal(t, []string{"unknown_tool"}, findingCodes(t, call(t, cs, "write_note", map[string]any{"name": "a"})))

	// Other lists are merged; a request about one item goes to the one
	// upstream that lists it, and an item two upstreams list goes to
	// neither.
	res, err := cs.ListResources(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Resources, 4) // note://readme twice, note://left/only, note://right/only
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "note://readme"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than one upstream lists this item")
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "note://nobody-lists-this"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no upstream lists this item")

	// Without a collision a tool keeps its name.
	bin := nodeServer(t, "mcp-server-memory")
	g2 := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{stdioUpstream(t, "notes"), {Name: "memory", Command: []string{bin},
		Env: []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}}}, ActivateOnList: []string{"*"}})
	names = toolNames(t, connect(t, g2, nil))
	assert.Contains(t, names, "read_graph")
	assert.Contains(t, names, "read_note")
}
