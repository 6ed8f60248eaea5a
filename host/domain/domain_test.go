package domain_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/domain"
)

func TestShippedCatalogsAreValid(t *testing.T) {
	for _, f := range []string{"retail", "airline", "rfc", "github-bench", "rfc/headerless"} {
		c, err := domain.Load(filepath.Join("..", "..", "testdata", "domains", f, "domain.yaml"))
		require.NoError(t, err, f)
		assert.NotEmpty(t, c.Capabilities())
	}
}

func TestRFCShapesAndLookup(t *testing.T) {
	c, err := domain.Load("../../testdata/domains/rfc/domain.yaml")
	require.NoError(t, err)
	pay, ok := c.Capability("CreditCardAccountLocked_pay_from_checking")
	require.True(t, ok)
	require.Len(t, pay.Preconditions, 1)
	p := pay.Preconditions[0]
	assert.Equal(t, "no_open_dispute", p.ID)
	assert.Equal(t, abi.Operand{Kind: "param", Name: "user_id"}, p.Bind["user_id"])
	assert.Equal(t, abi.Operand{Kind: "literal", Value: true}, *p.DenyWhen.Equals)
	assert.False(t, strings.HasSuffix(p.Message, "\n"), "messages are folded to one line")
	_, ok = c.CapabilityView("CreditLimitRequest_list_by_account")
	assert.True(t, ok)
	_, ok = c.Capability("nope")
	assert.False(t, ok)
}

const base = `
domain: d
version: 1
views:
  v: {params: [a], document: {collection: c, id: "{a}"}}
  q: {params: [a, b], sql: "SELECT 1 WHERE :a = :b"}
capabilities:
  r: {kind: query, parameters: [a], view: v}
`

// TestValidationErrors: every fault names the capability, the
// precondition id and the field.
func TestValidationErrors(t *testing.T) {
	pre := func(p string) string {
		return base + "  w:\n    kind: action\n    parameters: [a, b]\n    preconditions:\n      - " + p + "\n"
	}
	cases := []struct{ doc, want string }{
		{pre(`{id: p1, view: v, bind: {a: {kind: param, name: a}}, deny_when: {field: f, equals: 1}, message: m}`), ""},
		{pre(`{id: p1, view: nope, bind: {}, deny_when: {field: f, equals: 1}, message: m}`), `capability w: precondition p1: view: no view named "nope"`},
		{pre(`{id: p1, view: v, bind: {}, deny_when: {field: f, equals: 1}, message: m}`), `capability w: precondition p1: bind.a: the view's parameter a is not bound`},
		{pre(`{id: p1, view: v, bind: {a: 1, z: 2}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: bind.z: not a parameter of the view`},
		{pre(`{id: p1, view: v, bind: {a: {kind: param, name: zz}}, deny_when: {field: f, equals: 1}, message: m}`), `precondition p1: bind.a: "zz" is not a parameter of w`},
		{pre(`{id: p1, view: v, bind: {a: {kind: env, name: HOME}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a: unknown operand kind "env"`},
		{pre(`{id: p1, view: v, bind: {a: 1}, message: m}`), `precondition p1: deny_when: give exactly one of deny_when and require`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, equals: 1}, require: {match: {field: f, equals: 1}}, message: m}`), `give exactly one of deny_when and require`},
		{pre(`{id: p1, view: v, bind: {a: 1}, require: {}, message: m}`), `precondition p1: require.match: required`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, equals: 1}}`), `precondition p1: message: required`},
		{pre(`{view: v, bind: {a: 1}, deny_when: {field: f, equals: 1}, message: m}`), `precondition #0: id: required`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, roughly: 1}, message: m}`), `capabilities.w.preconditions[0].deny_when: unknown key "roughly"`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f}, message: m}`), `precondition p1: deny_when: want exactly one operator`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, equals: 1, gt: 0}, message: m}`), `want exactly one operator`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, in: 3}, message: m}`), `deny_when.in: a literal for in must be an array`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, gt: tomorrow}, message: m}`), `deny_when.gt: "tomorrow" is neither a number nor an RFC 3339 time`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, gt: {kind: now, offset: soon}}, message: m}`), `deny_when.gt.offset: "soon" is not a duration`},
		{pre(`{id: p1, view: v, bind: {a: {kind: now}}, deny_when: {field: f, equals: 1}, message: m}`), `bind.a: now is not allowed in bind`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {all_of: []}, message: m}`), `all_of and any_of need at least one condition`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {field: f, equals: 1, not: {field: g, equals: 2}}, message: m}`), `a condition is a leaf`},
		{pre(`{id: p1, view: v, bind: {a: 1}, deny_when: {any_of: [{field: g, equals: {kind: param, name: nope}}]}, message: m}`), `deny_when.any_of[0].equals: "nope" is not a parameter of w`},
		{pre(`{id: p1, capability: r, bind: {a: 1}, require: {match: {field: f, equals: 1}}, message: m}`), ""},
		{pre(`{id: p1, capability: w, bind: {a: 1}, require: {match: {field: f, equals: 1}}, message: m}`), `precondition p1: capability: w is a action capability`},
		{pre(`{id: p1, view: v, capability: r, bind: {a: 1}, deny_when: {field: f, equals: 1}, message: m}`), `give view or capability, not both`},
		{pre(`{id: p1, bind: {a: 1}, deny_when: {field: f, equals: 1}, message: m}`), `binds nothing`},
		{base + "  w:\n    kind: action\n    preconditions:\n      - {id: p1, deny_when: {field: f, equals: 1}, message: m}\n      - {id: p1, deny_when: {field: f, equals: 1}, message: m}\n", `capability w: precondition p1: id: duplicate id`},
		{base + "  w: {kind: mutate}\n", `capability w: kind: "mutate" is not one of`},
		{base + "  w: {kind: get, preconditions: [{id: p, deny_when: {field: f, equals: 1}, message: m}]}\n", `capability w: preconditions: only write kinds`},
		{base + "  w: {kind: get, view: q, parameters: [a]}\n", `capability w: view: view q takes [a b], the capability [a]`},
		{base + "  w: {kind: action, tools: [r]}\n", `capability w: tools: tool name "r" also names capability r`},
		{base + "  w: {kind: action, colour: red}\n", `capabilities.w: unknown key "colour"`},
		{strings.Replace(base, "version: 1", "version: 5", 1), `version: 5 is not a supported version`},
		{strings.Replace(base, `id: "{a}"`, `id: "{zz}"`, 1), `view v: document.id: {zz} is not a parameter`},
		{strings.Replace(base, `id: "{a}"`, `id: "{item.x}"`, 1), `{item.x}: item placeholders need for_each`},
		{"domain: d\nversion: 1\ncapabilities: {}\n", `capabilities: a domain needs at least one capability`},
		{"domain: d\nversion: 1\nextra: 1\ncapabilities: {r: {kind: get}}\n", `unknown key "extra"`},
		{"{{{", `not YAML`},
		{"a: &x [1, 2]\nb: *x\n", `YAML aliases are not allowed`},
	}
	for _, c := range cases {
		if c.want == "" {
			_, err := domain.Parse([]byte(c.doc))
			assert.NoError(t, err, c.doc)
			continue
		}
		requireInvalid(t, c.doc, c.want)
	}
}

// requireInvalid asserts that doc does not parse, with a *domain.Error
// matching ErrInvalid whose text contains want.
func requireInvalid(t *testing.T, doc, want string) {
	t.Helper()
	_, err := domain.Parse([]byte(doc))
	require.Error(t, err, doc)
	assert.ErrorIs(t, err, domain.ErrInvalid)
	assert.Contains(t, err.Error(), want)
	var de *domain.Error
	assert.True(t, errors.As(err, &de))
}

func TestAllErrorsReported(t *testing.T) {
	_, err := domain.Parse([]byte(base + `  w:
    kind: action
    preconditions:
      - {id: one, view: nope, bind: {}, deny_when: {field: f, equals: 1}, message: m}
      - {id: two, view: v, bind: {a: 1}, deny_when: {field: f}, message: m}
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "precondition one")
	assert.Contains(t, err.Error(), "precondition two")
}

func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("../../testdata/domains/rfc/domain.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(base))
	f.Add([]byte(withPre(`{id: p1, for_each: {zip: [items, prices], as: [it, pr]}, view: v, bind: {a: {param: it.id}}, deny_when: {value: {sum: {over: {rows: true}, of: n, where: {field: "@", starts_with: x}}}, gt: {add: [{field: total}, 1]}}, message: m}`)))
	f.Add([]byte(withEffect(`{for_each: {param: items, as: it}, collection: c, id: {param: it}, view: v, bind: {a: {param: a}}, set: {"x.{it}": {field: y}}}`)))
	f.Add([]byte(headerless))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := domain.Parse(b)
		if err == nil && c == nil {
			t.Fatal("nil catalog without error")
		}
		if err != nil && !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("error not ErrInvalid: %v", err)
		}
	})
}

// TestUnknownKeysInFileTerms: a misspelt key of a domain file is reported
// in the file's own terms — the file, the key's path and the closest
// accepted key — never as a JSON decoder's "unknown field", at any depth.
func TestUnknownKeysInFileTerms(t *testing.T) {
	write := "  write_file:\n    kind: action\n    parameters: [path]\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"top level", strings.Replace(base, "capabilities:", "capabilites: {}\ncapabilities:", 1),
			`unknown key "capabilites"; did you mean "capabilities"?`},
		{"capability", base + strings.Replace(write, "parameters:", "paramters:", 1),
			`capabilities.write_file: unknown key "paramters"; did you mean "parameters"?`},
		{"parameter", base + "  write_file:\n    kind: action\n    parameters: [{name: path, requird: true}]\n",
			`capabilities.write_file.parameters[0]: unknown key "requird"; did you mean "required"?`},
		{"precondition", base + write + "    preconditions:\n      - {id: p1, view: v, bind: {a: 1}, deny_when: {field: f, equals: 1}, mesage: m}\n",
			`capabilities.write_file.preconditions[0]: unknown key "mesage"; did you mean "message"?`},
		{"view", strings.Replace(base, "document: {collection: c,", "document: {colection: c,", 1),
			`views.v.document: unknown key "colection"; did you mean "collection"?`},
		{"var", strings.Replace(base, "version: 1", "version: 4\nvars:\n  root: {defualt: /srv}", 1),
			`vars.root: unknown key "defualt"; did you mean "default"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o644))
			_, err := domain.Load(path)
			require.Error(t, err)
			assert.ErrorIs(t, err, domain.ErrInvalid)
			assert.Contains(t, err.Error(), path+": "+tc.want)
			assert.NotContains(t, err.Error(), "json:")
			assert.NotContains(t, err.Error(), "unknown field")
		})
	}
}
