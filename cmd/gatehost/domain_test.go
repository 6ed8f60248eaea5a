package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// writeDomainConfig writes a config with the retail domain and the
// retail-dry / retail-exec pipelines of gatehost.yaml.
func writeDomainConfig(t *testing.T, source string) string {
	t.Helper()
	pc, err := testwasm.Go("plugins/preconditions/wasm")
	require.NoError(t, err)
	dir := t.TempDir()
	stage := `
    stages:
      - plugin: preconditions
        timeout: 60s
        capabilities: [query]
        config: {domain: retail}`
	cfg := fmt.Sprintf(`
event_log:
  path: events.jsonl
cache_dir: %s
plugins:
  preconditions:
    path: %s
pipelines:
  retail-dry:
    subject: proposal%s
  retail-exec:
    subject: tool_call%s
domains:
  retail:
    catalog: %s
    source: %s
`, testwasm.CacheDir(), pc, stage, stage, filepath.Join(repoRoot, "testdata/domains/retail/domain.yaml"), source)
	path := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

func example(name string) string { return filepath.Join(repoRoot, "testdata/domains/examples", name) }

func TestCheckPreconditions(t *testing.T) {
	cfg := writeDomainConfig(t, fmt.Sprintf("{kind: documents, path: %s}", filepath.Join(repoRoot, "testdata/domains/retail/db.json")))
	cases := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"dry deny", []string{"--pipeline", "retail-dry", example("retail-cancel-processed.json")}, exitRejected, "[order_is_pending]"},
		{"execute admit", []string{"--pipeline", "retail-exec", example("retail-return-ok.json")}, exitAccepted, "ACCEPTED"},
		{"execute deny", []string{"--pipeline", "retail-exec", example("retail-return-wrong-refund.json")}, exitRejected, "[refund_to_original_or_gift_card]"},
		{"tool_call that is not one", []string{"--pipeline", "retail-exec", example("retail-cancel-processed.json")}, exitUsage, ""},
		{"bad --now", []string{"--pipeline", "retail-exec", "--now", "noon", example("retail-return-ok.json")}, exitUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(append([]string{"check", "--config", cfg}, c.args...)...)
			assert.Equal(t, c.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, c.wantOut)
		})
	}
}

func TestDomainSourceErrors(t *testing.T) {
	for _, src := range []string{
		"{kind: documents}",
		"{kind: ledger, path: x}",
		"{kind: documents, path: /nonexistent.json}",
		"{kind: sqlite, path: /nonexistent.db}",
	} {
		cfg := writeDomainConfig(t, src)
		code, _, errOut := runCLI("check", "--config", cfg, "--pipeline", "retail-exec", example("retail-return-ok.json"))
		assert.Equal(t, exitUsage, code, src)
		assert.Contains(t, errOut, "domains.retail.source", src)
	}
}

func TestDomainValidate(t *testing.T) {
	code, out, _ := runCLI("domain", "validate", filepath.Join(repoRoot, "testdata/domains/retail/domain.yaml"), filepath.Join(repoRoot, "testdata/domains/airline/domain.yaml"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "VALID")
	assert.Contains(t, out, "domain=airline")

	bad := filepath.Join(t.TempDir(), "domain.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(`domain: d
version: 1
capabilities:
  w:
    kind: action
    preconditions:
      - {id: pending_only, view: nope, bind: {}, deny_when: {field: status, equals: x}, message: m}
`), 0o644))
	code, out, _ = runCLI("domain", "validate", "--output", "json", bad)
	assert.Equal(t, 1, code)
	var res []struct {
		Valid  bool     `json:"valid"`
		Errors []string `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 1)
	assert.False(t, res[0].Valid)
	assert.Contains(t, res[0].Errors[0], "capability w: precondition pending_only: view: no view named")

	code, _, _ = runCLI("domain", "check")
	assert.Equal(t, exitUsage, code)
	code, _, _ = runCLI("domain", "validate")
	assert.Equal(t, exitUsage, code)
}

// TestDomainValidateV2: each v2 form's faults, in text and in JSON, and a
// headerless catalog named after its directory.
func TestDomainValidateV2(t *testing.T) {
	const head = "version: 2\nviews:\n  v: {params: [a], document: {collection: c, id: \"{a}\"}}\ncapabilities:\n" +
		"  n: {kind: get, parameters: [a]}\n  w:\n    kind: action\n    parameters: [a, items, prices]\n"
	pre := func(p string) string { return head + "    preconditions:\n      - " + p + "\n" }
	cases := []struct{ name, doc, want string }{
		{"for_each", pre(`{id: p, for_each: {zip: [items], as: [x]}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: for_each.zip: zip pairs two or more arrays"},
		{"for_each as", pre(`{id: p, for_each: {param: items, as: a}, deny_when: {field: f, equals: 1}, message: m}`),
			`capability w: precondition p: for_each.as[0]: "a" is a parameter of w`},
		{"field to field", pre(`{id: p, view: v, bind: {a: {field: x}}, deny_when: {field: f, gt: {field: g}}, message: m}`),
			"capability w: precondition p: bind.a: field is not allowed in bind"},
		{"arithmetic", pre(`{id: p, deny_when: {value: {sub: [1]}, gt: 0}, message: m}`),
			"capability w: precondition p: deny_when.value.sub: sub takes exactly 2 operands, not 1"},
		{"count where", pre(`{id: p, deny_when: {all_of: [{field: f, exists: true}, {value: {count: {over: {param: items}, where: {field: "", equals: 1}}}, gt: 0}]}, message: m}`),
			"capability w: precondition p: deny_when.all_of[1].value.count.where.field: required"},
		{"sum over", pre(`{id: p, deny_when: {value: {sum: {over: 3}}, gt: 0}, message: m}`),
			`capability w: precondition p: deny_when.value.sum.over: sum is over an array: a param, field or rows operand, not "literal"`},
		{"rows", pre(`{id: p, view: v, bind: {a: {rows: true}}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: bind.a: rows is not allowed in bind"},
		{"starts_with", pre(`{id: p, deny_when: {field: f, starts_with: [x]}, message: m}`),
			"capability w: precondition p: deny_when.starts_with: a literal for starts_with must be a string, not a array"},
		{"value leaf", pre(`{id: p, deny_when: {field: f, value: 1, equals: 1}, message: m}`),
			"capability w: precondition p: deny_when: a leaf has exactly one left-hand side: field or value, not both"},
		{"depth", pre(`{id: p, deny_when: ` + strings.Repeat("{not: ", 16) + "{field: f, equals: 1}" + strings.Repeat("}", 16) + `, message: m}`),
			"nested deeper than 16 operands and conditions"},
		{"view-less capability", pre(`{id: p, capability: n, bind: {a: {param: a}}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: capability: n has no view to answer it: give n `view: NAME`"},
		{"effects", head + "    effects:\n      - {collection: orders, id: {param: a}, set: {\"lines.{k}\": {field: x}}}\n",
			`capability w: effects[0].set.lines.{k}: path "lines.{k}": {k} is neither a parameter of w`},
		{"effect row", head + "    effects:\n      - {collection: orders, id: {param: a}, set: {total: {field: x}}}\n",
			"capability w: effects[0].set.total: field reads the effect's row, and an effect without view or capability has none"},
		{"item placeholder", strings.Replace(head, "id: \"{a}\"", "id: \"{item}\"", 1),
			"view v: document.id: {item}: item placeholders need for_each"},
		{"let name", pre(`{id: p, let: {a: {value: 1}}, deny_when: {field: f, equals: 1}, message: m}`),
			`capability w: precondition p: let.a: "a" is a parameter of w; a let needs a name of its own`},
		{"let row", pre(`{id: p, let: {x: {value: {field: y}}}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: let.x.value: field reads the let's row, and a let without view or capability has none"},
		{"let query", pre(`{id: p, let: {x: {for_each: {param: items, as: it}, view: v, value: {field: y}}}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: let.x.bind.a: the view's parameter a is not bound"},
		{"let depth", pre(`{id: p, let: {x: {value: ` + strings.Repeat("{add: [1, ", 16) + "1" + strings.Repeat("]}", 16) + `}}, deny_when: {field: f, equals: 1}, message: m}`),
			"capability w: precondition p: let.x.value" + strings.Repeat(".add[1]", 16) + ": nested deeper than 16 operands and conditions"},
		{"effect when", head + "    effects:\n      - {collection: c, id: {param: a}, when: {field: source, equals: gift_card}, set: {s: 1}}\n",
			"capability w: effects[0].when.field: field reads the effect's row, and an effect without view or capability has none"},
		{"index from the end", pre(`{id: p, view: v, bind: {a: {param: items.-0.id}}, deny_when: {field: f, equals: 1}, message: m}`),
			`capability w: precondition p: bind.a: path "items.-0.id": -0 is not an index from the end`},
		{"set from the end", head + "    effects:\n      - {collection: c, id: {param: a}, set: {\"lines.-1\": 1}}\n",
			`capability w: effects[0].set.lines.-1: path "lines.-1": -1 does not name a place to set`},
		{"version", strings.Replace(head, "version: 2", "version: 9", 1), "version: 9 is not a supported version (want 1 to 4)"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(c.doc), 0o644))
			prefix := "domain " + strings.TrimSuffix(filepath.Base(path), ".yaml") + ": "

			code, out, _ := runCLI("domain", "validate", path)
			assert.Equal(t, 1, code, out)
			assert.Contains(t, out, "INVALID  "+path)
			assert.Contains(t, out, "  "+path+": "+prefix, "the domain is named after the file")
			assert.Contains(t, out, c.want)

			code, out, _ = runCLI("domain", "validate", "--output", "json", path)
			assert.Equal(t, 1, code)
			var res []struct {
				File   string   `json:"file"`
				Valid  bool     `json:"valid"`
				Errors []string `json:"errors"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			require.Len(t, res, 1)
			assert.False(t, res[0].Valid)
			assert.Equal(t, path, res[0].File)
			assert.Contains(t, strings.Join(res[0].Errors, "\n"), c.want)
		})
	}

	headerless := filepath.Join(repoRoot, "testdata/domains/rfc/headerless/domain.yaml")
	code, out, _ := runCLI("domain", "validate", headerless)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "VALID    "+headerless+"  domain=headerless  capabilities=3  views=1  preconditions=2")
	code, out, _ = runCLI("domain", "validate", "--output", "json", headerless)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `"domain": "headerless"`)
}
