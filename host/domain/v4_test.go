package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/domain"
)

// withVars is a v4 catalog declaring vars (a YAML flow map) and a write w
// with the precondition p.
func withVars(vars, p string) string {
	doc := strings.Replace(withPre(p), "version: 2", "version: 4", 1)
	if vars != "" {
		doc = strings.Replace(doc, "version: 4\n", "version: 4\nvars: "+vars+"\n", 1)
	}
	return doc
}

const rootVar = `{root: {description: the served directory}}`

// TestV4Accepted: one case per v4 form (under, vars) that must load.
func TestV4Accepted(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"under a literal", withVars("", `{id: p1, require: {match: {field: a, under: /srv/files/public}}, message: m}`)},
		{"under a param", withVars("", `{id: p1, deny_when: {value: {param: a}, under: {param: b}}, message: m}`)},
		{"under a var", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`)},
		{"under a var joined", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root, join: public}}}, message: m}`)},
		{"under a var joined deeper", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root, join: www/public}}}, message: m}`)},
		{"a var in object form", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {kind: var, name: root, join: public}}}, message: m}`)},
		{"a var elsewhere", withVars(`{tenant: {}}`, `{id: p1, deny_when: {field: b, not_equals: {var: tenant}}, message: m}`)},
		{"a var in bind", withVars(`{tenant: {}}`, `{id: p1, view: v, bind: {a: {var: tenant}}, deny_when: {field: f, equals: 1}, message: m}`)},
		{"a var with a default upstream argument", withVars(`{root: {default: {upstream: fs, arg: -1}}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`)},
		{"a var with a default string", withVars(`{root: {default: /srv}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := domain.Parse([]byte(c.doc))
			assert.NoError(t, err, c.doc)
		})
	}
}

// TestV4Errors: every fault of a v4 form names where it is, with a reason.
func TestV4Errors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown var, none declared", withVars("", `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`),
			`precondition p1: require.match.under: unknown var "root": the catalog declares no vars`},
		{"unknown var", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: roots}}}, message: m}`),
			`precondition p1: require.match.under: unknown var "roots" (declared: root)`},
		{"a var nothing reads", withVars(`{root: {}, spare: {}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`),
			`domain d: vars.spare: declared, but no precondition or effect reads it`},
		{"a var name in upper case", withVars(`{Root: {}}`, `{id: p1, require: {match: {field: a, under: /x}}, message: m}`),
			`vars.Root: a var's name must match`},
		{"an unknown member of a var", withVars(`{root: {type: path}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`),
			`vars.root: unknown key "type"`},
		{"a var with an unknown member", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {kind: var, name: root, of: x}}}, message: m}`),
			`require.match.under: a var operand has only name, join, not of`},
		{"join absolute", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root, join: /public}}}, message: m}`),
			`require.match.under.join: "/public" is not a clean relative path`},
		{"join escapes", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root, join: ../etc}}}, message: m}`),
			`require.match.under.join: "../etc" is not a clean relative path`},
		{"join unclean", withVars(rootVar, `{id: p1, require: {match: {field: a, under: {var: root, join: a//b}}}, message: m}`),
			`require.match.under.join: "a//b" is not a clean relative path`},
		{"under a number", withVars("", `{id: p1, require: {match: {field: a, under: 3}}, message: m}`),
			`require.match.under: a literal for under must be an absolute path, not a number`},
		{"under a relative path", withVars("", `{id: p1, require: {match: {field: a, under: srv/public}}, message: m}`),
			`require.match.under: a literal for under must be an absolute path (starting with /), not "srv/public"`},
		{"a default of another shape", withVars(`{root: {default: 7}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`),
			`vars.root.default: want a string or {upstream: NAME, arg: N}`},
		{"a default upstream without arg", withVars(`{root: {default: {upstream: fs}}}`, `{id: p1, require: {match: {field: a, under: {var: root}}}, message: m}`),
			`vars.root.default: want a string or {upstream: NAME, arg: N}`},
		{"under and contains", withVars("", `{id: p1, require: {match: {field: a, under: /x, contains: y}}, message: m}`),
			`want exactly one operator of equals, not_equals, in, not_in, exists, gt, gte, lt, lte, contains, starts_with, under`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireInvalid(t, c.doc, c.want) })
	}
}

// TestBind: binding a catalog's vars puts their values in the capability a
// gate is sent, as literals; until then the capability is unbound.
func TestBind(t *testing.T) {
	doc := withVars(`{root: {description: "the served   directory"}, tenant: {}}`,
		`{id: p1, require: {match: {all_of: [{field: a, under: {var: root, join: public}}, {field: b, equals: {var: tenant}}]}}, message: m}`)
	c, err := domain.Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, []string{"root", "tenant"}, c.Vars())
	assert.Equal(t, "the served directory", c.VarDescription("root"))
	assert.True(t, c.VarIsPath("root"))
	assert.False(t, c.VarIsPath("tenant"))
	assert.Equal(t, []string{"root", "tenant"}, c.Unbound("w"))
	assert.Empty(t, c.Unbound("r"), "a capability without vars")

	half, err := c.Bind(map[string]string{"root": "/srv/files/"})
	require.NoError(t, err)
	assert.Equal(t, []string{"tenant"}, half.Unbound("w"))
	assert.Equal(t, []string{"root", "tenant"}, c.Unbound("w"), "the catalog bound is a copy")

	full, err := half.Bind(map[string]string{"tenant": "acme"})
	require.NoError(t, err)
	assert.Empty(t, full.Unbound("w"))
	w, ok := full.Capability("w")
	require.True(t, ok)
	m := w.Preconditions[0].Require.Match.AllOf
	assert.Equal(t, &abi.Operand{Kind: abi.OperandLiteral, Value: "/srv/files/public"}, m[0].Under)
	assert.Equal(t, &abi.Operand{Kind: abi.OperandLiteral, Value: "acme"}, m[1].Equals)
	orig, _ := c.Capability("w")
	assert.Equal(t, abi.OperandVar, orig.Preconditions[0].Require.Match.AllOf[0].Under.Kind, "the original keeps its var")

	for _, bad := range []struct {
		vals map[string]string
		want string
	}{
		{map[string]string{"rooot": "/x"}, "var rooot: not declared by the catalog (declared: root, tenant)"},
		{map[string]string{"root": "srv/files"}, `var root: "srv/files" is not an absolute path`},
		{map[string]string{"root": ""}, `var root: "" is not an absolute path`},
		{map[string]string{"tenant": ""}, `var tenant: empty`},
	} {
		_, err := c.Bind(bad.vals)
		require.Error(t, err)
		assert.Contains(t, err.Error(), bad.want)
		assert.ErrorIs(t, err, domain.ErrInvalid)
		var ve *domain.VarError
		assert.True(t, errors.As(err, &ve))
	}
	_, err = half.Bind(map[string]string{"root": "/y"})
	assert.ErrorContains(t, err, "var root: already bound")
}

// TestAnswerDigest: the digest follows what query.capability answers:
// the same document gives the same digest, and binding a var, a changed
// message, or a tool alias added gives another. Each binding step changes
// it, since a gate keeps answers by it (abi/SPEC.md §7.12).
func TestAnswerDigest(t *testing.T) {
	doc := withVars(`{root: {}, tenant: {}}`,
		`{id: p1, require: {match: {all_of: [{field: a, under: {var: root}}, {field: b, equals: {var: tenant}}]}}, message: m}`)
	digest := func(c *domain.Catalog) [32]byte {
		t.Helper()
		d, err := c.AnswerDigest()
		require.NoError(t, err)
		return d
	}
	parse := func(doc string) *domain.Catalog {
		t.Helper()
		c, err := domain.Parse([]byte(doc))
		require.NoError(t, err, doc)
		return c
	}
	c := parse(doc)
	base := digest(c)
	assert.Equal(t, base, digest(parse(doc)), "the same document")
	half, err := c.Bind(map[string]string{"root": "/srv"})
	require.NoError(t, err)
	full, err := half.Bind(map[string]string{"tenant": "acme"})
	require.NoError(t, err)
	seen := map[[32]byte]string{base: "unbound"}
	for name, d := range map[string][32]byte{
		"root bound":         digest(half),
		"both bound":         digest(full),
		"a changed message":  digest(parse(strings.Replace(doc, "message: m", "message: n", 1))),
		"a tool alias added": digest(parse(strings.Replace(doc, "  w:\n    kind: action\n", "  w:\n    kind: action\n    tools: [write]\n", 1))),
	} {
		prev, dup := seen[d]
		assert.False(t, dup, "%s has the digest of %s", name, prev)
		seen[d] = name
	}
}
