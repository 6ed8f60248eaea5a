package catalog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

// hintState is one way an MCP server can give a boolean hint.
type hintState struct {
	name string
	raw  string // JSON value; "" = key absent
}

var hintStates = []hintState{{"true", "true"}, {"false", "false"}, {"absent", ""}, {"null", "null"}}

// wantEffect is the MCP specification (2025-06-18, ToolAnnotations) read
// directly: readOnlyHint default false; destructiveHint default true and
// idempotentHint default false, both meaningful only when not read-only.
func wantEffect(ro, de, id hintState) catalog.Effect {
	if ro.raw == "true" {
		return catalog.EffectReadOnly
	}
	destructive := de.raw != "false" // true, absent and null mean true
	idempotent := id.raw == "true"
	if !destructive && idempotent {
		return catalog.EffectIdempotentWrite
	}
	return catalog.EffectNonIdempotent
}

func annotations(pairs ...string) string {
	var members []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			members = append(members, fmt.Sprintf("%q:%s", pairs[i], pairs[i+1]))
		}
	}
	return "{" + strings.Join(members, ",") + "}"
}

func parseMCP(t *testing.T, annotations string) (catalog.Tool, error) {
	t.Helper()
	doc := `{"name":"t","inputSchema":{"type":"object"}`
	if annotations != "" {
		doc += `,"annotations":` + annotations
	}
	tools, err := catalog.Parse([]byte(doc+"}"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "srv"})
	if err != nil {
		return catalog.Tool{}, err
	}
	require.Len(t, tools, 1)
	return tools[0], nil
}

// TestMCPEffectEveryHintCombination derives the effect of every
// combination of readOnlyHint, destructiveHint and idempotentHint (present
// true, present false, absent, null), and checks the hints kept.
func TestMCPEffectEveryHintCombination(t *testing.T) {
	for _, ro := range hintStates {
		for _, de := range hintStates {
			for _, id := range hintStates {
				for _, ow := range hintStates {
					ann := annotations("readOnlyHint", ro.raw, "destructiveHint", de.raw, "idempotentHint", id.raw, "openWorldHint", ow.raw)
					t.Run(ann, func(t *testing.T) {
						tl, err := parseMCP(t, ann)
						require.NoError(t, err)
						want := wantEffect(ro, de, id)
						assert.Equal(t, want, tl.Effect)
						require.NotNil(t, tl.Hints)
						h := *tl.Hints
						assert.Equal(t, ro.raw == "true", h.ReadOnly)
						assert.Equal(t, ow.raw != "false", h.OpenWorld, "openWorldHint defaults to true")
						if h.ReadOnly {
							assert.False(t, h.Destructive)
							assert.True(t, h.Idempotent)
						} else {
							assert.Equal(t, de.raw != "false", h.Destructive, "destructiveHint defaults to true")
							assert.Equal(t, id.raw == "true", h.Idempotent, "idempotentHint defaults to false")
						}
						assert.Equal(t, want, h.Effect())
					})
				}
			}
		}
	}
}

func TestMCPEffectWithoutAnnotations(t *testing.T) {
	for _, ann := range []string{"", "null", "{}", `{"title":"Delete everything"}`,
		// Keys are exact: a differently cased or misspelt hint is absent.
		`{"ReadOnlyHint":true}`, `{"readonlyHint":true}`, `{"read_only_hint":true}`, `{"destructiveHint ":false,"IdempotentHint":true}`} {
		t.Run(ann, func(t *testing.T) {
			tl, err := parseMCP(t, ann)
			require.NoError(t, err)
			assert.Equal(t, catalog.EffectNonIdempotent, tl.Effect)
			assert.Equal(t, catalog.DefaultHints(), *tl.Hints)
		})
	}
}

// TestMCPMalformedHintsRefuseTheTool: a hint of another type than boolean
// is never read as meaning anything; the tool is refused at import with an
// error naming the field.
func TestMCPMalformedHintsRefuseTheTool(t *testing.T) {
	for _, key := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		for _, v := range []string{`"true"`, `"false"`, `1`, `0`, `[]`, `{}`, `[true]`, `"yes"`} {
			t.Run(key+"="+v, func(t *testing.T) {
				_, err := parseMCP(t, `{"`+key+`":`+v+`}`)
				require.Error(t, err)
				assert.ErrorIs(t, err, catalog.ErrInvalidTool)
				assert.Contains(t, err.Error(), `"annotations.`+key+`"`)
				assert.Contains(t, err.Error(), "not a boolean")
			})
		}
	}
	for _, ann := range []string{`"readOnly"`, `[]`, `true`, `1`} {
		t.Run("annotations="+ann, func(t *testing.T) {
			_, err := parseMCP(t, ann)
			assert.ErrorIs(t, err, catalog.ErrInvalidTool)
			assert.Contains(t, err.Error(), `"annotations"`)
		})
	}
	// Duplicate hints are not JSON two readers agree on.
	_, err := parseMCP(t, `{"readOnlyHint":false,"readOnlyHint":true}`)
	assert.ErrorIs(t, err, catalog.ErrInvalidJSON)
}

// TestEffectOverrideOnlyAddsCaution: a record with hints may be classed
// more cautiously than its hints say, never less.
func TestEffectOverrideOnlyAddsCaution(t *testing.T) {
	ro := catalog.Hints{ReadOnly: true}
	write := catalog.Hints{Destructive: false, Idempotent: true, OpenWorld: true}
	for _, tc := range []struct {
		hints  catalog.Hints
		effect catalog.Effect
		want   catalog.Effect // "" = refused
	}{
		{ro, "", catalog.EffectReadOnly},
		{ro, catalog.EffectReadOnly, catalog.EffectReadOnly},
		{ro, catalog.EffectNonIdempotent, catalog.EffectNonIdempotent},
		{write, "", catalog.EffectIdempotentWrite},
		{write, catalog.EffectIdempotentWrite, catalog.EffectIdempotentWrite},
		{write, catalog.EffectNonIdempotent, catalog.EffectNonIdempotent},
		{write, catalog.EffectReadOnly, ""},
		{catalog.DefaultHints(), catalog.EffectReadOnly, ""},
		{catalog.DefaultHints(), catalog.EffectIdempotentWrite, ""},
		{catalog.DefaultHints(), "", catalog.EffectNonIdempotent},
	} {
		t.Run(fmt.Sprintf("%+v/%s", tc.hints, tc.effect), func(t *testing.T) {
			tl := tool("mcp.srv", "t")
			h := tc.hints
			tl.Hints, tl.Effect = &h, tc.effect
			s, err := catalog.NewStore(tl)
			if tc.want == "" {
				assert.ErrorIs(t, err, catalog.ErrInvalidTool)
				assert.Contains(t, err.Error(), "less cautious")
				return
			}
			require.NoError(t, err)
			got, _ := s.Snapshot().Get("t")
			assert.Equal(t, tc.want, got.Effect)
		})
	}
}

// TestPolicyDigest: the digest changes with every field that decides
// policy, and with nothing else.
func TestPolicyDigest(t *testing.T) {
	base := tool("mcp.srv", "t", "alias")
	base.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	base.Provenance, base.Source, base.Description = "mcp_config{srv}", "srv", "d"
	h := catalog.DefaultHints()
	base.Hints = &h
	digest := func(tl catalog.Tool) string {
		t.Helper()
		s, err := catalog.NewStore(tl)
		require.NoError(t, err)
		got, ok := s.Snapshot().Get(tl.ID)
		require.True(t, ok)
		require.Len(t, got.PolicyDigest, 64)
		return got.PolicyDigest
	}
	d0 := digest(base)
	with := func(f func(*catalog.Tool)) catalog.Tool {
		tl := base
		hh := *base.Hints
		tl.Hints = &hh
		f(&tl)
		return tl
	}
	changes := map[string]catalog.Tool{
		"schema":      with(func(tl *catalog.Tool) { tl.InputSchema = json.RawMessage(`{"type":"object"}`) }),
		"read-only":   with(func(tl *catalog.Tool) { tl.Hints.ReadOnly = true }),
		"destructive": with(func(tl *catalog.Tool) { tl.Hints.Destructive = false }),
		"idempotent":  with(func(tl *catalog.Tool) { tl.Hints.Idempotent = true }),
		"open world":  with(func(tl *catalog.Tool) { tl.Hints.OpenWorld = false }),
		"no hints":    with(func(tl *catalog.Tool) { tl.Hints = nil }),
		"provenance":  with(func(tl *catalog.Tool) { tl.Provenance = "plugin_config{srv}" }),
		"unverified":  with(func(tl *catalog.Tool) { tl.Provenance = catalog.ProvenanceUnverified }),
		"source":      with(func(tl *catalog.Tool) { tl.Source = "other" }),
		"no source":   with(func(tl *catalog.Tool) { tl.Source = "" }),
		"id":          with(func(tl *catalog.Tool) { tl.ID = "mcp.other:t" }),
		"more caution": with(func(tl *catalog.Tool) {
			tl.Hints.Destructive, tl.Hints.Idempotent = false, true
			tl.Effect = catalog.EffectNonIdempotent
		}),
	}
	seen := map[string]string{d0: "base"}
	for name, tl := range changes {
		d := digest(tl)
		prev, dup := seen[d]
		assert.False(t, dup, "%s has the digest of %s", name, prev)
		seen[d] = name
	}
	same := map[string]catalog.Tool{
		"description": with(func(tl *catalog.Tool) { tl.Description = "other" }),
		"wire name":   with(func(tl *catalog.Tool) { tl.Name = "u" }),
		"aliases":     with(func(tl *catalog.Tool) { tl.Aliases = nil }),
		"schema key order": with(func(tl *catalog.Tool) {
			tl.InputSchema = json.RawMessage(`{"properties":{"a":{"type":"string"}},"type":"object"}`)
		}),
		"stale digest kept": with(func(tl *catalog.Tool) { tl.PolicyDigest = strings.Repeat("0", 64) }),
		"explicit effect":   with(func(tl *catalog.Tool) { tl.Effect = catalog.EffectNonIdempotent }),
	}
	for name, tl := range same {
		assert.Equal(t, d0, digest(tl), name)
	}
	// Read-only hints mean the same whatever destructive and idempotent say.
	a := with(func(tl *catalog.Tool) { *tl.Hints = catalog.Hints{ReadOnly: true, Destructive: true} })
	b := with(func(tl *catalog.Tool) { *tl.Hints = catalog.Hints{ReadOnly: true, Idempotent: true} })
	assert.Equal(t, digest(a), digest(b))

	// Invalid UTF-8 in a covered field would be replaced by encoding/json;
	// it is refused instead.
	_, err := catalog.NewStore(with(func(tl *catalog.Tool) { tl.Source = "sr\xffv" }))
	assert.ErrorIs(t, err, catalog.ErrInvalidTool)

	// The documented construction.
	got, err := catalog.PolicyDigestOf(catalog.Tool{ID: "mcp.srv:t", SchemaDigest: "ab", Effect: catalog.EffectReadOnly, Provenance: "mcp_config{srv}", Source: "srv"})
	require.NoError(t, err)
	assert.Equal(t, sha256Hex(`{"effect":"read_only","hints":null,"id":"mcp.srv:t","provenance":"mcp_config{srv}","schema_digest":"ab","source":"srv","v":1}`), got)
}

func TestDiffReportsHintsAndPolicyDigest(t *testing.T) {
	before, err := parseMCP(t, `{"readOnlyHint":false}`)
	require.NoError(t, err)
	after, err := parseMCP(t, `{"readOnlyHint":true}`)
	require.NoError(t, err)
	s, err := catalog.NewStore(before)
	require.NoError(t, err)
	old := s.Snapshot()
	next, err := s.Update(func(b *catalog.Builder) error { return b.Replace(after) })
	require.NoError(t, err)
	changes := catalog.Diff(old, next)
	require.Len(t, changes, 1)
	assert.Equal(t, []string{"effect", "hints", "policy_digest"}, changes[0].Fields)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
