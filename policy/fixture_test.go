package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/policy"
)

func TestDecodeFixture(t *testing.T) {
	const head = `{"catalog":{"path":"c.json"},"policies":["p.cedar"],`
	for _, tc := range []struct{ name, doc, err string }{
		{"ok", head + `"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, ""},
		{"unknown key", head + `"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}],"x":1}`, "unknown field"},
		{"no catalog", `{"policies":["p"],"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "catalog.path: required"},
		{"no policies", `{"catalog":{"path":"c"},"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "policies: name at least one"},
		{"no cases", head + `"cases":[]}`, "cases: give at least one"},
		{"unnamed case", head + `"cases":[{"call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "cases[0].name: required"},
		{"duplicate case", head + `"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}},{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, `cases[1].name: "a" names another case too`},
		{"no tool", head + `"cases":[{"name":"a","call":{},"expect":{"verdict":"accepted"}}]}`, "cases[0] (a).call.tool: required"},
		{"bad verdict", head + `"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"ok"}}]}`, `"ok" is not accepted, rejected or inconclusive`},
		{"bad clock", head + `"now":"yesterday","cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "now:"},
		{"bad claim type", head + `"claims":{"roles":"List"},"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "claims.roles"},
		{"principal without subject", head + `"cases":[{"name":"a","principal":{"method":"oidc"},"call":{"tool":"t"},"expect":{"verdict":"accepted"}}]}`, "principal.subject: required"},
		{"trailing data", head + `"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted"}}]} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := policy.DecodeFixture([]byte(tc.doc))
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, policy.DefaultNow, f.Now)
				return
			}
			var fe *policy.FixtureError
			require.ErrorAs(t, err, &fe)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestExampleFixtures runs examples/policies' test files natively (the
// CLI runs them in cmd/gatehost's tests).
func TestExampleFixtures(t *testing.T) {
	for file, load := range map[string]func(testing.TB) policy.Lookup{
		"filesystem.test.json": func(t testing.TB) policy.Lookup { _, l := fsTools(t); return l },
		"github.test.json":     func(t testing.TB) policy.Lookup { _, l := githubTools(t); return l },
	} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "examples", "policies", file))
			require.NoError(t, err)
			f, err := policy.DecodeFixture(b)
			require.NoError(t, err)
			var srcs []policy.Source
			for _, p := range f.Policies {
				text, err := os.ReadFile(filepath.Join("..", "examples", "policies", p))
				require.NoError(t, err)
				srcs = append(srcs, policy.Source{File: p, Text: string(text)})
			}
			set, err := policy.Parse(srcs)
			require.NoError(t, err)
			for _, r := range f.Run(policy.NewEngine(set, f.ClaimOptions()), load(t)) {
				assert.True(t, r.Pass, "%s: %s", r.Name, r.Failure)
			}
		})
	}
}

// TestFixtureCountsUnknownTool: a case whose counts name a tool the
// catalog does not have, or one tool or window under two keys, fails,
// naming it, rather than counting it 0 (or either, by map order) and
// passing a case meant to be over a limit.
func TestFixtureCountsUnknownTool(t *testing.T) {
	_, lookup := fsTools(t)
	f, err := policy.DecodeFixture([]byte(`{"catalog":{"path":"c"},"policies":["p"],"cases":[
{"name":"typo","call":{"tool":"move_file","parameters":{"source":"/a","destination":"/b"}},"counts":{"calls":{"move_fil":5}},"expect":{"verdict":"accepted"}},
{"name":"in a window","call":{"tool":"move_file","parameters":{"source":"/a","destination":"/b"}},"counts":{"calls":{"move_file":1},"windows":{"1h":{"mcp.fs:move_fil":5}}},"expect":{"verdict":"accepted"}},
{"name":"known","call":{"tool":"move_file","parameters":{"source":"/a","destination":"/b"}},"counts":{"calls":{"move_file":1}},"expect":{"verdict":"accepted"}},
{"name":"one tool twice","call":{"tool":"move_file","parameters":{"source":"/a","destination":"/b"}},"counts":{"calls":{"move_file":0,"mcp.fs:move_file":9}},"expect":{"verdict":"accepted"}},
{"name":"one window twice","call":{"tool":"move_file","parameters":{"source":"/a","destination":"/b"}},"counts":{"windows":{"1h":{},"60m":{}}},"expect":{"verdict":"accepted"}}],
"windows":["1h"]}`))
	require.NoError(t, err)
	set := mustSet(t, `permit(principal, action, resource);`)
	rs := f.Run(policy.NewEngine(set, f.ClaimOptions()), lookup)
	require.Len(t, rs, 5)
	assert.False(t, rs[0].Pass)
	assert.Contains(t, rs[0].Failure, `counts name "move_fil", which is no tool of the catalog`)
	assert.False(t, rs[1].Pass)
	assert.Contains(t, rs[1].Failure, `"mcp.fs:move_fil"`)
	assert.True(t, rs[2].Pass, rs[2].Failure)
	assert.False(t, rs[3].Pass)
	assert.Contains(t, rs[3].Failure, `counts name mcp.fs:move_file twice, as "mcp.fs:move_file" and "move_file"`)
	assert.False(t, rs[4].Pass)
	assert.Contains(t, rs[4].Failure, `counts name window 1h twice`)
}

func FuzzDecodeFixture(f *testing.F) {
	// Small seeds: the example files are large enough to stall the
	// mutator; these hold every member.
	f.Add([]byte(`{"catalog":{"path":"c","format":"mcp","server":"s"},"policies":["p"],"claims":{"roles":"Set<String>"},"now":"2026-01-01T00:00:00Z",
"cases":[{"name":"a","principal":{"method":"oidc","issuer":"i","subject":"s","claims":{"roles":["r"]}},"call":{"tool":"t","parameters":{"x":1}},"now":"2026-02-01T00:00:00Z","expect":{"verdict":"rejected","policies":["x"],"code":"policy_forbid"}}]}`))
	f.Add([]byte(`{"catalog":{"path":"c"},"policies":["p"],"cases":[{"name":"a","call":{"tool":"t"},"expect":{"verdict":"accepted","policies":[]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fx, err := policy.DecodeFixture(b)
		if err != nil {
			var fe *policy.FixtureError
			require.ErrorAs(t, err, &fe)
			return
		}
		require.NotEmpty(t, fx.Cases)
		require.NotEmpty(t, fx.Policies)
		for _, c := range fx.Cases {
			require.True(t, c.Expect.Verdict.Valid())
			require.NotEmpty(t, c.Name)
		}
	})
}
