package abi_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

func TestParseToolID(t *testing.T) {
	tests := []struct {
		id      string
		ns, raw string
		part    string // "" when valid; else the ToolIDError's Part
	}{
		{id: "builtin:read", ns: "builtin", raw: "read"},
		{id: "unknown:.52ead", ns: "unknown", raw: "Read"},
		{id: "mcp.github:get_me", ns: "mcp.github", raw: "get_me"},
		{id: "ext.srv:files.2eread", ns: "ext.srv", raw: "files.read"},
		{id: "plugin.a.b:a.3ab", ns: "plugin.a.b", raw: "a:b"},
		{id: "unknown:h.c3.a9llo", ns: "unknown", raw: "héllo"},
		{id: "mcp.x:a.3ab:c", part: "name segment"}, // a second colon is no segment byte
		{id: "builtin", part: "id"},
		{id: "", part: "id"},
		{id: ":x", part: "id"},
		{id: "nope:x", part: "id"},
		{id: "mcp.:x", part: "id"},
		{id: "mcp:x", part: "id"},
		{id: "MCP.x:y", part: "id"},
		{id: "mcp.Git:y", part: "id"},
		{id: "builtin:", part: "name segment"},
		{id: "builtin:A", part: "name segment"},
		{id: "builtin:.2E", part: "name segment"},
		{id: "builtin:.61", part: "name segment"},
		{id: "builtin:.2", part: "name segment"},
		{id: "builtin:.", part: "name segment"},
		{id: "builtin:a.zz", part: "name segment"},
		{id: "builtin:a b", part: "name segment"},
		{id: "builtin:.ff", part: "name segment"}, // decodes to invalid UTF-8
		{id: "builtin:" + strings.Repeat("a", abi.MaxToolNameBytes+1), part: "name segment"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			ns, raw, err := abi.ParseToolID(tt.id)
			if tt.part == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.ns, ns)
				assert.Equal(t, tt.raw, raw)
				id, err := abi.MakeToolID(ns, raw)
				require.NoError(t, err)
				assert.Equal(t, tt.id, id, "MakeToolID inverts ParseToolID")
				assert.True(t, abi.IsToolIDShaped(tt.id))
				return
			}
			require.ErrorIs(t, err, abi.ErrToolID)
			var te *abi.ToolIDError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.part, te.Part)
			assert.NotEmpty(t, te.Reason)
			assert.Empty(t, ns)
			assert.Empty(t, raw)
		})
	}
}

func TestMakeToolIDErrors(t *testing.T) {
	tests := []struct {
		ns, raw string
		kind    error
		part    string
	}{
		{"builtin", "", abi.ErrToolName, "name"},
		{"builtin", strings.Repeat("a", abi.MaxToolNameBytes+1), abi.ErrToolName, "name"},
		{"builtin", "a\xffb", abi.ErrToolName, "name"},
		{"", "x", abi.ErrToolID, "namespace"},
		{"foo", "x", abi.ErrToolID, "namespace"},
		{"ext.a:b", "x", abi.ErrToolID, "namespace"},
		{"plugin.", "x", abi.ErrToolID, "namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.ns+"/"+tt.raw, func(t *testing.T) {
			_, err := abi.MakeToolID(tt.ns, tt.raw)
			require.ErrorIs(t, err, tt.kind)
			var te *abi.ToolIDError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tt.part, te.Part)
			assert.Equal(t, tt.part+": "+te.Reason, err.Error())
		})
	}
	_, err := abi.MakeToolID("builtin", strings.Repeat("a", abi.MaxToolNameBytes))
	assert.NoError(t, err, "MaxToolNameBytes itself is allowed")
}

func TestIsToolIDShaped(t *testing.T) {
	for s, want := range map[string]bool{
		"builtin:read":    true,
		"mcp.gh:a.zz":     true, // shaped like an id, though not canonical
		"plugin.p:x":      true,
		"read":            false,
		"Builtin:read":    false,
		"mcp.gh:":         false,
		"mcp.gh:Get":      false,
		"other.gh:x":      false,
		"unknown:x y":     false,
		"ext.:x":          false,
		"unknown:x:y":     false,
		"builtin:read\n":  false,
		"builtin :read":   false,
		"\u00e9xt.a:read": false,
	} {
		assert.Equal(t, want, abi.IsToolIDShaped(s), "%q", s)
	}
}

func TestParseProvenance(t *testing.T) {
	tests := []struct {
		p, kind, origin, ns string
		ok                  bool
	}{
		{"builtin_runtime", abi.ProvenanceBuiltin, "", "", true},
		{"unverified", abi.ProvenanceUnverified, "", "", true},
		{"mcp_config{github}", abi.ProvenanceMCPConfig, "github", "mcp.github", true},
		{"extension_manifest{a.b-c_1}", abi.ProvenanceExtensionManifest, "a.b-c_1", "ext.a.b-c_1", true},
		{"plugin_config{p}", abi.ProvenancePluginConfig, "p", "plugin.p", true},
		{"", "", "", "", false},
		{"mcp_config{}", "", "", "", false},
		{"mcp_config{GitHub}", "", "", "", false},
		{"mcp_config{a}x", "", "", "", false},
		{"mcp_config{a", "", "", "", false},
		{"other{a}", "", "", "", false},
		{"builtin_runtime{x}", "", "", "", false},
		{"unverified{x}", "", "", "", false},
		{"mcp_config{a}}", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.p, func(t *testing.T) {
			kind, origin, err := abi.ParseProvenance(tt.p)
			if !tt.ok {
				require.ErrorIs(t, err, abi.ErrToolID)
				var te *abi.ToolIDError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, "provenance", te.Part)
				assert.Empty(t, kind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.kind, kind)
			assert.Equal(t, tt.origin, origin)
			assert.Equal(t, tt.ns, abi.ProvenanceNamespace(kind, origin))
		})
	}
}

// FuzzParseToolID: ParseToolID decodes untrusted strings. It never panics;
// what it accepts is shaped like an id, decodes to a name MakeToolID takes,
// and MakeToolID gives the same id back; what it refuses is a
// *ToolIDError of kind ErrToolID.
func FuzzParseToolID(f *testing.F) {
	for _, s := range []string{"builtin:read", "unknown:.52ead", "mcp.gh:a.3ab", "builtin:.ff", "builtin:.2", "x", ":", "mcp.:x", "plugin.a:.c3.a9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		ns, raw, err := abi.ParseToolID(id)
		if err != nil {
			var te *abi.ToolIDError
			if !errors.As(err, &te) || !errors.Is(err, abi.ErrToolID) {
				t.Fatalf("%q: error %v is not a *ToolIDError of ErrToolID", id, err)
			}
			return
		}
		if !abi.IsToolIDShaped(id) || !abi.ValidNamespace(ns) || !utf8.ValidString(raw) || raw == "" || len(raw) > abi.MaxToolNameBytes {
			t.Fatalf("%q accepted as (%q, %q)", id, ns, raw)
		}
		back, err := abi.MakeToolID(ns, raw)
		if err != nil || back != id {
			t.Fatalf("%q → (%q, %q) → %q, %v", id, ns, raw, back, err)
		}
	})
}
