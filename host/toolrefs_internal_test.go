package host

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/editdist"
)

func TestCollectRefs(t *testing.T) {
	tests := []struct {
		name, schema, config string
		want                 []ToolReference
	}{
		{
			name:   "array items",
			schema: `{"type":"object","properties":{"confirm":{"type":"array","items":{"type":"string","x-gatehost-ref":"tool-id"}},"other":{"type":"array","items":{"type":"string"}}}}`,
			config: `{"confirm":["a:x","a:y"],"other":["a:z"]}`,
			want:   []ToolReference{{Field: "c.confirm[0]", Name: "a:x", Kind: RefToolID}, {Field: "c.confirm[1]", Name: "a:y", Kind: RefToolID}},
		},
		{
			name:   "nested properties in array of objects",
			schema: `{"type":"object","properties":{"rules":{"type":"array","items":{"type":"object","properties":{"when":{"type":"object","properties":{"tool":{"type":"string","x-gatehost-ref":"tool"}}},"allow":{"type":"array","items":{"type":"string","x-gatehost-ref":"tool-id","x-gatehost-wildcard":"*"}}}}}}}`,
			config: `{"rules":[{"allow":["*","b:q"]},{"when":{"tool":"read"}}]}`,
			want: []ToolReference{
				{Field: "c.rules[0].allow[0]", Name: "*", Kind: RefToolID, Wildcard: true},
				{Field: "c.rules[0].allow[1]", Name: "b:q", Kind: RefToolID},
				{Field: "c.rules[1].when.tool", Name: "read", Kind: RefTool},
			},
		},
		{
			name:   "additionalProperties",
			schema: `{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":{"type":"object","properties":{"tool":{"type":"string","x-gatehost-ref":"tool"}}}}`,
			config: `{"n":1,"zeta":{"tool":"z"},"alpha":{"tool":"a"}}`,
			want:   []ToolReference{{Field: "c.alpha.tool", Name: "a", Kind: RefTool}, {Field: "c.zeta.tool", Name: "z", Kind: RefTool}},
		},
		{
			name:   "map values and a wildcard not declared",
			schema: `{"type":"object","additionalProperties":{"type":"string","x-gatehost-ref":"tool"}}`,
			config: `{"k":"*"}`,
			want:   []ToolReference{{Field: "c.k", Name: "*", Kind: RefTool}},
		},
		{
			name:   "local $ref and allOf, collected once",
			schema: `{"$defs":{"tools":{"type":"array","items":{"$ref":"#/$defs/tool"}},"tool":{"type":"string","x-gatehost-ref":"tool"}},"type":"object","allOf":[{"properties":{"t":{"$ref":"#/$defs/tools"}}}],"properties":{"t":{"$ref":"#/$defs/tools"}}}`,
			config: `{"t":["x"]}`,
			want:   []ToolReference{{Field: "c.t[0]", Name: "x", Kind: RefTool}},
		},
		{
			name:   "prefixItems",
			schema: `{"type":"array","prefixItems":[{"type":"string","x-gatehost-ref":"tool"},{"type":"string"}],"items":{"type":"string","x-gatehost-ref":"tool-id"}}`,
			config: `["p","q","r:s"]`,
			want:   []ToolReference{{Field: "c[0]", Name: "p", Kind: RefTool}, {Field: "c[2]", Name: "r:s", Kind: RefToolID}},
		},
		{
			name:   "domain",
			schema: `{"type":"object","properties":{"domain":{"type":"string","x-gatehost-ref":"domain"}}}`,
			config: `{"domain":"fs"}`,
			want:   []ToolReference{{Field: "c.domain", Name: "fs", Kind: RefDomain}},
		},
		{
			name:   "no annotations",
			schema: `{"type":"object"}`,
			config: `{"confirm":["a:x"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The validator takes the keywords as annotations.
			s, err := abischema.CompileConfigSchema([]byte(tt.schema))
			require.NoError(t, err)
			doc, err := abischema.Decode([]byte(tt.config))
			require.NoError(t, err)
			require.NoError(t, abischema.SafeValidate(s, doc))
			got, err := ConfigToolReferences("c", json.RawMessage(tt.schema), json.RawMessage(tt.config))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCheckRefAnnotations(t *testing.T) {
	tests := []struct{ name, schema, err string }{
		{"ok", `{"properties":{"a":{"type":"string","x-gatehost-ref":"tool"}}}`, ""},
		{"ok via $defs", `{"$defs":{"t":{"x-gatehost-ref":"tool-id","x-gatehost-wildcard":"*"}},"items":{"$ref":"#/$defs/t"}}`, ""},
		{"unknown kind", `{"properties":{"a":{"x-gatehost-ref":"tools"}}}`, `config_schema /properties/a: x-gatehost-ref must be one of`},
		{"not a string", `{"properties":{"a":{"x-gatehost-ref":true}}}`, `must be one of`},
		{"wildcard alone", `{"properties":{"a":{"x-gatehost-wildcard":"*"}}}`, `x-gatehost-wildcard without x-gatehost-ref`},
		{"empty wildcard", `{"properties":{"a":{"x-gatehost-ref":"tool","x-gatehost-wildcard":""}}}`, `must be a non-empty string`},
		{"domain wildcard", `{"properties":{"a":{"x-gatehost-ref":"domain","x-gatehost-wildcard":"*"}}}`, `takes no x-gatehost-wildcard`},
		{"below anyOf", `{"properties":{"a":{"anyOf":[{"x-gatehost-ref":"tool"},{"type":"null"}]}}}`, `config_schema /properties/a/anyOf/0: x-gatehost-ref is below a keyword the host does not follow`},
		{"unreferenced $defs", `{"$defs":{"t":{"x-gatehost-ref":"tool"}}}`, `config_schema /$defs/t: x-gatehost-ref is below`},
		{"ok via $ref to an escaped name", `{"$defs":{"a/b~c":{"x-gatehost-ref":"tool"}},"properties":{"x":{"$ref":"#/$defs/a~1b~0c"}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s any
			require.NoError(t, json.Unmarshal([]byte(tt.schema), &s))
			err := checkRefAnnotations(s)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.err)
		})
	}
}

func refsSnapshot(t *testing.T, tools ...catalog.Tool) *catalog.Snapshot {
	t.Helper()
	s, err := catalog.NewStore(tools...)
	require.NoError(t, err)
	return s.Snapshot()
}

func fsTools(ns string) []catalog.Tool {
	var out []catalog.Tool
	for _, n := range []string{"read_file", "edit_file", "move_file", "write_file"} {
		out = append(out, catalog.Tool{ID: ns + ":" + n, Name: n, Source: strings.TrimPrefix(ns, "mcp.")})
	}
	out[0].Aliases = []string{"cat"}
	return out
}

func TestCheckToolReferences(t *testing.T) {
	fs := refsSnapshot(t, fsTools("mcp.fs")...)
	filesystem := refsSnapshot(t, fsTools("mcp.filesystem")...)
	empty := refsSnapshot(t)
	id := func(f, n string) ToolReference { return ToolReference{Field: f, Name: n, Kind: RefToolID} }
	name := func(f, n string) ToolReference { return ToolReference{Field: f, Name: n, Kind: RefTool} }
	tests := []struct {
		name string
		refs []ToolReference
		snap *catalog.Snapshot
		want []UnmatchedTool // nil: no error
	}{
		{"all match", []ToolReference{id("a[0]", "mcp.fs:edit_file"), id("a[1]", "mcp.fs:move_file")}, fs, nil},
		{"typo", []ToolReference{id("a[0]", "mcp.fs:edit_file"), id("a[1]", "mcp.fs:move_fil")}, fs,
			[]UnmatchedTool{{Ref: id("a[1]", "mcp.fs:move_fil"), Suggestion: "mcp.fs:move_file"}}},
		{"wrong namespace", []ToolReference{id("a[0]", "mcp.fs:move_file")}, filesystem,
			[]UnmatchedTool{{Ref: id("a[0]", "mcp.fs:move_file"), Suggestion: "mcp.filesystem:move_file"}}},
		{"wire name where an id is wanted", []ToolReference{id("a[0]", "move_file")}, fs,
			[]UnmatchedTool{{Ref: id("a[0]", "move_file"), Suggestion: "mcp.fs:move_file"}}},
		{"alias where an id is wanted", []ToolReference{id("a[0]", "cat")}, fs,
			[]UnmatchedTool{{Ref: id("a[0]", "cat"), Suggestion: "mcp.fs:read_file"}}},
		{"wire name, alias and id where names are taken", []ToolReference{name("b[0]", "move_file"), name("b[1]", "cat"), name("b[2]", "mcp.fs:read_file")}, fs, nil},
		{"wire name typo", []ToolReference{name("b[0]", "mvoe_file")}, fs,
			[]UnmatchedTool{{Ref: name("b[0]", "mvoe_file"), Suggestion: "move_file"}}},
		{"alternatives", []ToolReference{{Field: "d", Name: "cap", Kind: RefTool, Alternatives: []string{"nope", "edit_file"}}}, fs, nil},
		{"wildcard", []ToolReference{{Field: "w", Name: "*", Kind: RefToolID, Wildcard: true}}, fs, nil},
		{"only a wildcard, empty catalog", []ToolReference{{Field: "w", Name: "*", Kind: RefTool, Wildcard: true}}, empty, nil},
		{"undeclared star", []ToolReference{id("a[0]", "*")}, fs, []UnmatchedTool{{Ref: id("a[0]", "*")}}},
		{"empty catalog", []ToolReference{id("a[0]", "mcp.fs:move_file")}, empty, []UnmatchedTool{{Ref: id("a[0]", "mcp.fs:move_file")}}},
		{"far from everything", []ToolReference{id("a[0]", "builtin:shell")}, fs, []UnmatchedTool{{Ref: id("a[0]", "builtin:shell")}}},
		{"several at once", []ToolReference{id("a[0]", "mcp.fs:edit_fil"), id("a[1]", "mcp.fs:read_file"), name("b[0]", "wrte_file")}, fs,
			[]UnmatchedTool{{Ref: id("a[0]", "mcp.fs:edit_fil"), Suggestion: "mcp.fs:edit_file"}, {Ref: name("b[0]", "wrte_file"), Suggestion: "write_file"}}},
		{"no references", nil, empty, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckToolReferences(tt.refs, tt.snap)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnmatchedTool)
			var ue *UnmatchedToolError
			require.True(t, errors.As(err, &ue))
			assert.Equal(t, tt.want, ue.Unmatched)
		})
	}
}

func TestUnmatchedToolMessage(t *testing.T) {
	snap := refsSnapshot(t, fsTools("mcp.fs")...)
	err := CheckToolReferences([]ToolReference{
		{Field: "pipelines.mcp-fs.stages[0].config.confirm_tools[1]", Name: "mcp.fs:move_fil", Kind: RefToolID},
	}, snap)
	assert.EqualError(t, err, `pipelines.mcp-fs.stages[0].config.confirm_tools[1]: "mcp.fs:move_fil" matches no tool; did you mean "mcp.fs:move_file"?`)

	err = CheckToolReferences([]ToolReference{
		{Field: "p.confirm_tools[0]", Name: "move_file", Kind: RefToolID},
		{Field: "domains.fs.capabilities.mov_file", Name: "mov_file", Kind: RefTool, Via: "pipelines.p.stages[1].config.domain", File: "fs.yaml"},
	}, snap)
	assert.EqualError(t, err, `2 tool references match no tool: `+
		`p.confirm_tools[0]: "move_file" matches no tool (the field takes canonical ids, namespace:name); did you mean "mcp.fs:move_file"?; `+
		`domains.fs.capabilities.mov_file (fs.yaml; the domain of pipelines.p.stages[1].config.domain): "mov_file" matches no tool; did you mean "move_file"?`)
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"move_file", "move_file", 0},
		{"move_fil", "move_file", 1},  // deletion
		{"mvoe_file", "move_file", 1}, // transposition
		{"move_filx", "move_file", 1}, // substitution
		{"kitten", "sitting", 3},      // Levenshtein's example
		{"ca", "abc", 3},              // optimal string alignment, not full Damerau
		{"naïve", "naive", 1},         // runes, not bytes
		{"mcp.fs:a", "mcp.filesystem:a", 8},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, editdist.OSA(tt.a, tt.b), "%q %q", tt.a, tt.b)
		assert.Equal(t, tt.want, editdist.OSA(tt.b, tt.a), "%q %q", tt.b, tt.a)
	}
}

func TestListReferences(t *testing.T) {
	got := ListReferences("mcp.sessions.core", []string{"read_file", "*"}, RefTool, "*")
	assert.Equal(t, []ToolReference{
		{Field: "mcp.sessions.core[0]", Name: "read_file", Kind: RefTool},
		{Field: "mcp.sessions.core[1]", Name: "*", Kind: RefTool, Wildcard: true},
	}, got)
}

// A module's config schema with one long member name over many nodes: the
// walks build no pointer but the one an error names, so the check costs
// memory linear in the document (one pointer per node cost the product of
// the name and the nodes: gigabytes for a descriptor under its 1 MiB cap).
func TestCheckRefAnnotationsOfALongName(t *testing.T) {
	const name, nodes = 64 << 10, 8000
	schema := func(key string) any {
		var s any
		doc := `{"properties":{"` + key + `":{"enum":[` + strings.TrimSuffix(strings.Repeat(`{"a":1},`, nodes), ",") + `]}}}`
		require.NoError(t, json.Unmarshal([]byte(doc), &s))
		return s
	}
	measure := func(s any) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		require.NoError(t, checkRefAnnotations(s))
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	short := measure(schema("k"))
	long := measure(schema(strings.Repeat("k", name)))
	assert.Less(t, long, short+16*name, "a %d-byte name allocated %d bytes, against %d under a one-byte name", name, long, short)
}
