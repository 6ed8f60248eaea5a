package baseline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
	"github.com/gatehost/gatehost/mcpgateway/baseline/baselinetest"
)

func TestFileFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	def := `{"name":"search","inputSchema":{"type":"object"},"description":"Find <things> & more","annotations":{"title":"Search","readOnlyHint":true}}`
	e, err := baseline.NewEntry("gh", "search", []byte(def), "alice@example.com", baselinetest.When)
	require.NoError(t, err)
	entries := []baseline.Entry{
		baselinetest.Entry(t, "zz", "a", "last", "bob"),
		e,
		baselinetest.Entry(t, "gh", "b", "second", "bob"),
	}
	// Written in two orders and two ways: the same bytes.
	p1, p2 := filepath.Join(dir, "one.json"), filepath.Join(dir, "two.json")
	_, err = openFile(t, p1).Approve(ctx, entries)
	require.NoError(t, err)
	f2 := openFile(t, p2)
	for i := len(entries) - 1; i >= 0; i-- {
		_, err = f2.AddIfAbsent(ctx, entries[i:i+1])
		require.NoError(t, err)
	}
	b1, err := os.ReadFile(p1)
	require.NoError(t, err)
	b2, err := os.ReadFile(p2)
	require.NoError(t, err)
	assert.Equal(t, string(b1), string(b2))

	want := `{
  "version": 1,
  "tools": [
    {
      "upstream": "gh",
      "tool": "b",
      "digest": "` + entries[2].Digest + `",
      "approved_by": "bob",
      "approved_at": "2026-01-02T03:04:05.123456Z",
      "definition": {
        "description": "second",
        "inputSchema": {
          "properties": {
            "q": {
              "type": "string"
            }
          },
          "type": "object"
        },
        "name": "b"
      }
    },
    {
      "upstream": "gh",
      "tool": "search",
      "digest": "` + e.Digest + `",
      "approved_by": "alice@example.com",
      "approved_at": "2026-01-02T03:04:05.123456Z",
      "definition": {
        "annotations": {
          "readOnlyHint": true,
          "title": "Search"
        },
        "description": "Find <things> & more",
        "inputSchema": {
          "type": "object"
        },
        "name": "search"
      }
    },
`
	assert.True(t, strings.HasPrefix(string(b1), want), "got:\n%s", b1)
	assert.True(t, strings.HasSuffix(string(b1), "  ]\n}\n"))

	// Only the file and its lock file are left in the directory.
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	assert.Equal(t, []string{"one.json", "one.json.lock", "two.json", "two.json.lock"}, got)

	// An empty baseline is written as such.
	_, err = openFile(t, p1).Remove(ctx, []baseline.Key{entries[0].Key(), e.Key(), entries[2].Key()})
	require.NoError(t, err)
	b1, err = os.ReadFile(p1)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"version\": 1,\n  \"tools\": []\n}\n", string(b1))
}

func TestFileLoadIsCached(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "baseline.json")
	a, b := openFile(t, path), openFile(t, path)
	_, err := a.Approve(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.NoError(t, err)
	s1, err := b.Load(ctx)
	require.NoError(t, err)
	s2, err := b.Load(ctx)
	require.NoError(t, err)
	assert.Same(t, s1, s2, "an unchanged file is not read again")
	_, err = a.Approve(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "a", "a2", "alice")})
	require.NoError(t, err)
	s3, err := b.Load(ctx)
	require.NoError(t, err)
	assert.NotSame(t, s2, s3)
	e, _ := s3.Get(baseline.Key{Upstream: "up", Tool: "a"})
	assert.Contains(t, string(e.Definition), "a2")
	// A writer that changes nothing does not rewrite the file.
	fi, err := os.Stat(path)
	require.NoError(t, err)
	_, err = a.AddIfAbsent(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "a", "a3", "alice")})
	require.NoError(t, err)
	fi2, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(fi, fi2))
}

func TestFileMalformed(t *testing.T) {
	ctx := context.Background()
	good := baselinetest.Entry(t, "up", "a", "a1", "alice")
	valid, err := baseline.NewSet([]baseline.Entry{good})
	require.NoError(t, err)
	validBytes, err := baseline.Marshal(valid)
	require.NoError(t, err)
	entry := func(fields string) string {
		return `{"version": 1, "tools": [` + "\n" + fields + "\n]}"
	}
	goodFields := `{"upstream": "up", "tool": "a", "digest": "` + good.Digest + `", "approved_by": "alice", "approved_at": "2026-01-02T03:04:05Z", "definition": ` + string(good.Definition) + `}`
	cases := []struct {
		name, content, want string
	}{
		{"empty file", "", "invalid JSON"},
		{"not JSON", "version = 1", "invalid JSON"},
		{"invalid UTF-8", "{\"version\": 1, \"tools\": [], \"x\": \"\xff\"}", "invalid JSON"},
		{"trailing data", `{"version": 1, "tools": []} {}`, "invalid JSON"},
		{"an array", `[]`, "not a baseline document"},
		{"duplicate member", `{"version": 1, "version": 1, "tools": []}`, "duplicate"},
		{"no version", `{"tools": []}`, "version: missing"},
		{"newer version", `{"version": 2, "tools": []}`, "version 2: this gatehost reads version 1"},
		{"unknown member", `{"version": 1, "tools": [], "extra": true}`, `unknown field "extra"`},
		{"tools not an array", `{"version": 1, "tools": {}}`, "tools: want an array"},
		{"entry member in another case", entry(strings.Replace(goodFields, `"tool"`, `"Tool"`, 1)), `line 2: tools[0]: unknown field "Tool"`},
		{"entry not an object", entry(`"up/a"`), "line 2: tools[0]"},
		{"digest mismatch", entry(strings.Replace(goodFields, "a1", "a2", 1)), `line 2: tools[0]: upstream "up", tool "a": digest ` + good.Digest + " does not match"},
		{"no definition", entry(strings.Replace(goodFields, `"definition"`, `"approved_by2"`, 1)), `unknown field "approved_by2"`},
		{"entry twice", entry(goodFields + ",\n" + goodFields), `line 3: tools[1]: upstream "up", tool "a" already at tools[0]`},
		{"bad time", entry(strings.Replace(goodFields, "2026-01-02T03:04:05Z", "yesterday", 1)), "approved_at"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "baseline.json")
			require.NoError(t, os.WriteFile(path, validBytes, 0o644))
			before := openFile(t, path)
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))

			_, err := baseline.OpenFile(path)
			require.ErrorIs(t, err, baseline.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), path)
			_, err = before.Load(ctx)
			require.ErrorIs(t, err, baseline.ErrInvalid, "a File that read the good file fails closed too")
			_, err = before.Approve(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "b", "b1", "alice")})
			require.ErrorIs(t, err, baseline.ErrInvalid)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.content, string(data), "a malformed file is not overwritten")
		})
	}
}

func TestFileOversize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(baseline.MaxFileBytes+1)) // sparse: no disk used
	require.NoError(t, f.Close())
	_, err = baseline.OpenFile(path)
	require.ErrorIs(t, err, baseline.ErrInvalid)
	assert.Contains(t, err.Error(), "67108865 bytes, more than the 67108864 allowed")
}

func TestFileMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	_, err := baseline.OpenFile(filepath.Join(dir, "baseline.json"))
	require.ErrorIs(t, err, baseline.ErrStore)
	assert.Contains(t, err.Error(), "directory")

	// A directory removed after the open fails every operation.
	require.NoError(t, os.Mkdir(dir, 0o755))
	f := openFile(t, filepath.Join(dir, "baseline.json"))
	require.NoError(t, os.Remove(dir))
	_, err = f.Load(context.Background())
	require.ErrorIs(t, err, baseline.ErrStore)
	_, err = f.Approve(context.Background(), []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.ErrorIs(t, err, baseline.ErrStore)
}

func TestFileMissingIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	f := openFile(t, path)
	ctx := context.Background()
	_, err := f.Approve(ctx, []baseline.Entry{baselinetest.Entry(t, "up", "a", "a1", "alice")})
	require.NoError(t, err)
	s, err := f.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.Len())
	require.NoError(t, os.Remove(path))
	s, err = f.Load(ctx)
	require.NoError(t, err)
	assert.Zero(t, s.Len())
}
