package catalog_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

const catalogsDir = "../../testdata/catalogs"

func byName(tools []catalog.Tool) map[string]catalog.Tool {
	m := map[string]catalog.Tool{}
	for _, t := range tools {
		m[t.Name] = t
	}
	return m
}

func TestLoadGitHubSnapshots(t *testing.T) {
	tools, err := catalog.Load(githubDir, catalog.ImportOptions{Server: "github"})
	require.NoError(t, err)
	require.Len(t, tools, 117)

	counts := map[catalog.Effect]int{}
	for _, tl := range tools {
		counts[tl.Effect]++
		assert.Equal(t, "mcp_config{github}", tl.Provenance)
		assert.Equal(t, "github", tl.Source)
		assert.True(t, strings.HasPrefix(tl.ID, "mcp.github:"), tl.ID)
	}
	assert.Equal(t, map[catalog.Effect]int{
		catalog.EffectReadOnly: 58, // readOnlyHint true
		// The two tools with idempotentHint true give no destructiveHint,
		// whose default is true: destructive idempotent writes.
		catalog.EffectNonIdempotent: 59,
	}, counts)

	m := byName(tools)
	for name, want := range map[string]catalog.Effect{
		"get_me":                  catalog.EffectReadOnly,
		"get_job_logs":            catalog.EffectReadOnly, // no idempotentHint at all
		"create_issue":            catalog.EffectNonIdempotent,
		"delete_file":             catalog.EffectNonIdempotent, // destructive
		"merge_pull_request":      catalog.EffectNonIdempotent, // destructiveHint absent
		"assign_copilot_to_issue": catalog.EffectNonIdempotent, // idempotent, destructiveHint absent
	} {
		require.Contains(t, m, name)
		assert.Equal(t, want, m[name].Effect, name)
	}
	// Keyed on the tool's name, not the file name.
	for _, name := range []string{"find_duplicate", "issue_dependency_read", "issue_dependency_write"} {
		assert.Contains(t, m, name)
	}
	assert.Equal(t, "mcp.github:get_me", m["get_me"].ID)
	assert.Equal(t, "efddc7bd8bbcef73a14eb1ace1ffdaec81e518ef1e13c1e9271d0b8acb694a49", m["get_me"].SchemaDigest)

	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	assert.Equal(t, 117, s.Snapshot().Len())
	got, ok := s.Snapshot().Get("mcp.github:delete_file")
	require.True(t, ok)
	assert.Equal(t, "delete_file", got.Name)
}

func TestLoadWithoutServer(t *testing.T) {
	tools, err := catalog.Load(filepath.Join(githubDir, "get_me.json"), catalog.ImportOptions{})
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "unknown:get_me", tools[0].ID)
	assert.Equal(t, catalog.ProvenanceUnverified, tools[0].Provenance)
	assert.Empty(t, tools[0].Source)
	assert.Equal(t, catalog.EffectReadOnly, tools[0].Effect)
}

func TestLoadFormats(t *testing.T) {
	mcpEffects := map[string]catalog.Effect{
		"get_me":                  catalog.EffectReadOnly,
		"create_issue":            catalog.EffectNonIdempotent,
		"delete_file":             catalog.EffectNonIdempotent,
		"assign_copilot_to_issue": catalog.EffectNonIdempotent, // idempotent, destructiveHint absent
	}
	allNonIdempotent := map[string]catalog.Effect{}
	for n := range mcpEffects {
		allNonIdempotent[n] = catalog.EffectNonIdempotent
	}
	tests := []struct {
		file, format string
		effects      map[string]catalog.Effect
	}{
		{"mcp-tools-list.json", catalog.FormatMCP, mcpEffects},
		{"openai-tools.json", catalog.FormatOpenAI, allNonIdempotent},
		{"anthropic-tools.json", catalog.FormatAnthropic, allNonIdempotent},
		{"native-tools.json", catalog.FormatNative, mcpEffects},
	}
	reference, err := catalog.Load(githubDir, catalog.ImportOptions{Server: "github"})
	require.NoError(t, err)
	ref := byName(reference)
	for _, tt := range tests {
		for _, format := range []string{"", tt.format} {
			t.Run(tt.file+"/"+format, func(t *testing.T) {
				tools, err := catalog.Load(filepath.Join(catalogsDir, tt.file), catalog.ImportOptions{Format: format, Server: "github"})
				require.NoError(t, err)
				require.Len(t, tools, 4)
				assert.Equal(t, "get_me", tools[0].Name, "file order kept")
				for _, tl := range tools {
					assert.Equal(t, tt.effects[tl.Name], tl.Effect, tl.Name)
					assert.Equal(t, "mcp.github:"+tl.Name, tl.ID)
					assert.Equal(t, "mcp_config{github}", tl.Provenance)
					assert.Equal(t, "github", tl.Source)
					// Same schema as the snapshot, whatever the format.
					assert.Equal(t, ref[tl.Name].SchemaDigest, tl.SchemaDigest, tl.Name)
					assert.Equal(t, ref[tl.Name].Description, tl.Description)
				}
			})
		}
	}
	native, err := catalog.Load(filepath.Join(catalogsDir, "native-tools.json"), catalog.ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"github_get_me"}, native[0].Aliases)
	assert.Equal(t, "mcp.github:get_me", native[0].ID, "explicit id kept")
	assert.Equal(t, "mcp_config{github}", native[0].Provenance, "explicit provenance kept without Server")
}

func TestParseShapes(t *testing.T) {
	schema := `{"type":"object","properties":{"q":{"type":"string"}}}`
	tests := []struct {
		name, doc string
		effect    catalog.Effect
	}{
		{"mcp result", `{"tools":[{"name":"q","inputSchema":` + schema + `,"annotations":{"readOnlyHint":true}}]}`, catalog.EffectReadOnly},
		{"mcp result with cursor", `{"tools":[{"name":"q","inputSchema":` + schema + `}],"nextCursor":"abc"}`, catalog.EffectNonIdempotent},
		{"json-rpc response", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"q","inputSchema":` + schema + `,"annotations":{"idempotentHint":true,"destructiveHint":false}}]}}`, catalog.EffectIdempotentWrite},
		{"mcp single tool", `{"name":"q","inputSchema":` + schema + `,"annotations":{"readOnlyHint":false,"destructiveHint":false}}`, catalog.EffectNonIdempotent},
		{"mcp null annotations", `{"name":"q","inputSchema":` + schema + `,"annotations":null}`, catalog.EffectNonIdempotent},
		{"openai chat", `[{"type":"function","function":{"name":"q","description":"d","parameters":` + schema + `,"strict":true}}]`, catalog.EffectNonIdempotent},
		{"openai responses", `[{"type":"function","name":"q","description":"d","parameters":` + schema + `}]`, catalog.EffectNonIdempotent},
		{"anthropic", `[{"name":"q","description":"d","input_schema":` + schema + `}]`, catalog.EffectNonIdempotent},
		{"anthropic custom", `[{"type":"custom","name":"q","input_schema":` + schema + `,"cache_control":{"type":"ephemeral"}}]`, catalog.EffectNonIdempotent},
		{"native", `{"tools":[{"name":"q","input_schema":` + schema + `,"effect":"read_only"}]}`, catalog.EffectReadOnly},
	}
	want, err := catalog.Digest([]byte(schema))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := catalog.Parse([]byte(tt.doc), catalog.ImportOptions{})
			require.NoError(t, err)
			require.Len(t, tools, 1)
			assert.Equal(t, "unknown:q", tools[0].ID)
			assert.Equal(t, "q", tools[0].Name)
			assert.Equal(t, want, tools[0].SchemaDigest)
			assert.Equal(t, tt.effect, tools[0].Effect)
			assert.Equal(t, catalog.ProvenanceUnverified, tools[0].Provenance)
		})
	}
}

func TestParseMissingSchemaIsAnyObject(t *testing.T) {
	want, err := catalog.Digest([]byte(`{"type":"object"}`))
	require.NoError(t, err)
	for _, doc := range []string{
		`{"tools":[{"name":"q"}]}`,
		`[{"type":"function","function":{"name":"q"}}]`,
		`[{"name":"q"}]`,
		`{"tools":[{"name":"q","effect":"read_only"}]}`,
	} {
		tools, err := catalog.Parse([]byte(doc), catalog.ImportOptions{})
		require.NoError(t, err, doc)
		require.Len(t, tools, 1)
		assert.Equal(t, want, tools[0].SchemaDigest, doc)
		assert.JSONEq(t, `{"type":"object"}`, string(tools[0].InputSchema))
	}
	tools, err := catalog.Parse([]byte(`{"tools":[]}`), catalog.ImportOptions{})
	require.NoError(t, err)
	assert.Empty(t, tools)
}

func TestParseForcedFormatMismatch(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(catalogsDir, name))
		require.NoError(t, err)
		return data
	}
	single := read("github-mcp-server/get_me.json")
	tests := []struct {
		doc    []byte
		format string
	}{
		{read("openai-tools.json"), catalog.FormatAnthropic},
		{read("openai-tools.json"), catalog.FormatMCP},
		{read("openai-tools.json"), catalog.FormatNative},
		{read("anthropic-tools.json"), catalog.FormatOpenAI},
		{read("mcp-tools-list.json"), catalog.FormatNative},
		{read("mcp-tools-list.json"), catalog.FormatOpenAI},
		{read("native-tools.json"), catalog.FormatMCP},
		{single, catalog.FormatNative},
		{single, catalog.FormatAnthropic},
	}
	for _, tt := range tests {
		_, err := catalog.Parse(tt.doc, catalog.ImportOptions{Format: tt.format})
		require.ErrorIs(t, err, catalog.ErrFormat, "forced %s", tt.format)
		assert.Contains(t, err.Error(), tt.format)
	}
	_, err := catalog.Parse(single, catalog.ImportOptions{Format: "yaml"})
	assert.ErrorIs(t, err, catalog.ErrFormat)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		opts      catalog.ImportOptions
		want      error
		index     int
		tool      string
	}{
		{"not JSON", `tools: []`, catalog.ImportOptions{}, catalog.ErrInvalidJSON, -1, ""},
		{"truncated", `{"tools":[`, catalog.ImportOptions{}, catalog.ErrInvalidJSON, -1, ""},
		{"duplicate key", `{"tools":[{"name":"a","name":"b"}]}`, catalog.ImportOptions{}, catalog.ErrInvalidJSON, -1, ""},
		{"bad UTF-8", "{\"tools\":[{\"name\":\"a\xff\"}]}", catalog.ImportOptions{}, catalog.ErrInvalidJSON, -1, ""},
		{"scalar", `"tools"`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"unknown object", `{"functions":[]}`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"tools not array", `{"tools":{"name":"a"}}`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"tools null", `{"tools":null}`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"json-rpc error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"legacy functions", `[{"name":"a","parameters":{}}]`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"mixed keys", `{"tools":[{"name":"a","inputSchema":{},"input_schema":{}}]}`, catalog.ImportOptions{}, catalog.ErrFormat, -1, ""},
		{"anthropic server tool", `[{"type":"web_search_20250305","name":"web_search"}]`, catalog.ImportOptions{}, catalog.ErrFormat, 0, "web_search"},
		{"entry not object", `{"tools":[{"name":"a"},"b"]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 1, ""},
		{"schema string", `{"tools":[{"name":"a"},{"name":"b","inputSchema":"object"}]}`, catalog.ImportOptions{}, catalog.ErrInvalidSchema, 1, "b"},
		{"schema null", `{"tools":[{"name":"a","inputSchema":null}]}`, catalog.ImportOptions{}, catalog.ErrInvalidSchema, 0, "a"},
		{"openai schema array", `[{"type":"function","function":{"name":"a","parameters":[]}}]`, catalog.ImportOptions{}, catalog.ErrInvalidSchema, 0, "a"},
		{"anthropic schema number", `[{"name":"a","input_schema":1}]`, catalog.ImportOptions{}, catalog.ErrInvalidSchema, 0, "a"},
		{"duplicate names", `{"tools":[{"name":"a"},{"name":"b"},{"name":"a"}]}`, catalog.ImportOptions{}, catalog.ErrDuplicateID, 2, "a"},
		{"empty name", `{"tools":[{"name":"","inputSchema":{}}]}`, catalog.ImportOptions{}, catalog.ErrInvalidName, 0, ""},
		{"missing name", `[{"type":"function","function":{"description":"x"}}]`, catalog.ImportOptions{}, catalog.ErrInvalidName, 0, ""},
		{"name not string", `{"tools":[{"name":7,"inputSchema":{}}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, ""},
		{"hint not boolean", `{"tools":[{"name":"a","annotations":{"readOnlyHint":"true"}}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, "a"},
		{"annotations not object", `{"tools":[{"name":"a","annotations":true}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, "a"},
		{"function not object", `[{"type":"function","function":"a"}]`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, ""},
		{"native unknown key", `{"tools":[{"name":"a","input_schema":{},"efect":"read_only"}]}`, catalog.ImportOptions{Format: catalog.FormatNative}, catalog.ErrFormat, 0, "a"},
		{"native bad effect", `{"tools":[{"name":"a","effect":"safe"}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, "a"},
		{"native bad id", `{"tools":[{"id":"Tools:A","name":"a"}]}`, catalog.ImportOptions{}, catalog.ErrInvalidID, 0, "a"},
		{"native digest mismatch", `{"tools":[{"name":"a","input_schema":{"type":"object"},"schema_digest":"` + strings.Repeat("0", 64) + `"}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, "a"},
		{"native alias taken", `{"tools":[{"name":"a"},{"name":"b","aliases":["a"]}]}`, catalog.ImportOptions{}, catalog.ErrNameTaken, 1, "b"},
		{"native aliases not strings", `{"tools":[{"name":"a","aliases":[1]}]}`, catalog.ImportOptions{}, catalog.ErrInvalidTool, 0, "a"},
		{"bad server", `{"tools":[]}`, catalog.ImportOptions{Server: "Git Hub"}, catalog.ErrInvalidID, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := catalog.Parse([]byte(tt.doc), tt.opts)
			require.ErrorIs(t, err, tt.want)
			assert.Nil(t, tools)
			var e *catalog.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.index, e.Index)
			assert.Equal(t, tt.tool, e.Tool)
			if tt.index >= 0 {
				assert.Contains(t, err.Error(), fmt.Sprintf("tools[%d]", tt.index))
			}
		})
	}
	_, err := catalog.Parse(make([]byte, catalog.MaxFileBytes+1), catalog.ImportOptions{})
	assert.ErrorIs(t, err, catalog.ErrTooLarge)
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	a := write("a.json", `{"name":"same","inputSchema":{"type":"object"}}`)
	b := write("b.json", `{"tools":[{"name":"other"},{"name":"same"}]}`)
	write("notes.txt", "not a catalog")
	write(".hidden.json", "not JSON")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.json"), 0o755))

	_, err := catalog.Load(dir, catalog.ImportOptions{Server: "s"})
	require.ErrorIs(t, err, catalog.ErrDuplicateID)
	var e *catalog.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, b, e.File)
	assert.Equal(t, 1, e.Index)
	assert.Equal(t, "same", e.Tool)
	assert.Contains(t, err.Error(), a, "names where the first definition is")

	require.NoError(t, os.Remove(b))
	tools, err := catalog.Load(dir, catalog.ImportOptions{Server: "s"})
	require.NoError(t, err, "other files and hidden files are skipped")
	require.Len(t, tools, 1)

	bad := write("c.json", `[{"name":"x","input_schema":"nope"}]`)
	_, err = catalog.Load(dir, catalog.ImportOptions{})
	require.ErrorIs(t, err, catalog.ErrInvalidSchema)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bad, e.File)
	assert.Contains(t, err.Error(), bad)
	assert.Contains(t, err.Error(), `"x"`)

	_, err = catalog.Load(filepath.Join(dir, "missing.json"), catalog.ImportOptions{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorAs(t, err, &e)

	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, catalog.MaxFileBytes+1))
	_, err = catalog.Load(big, catalog.ImportOptions{})
	require.ErrorIs(t, err, catalog.ErrTooLarge)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, big, e.File)

	_, err = catalog.Load(dir, catalog.ImportOptions{})
	require.ErrorIs(t, err, catalog.ErrTooLarge, "a directory holding an oversized file")
}

func TestServerOptionAppliesToEveryFormat(t *testing.T) {
	tools, err := catalog.Parse([]byte(`[{"name":"Search Repos"}]`), catalog.ImportOptions{Server: "gh.enterprise"})
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "mcp.gh.enterprise:.53earch.20.52epos", tools[0].ID)
	assert.Equal(t, "mcp_config{gh.enterprise}", tools[0].Provenance)
	assert.Equal(t, "gh.enterprise", tools[0].Source)
	assert.Equal(t, "Search Repos", tools[0].Name)
}

var parseSentinels = []error{
	catalog.ErrInvalidJSON, catalog.ErrInvalidID, catalog.ErrInvalidName, catalog.ErrInvalidSchema,
	catalog.ErrInvalidTool, catalog.ErrDuplicateID, catalog.ErrNameTaken, catalog.ErrFormat, catalog.ErrTooLarge,
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"mcp-tools-list.json", "openai-tools.json", "anthropic-tools.json", "native-tools.json", "github-mcp-server/get_job_logs.json"} {
		if data, err := os.ReadFile(filepath.Join(catalogsDir, name)); err == nil {
			f.Add(data, "")
		}
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":true}}]}}`,
		`[{"type":"function","name":"a","parameters":{}}]`,
		`{"tools":[{"name":"a","aliases":["b"],"effect":"read_only"}]}`,
		`{"tools":[{"name":"a"},{"name":"a"}]}`,
		`{"name":"a","annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}}`,
		`{"name":"a","annotations":{"destructiveHint":false,"idempotentHint":true,"title":"t"}}`,
		`{"name":"a","annotations":{"readOnlyHint":null,"destructiveHint":"false"}}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(`[{"name":"a"}]`), catalog.FormatAnthropic)
	f.Fuzz(func(t *testing.T, data []byte, format string) {
		for _, opts := range []catalog.ImportOptions{{Format: format}, {Format: format, Server: "fuzz"}} {
			tools, err := catalog.Parse(data, opts)
			if err != nil {
				var e *catalog.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v is not a *catalog.Error", err)
				}
				known := false
				for _, s := range parseSentinels {
					known = known || errors.Is(err, s)
				}
				if !known {
					t.Fatalf("error %v wraps no sentinel", err)
				}
				continue
			}
			for _, tl := range tools {
				if _, _, err := catalog.ParseID(tl.ID); err != nil {
					t.Fatalf("bad id %q: %v", tl.ID, err)
				}
				d, err := catalog.Digest(tl.InputSchema)
				if err != nil || d != tl.SchemaDigest {
					t.Fatalf("digest of %q: %v", tl.ID, err)
				}
				if p, err := catalog.PolicyDigestOf(tl); err != nil || p != tl.PolicyDigest || len(p) != 64 {
					t.Fatalf("policy digest of %q: %q, want %q (%v)", tl.ID, tl.PolicyDigest, p, err)
				}
				if h := tl.Hints; h != nil {
					// An MCP tool's effect is exactly what its hints give,
					// and only a read-only hint makes it read_only.
					if tl.Effect != h.Effect() || (tl.Effect == catalog.EffectReadOnly) != h.ReadOnly {
						t.Fatalf("%q: effect %s from hints %+v", tl.ID, tl.Effect, *h)
					}
					if h.ReadOnly && (h.Destructive || !h.Idempotent) {
						t.Fatalf("%q: hints not normalised: %+v", tl.ID, *h)
					}
					if tl.Effect == catalog.EffectIdempotentWrite && h.Destructive {
						t.Fatalf("%q: a destructive tool classed idempotent_write", tl.ID)
					}
				}
			}
			if _, err := catalog.NewStore(tools...); err != nil {
				t.Fatalf("parsed tools do not form a store: %v", err)
			}
		}
	})
}
