package catalog_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/host/catalog"
)

func TestMakeID(t *testing.T) {
	tests := []struct {
		ns, raw string
		want    string
	}{
		{"builtin", "read", "builtin:read"},
		{"mcp.github", "get_me", "mcp.github:get_me"},
		{"mcp.github", "create-issue", "mcp.github:create-issue"},
		{"unknown", "Read", "unknown:.52ead"},
		{"ext.srv", "files.read", "ext.srv:files.2eread"},
		{"ext.srv", "files.2eread", "ext.srv:files.2e2eread"},
		{"plugin.a.b", "a:b", "plugin.a.b:a.3ab"},
		{"plugin.x", "EXT__SRV__ECHO_TOOL", "plugin.x:.45.58.54__.53.52.56__.45.43.48.4f_.54.4f.4f.4c"},
		{"unknown", "héllo wörld", "unknown:h.c3.a9llo.20w.c3.b6rld"},
		{"unknown", "x/y", "unknown:x.2fy"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			id, err := catalog.MakeID(tt.ns, tt.raw)
			require.NoError(t, err)
			assert.Equal(t, tt.want, id)
			ns, raw, err := catalog.ParseID(id)
			require.NoError(t, err)
			assert.Equal(t, tt.ns, ns)
			assert.Equal(t, tt.raw, raw)
		})
	}
}

func TestMakeIDErrors(t *testing.T) {
	tests := []struct {
		name, ns, raw string
		want          error
	}{
		{"empty name", "builtin", "", catalog.ErrInvalidName},
		{"long name", "builtin", strings.Repeat("a", catalog.MaxNameBytes+1), catalog.ErrInvalidName},
		{"bad utf8", "builtin", "a\xffb", catalog.ErrInvalidName},
		{"empty namespace", "", "x", catalog.ErrInvalidID},
		{"unknown namespace", "foo", "x", catalog.ErrInvalidID},
		{"mcp without server", "mcp.", "x", catalog.ErrInvalidID},
		{"upper-case server", "mcp.GitHub", "x", catalog.ErrInvalidID},
		{"colon in namespace", "ext.a:b", "x", catalog.ErrInvalidID},
		{"bare mcp", "mcp", "x", catalog.ErrInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalog.MakeID(tt.ns, tt.raw)
			require.ErrorIs(t, err, tt.want)
			var e *catalog.Error
			require.ErrorAs(t, err, &e)
		})
	}
	_, err := catalog.MakeID("builtin", strings.Repeat("a", catalog.MaxNameBytes))
	assert.NoError(t, err, "MaxNameBytes itself is allowed")
}

func TestDecodeNameRejectsNonCanonical(t *testing.T) {
	for _, name := range []string{
		"",       // empty
		"Abc",    // upper case
		".2E",    // upper-case hex
		".61",    // escape of a byte that stands for itself
		".2",     // truncated escape
		".",      // lone dot
		"a.zz",   // not hex
		"a:b",    // colon
		"a b",    // space
		".ff",    // decodes to invalid UTF-8, which MakeID refuses
		"a\x00b", // NUL
	} {
		_, err := catalog.DecodeName(name)
		assert.ErrorIs(t, err, catalog.ErrInvalidID, "%q", name)
	}
	for _, id := range []string{"builtin", ":x", "builtin:", "nope:x", "builtin:A", "mcp.:x"} {
		_, _, err := catalog.ParseID(id)
		assert.ErrorIs(t, err, catalog.ErrInvalidID, "%q", id)
	}
}

// The origin's forged spellings, and names that differ only in ways a lossy
// encoding (case folding, dropping or mapping characters) would merge, must
// all get different ids.
func TestMakeIDInjective(t *testing.T) {
	names := []string{
		"search", "Search", "SEARCH", "plugin_search", "plugin:search", "plugin.search",
		"plugin-search", "plugin__search", "plugin search", "plugin/search",
		"echo_tool", "ECHO_TOOL", "EXT__SRV__ECHO_TOOL", "ext__srv__echo_tool",
		"a.2eb", "a.b", "a.2Eb", "a..b", ".2e", ".", "..", "a_b", "a-b", "a b",
		"é", "e\u0301", "ﬁ", "fi",
	}
	seen := map[string]string{}
	for _, n := range names {
		id, err := catalog.MakeID("ext.srv", n)
		require.NoError(t, err)
		if prev, dup := seen[id]; dup {
			t.Fatalf("%q and %q both map to %q", prev, n, id)
		}
		seen[id] = n
	}
}

func FuzzMakeID(f *testing.F) {
	for _, s := range []string{"get_me", "Get.Me", "a:b", ".2e", "é", "\xff", ""} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		idA, errA := catalog.MakeID("ext.fuzz", a)
		idB, errB := catalog.MakeID("ext.fuzz", b)
		if errA == nil {
			ns, raw, err := catalog.ParseID(idA)
			if err != nil || ns != "ext.fuzz" || raw != a {
				t.Fatalf("round trip of %q: %q %q %v", a, ns, raw, err)
			}
			for i := 0; i < len(idA); i++ {
				c := idA[i]
				if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_.-:", c) >= 0) {
					t.Fatalf("id %q has byte %q", idA, c)
				}
			}
		}
		if errA == nil && errB == nil && a != b && idA == idB {
			t.Fatalf("%q and %q collide as %q", a, b, idA)
		}
		// Every accepted segment re-encodes to itself.
		if raw, err := catalog.DecodeName(a); err == nil {
			id, err := catalog.MakeID("ext.fuzz", raw)
			if err != nil || id != "ext.fuzz:"+a {
				t.Fatalf("DecodeName(%q) = %q re-encodes to %q, %v", a, raw, id, err)
			}
		}
	})
}
