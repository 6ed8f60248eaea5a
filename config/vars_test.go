package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
)

// TestDomainVars: domains.NAME.vars sets the variables of the fs catalog
// (testdata/mcp/fs-domain.yaml): a string, or an argument of an MCP
// upstream's command, given on the command line or in mcp.upstreams. A
// var the catalog reads must be set (or have a default in the catalog),
// and only declared vars may be; an upstream not known here leaves it
// unbound.
func TestDomainVars(t *testing.T) {
	dir := t.TempDir()
	catalog, err := filepath.Abs("../testdata/mcp/fs-domain.yaml")
	require.NoError(t, err)
	db, err := filepath.Abs("../testdata/mcp/empty-db.json")
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	cases := []struct {
		name     string
		vars     string // the vars: value; "" leaves the key out
		mcp      string // an mcp: section
		given    map[string][]string
		root     string // the bound root's public/; "" unbound
		err      string
		unbounds bool
	}{
		{name: "an absolute string", vars: "{root: /srv/files}", root: "/srv/files/public"},
		{name: "a relative string is relative to the config", vars: "{root: files}", root: filepath.Join(dir, "files", "public")},
		{name: "the last argument of the upstream after --", vars: "{root: {upstream: fs, arg: -1}}",
			given: map[string][]string{"fs": {"mcp-server-filesystem", "/srv/shared"}}, root: "/srv/shared/public"},
		{name: "a relative argument is relative to the working directory", vars: "{root: {upstream: fs, arg: 1}}",
			given: map[string][]string{"fs": {"mcp-server-filesystem", "shared"}}, root: filepath.Join(wd, "shared", "public")},
		{name: "an upstream of the file", vars: "{root: {upstream: FS, arg: -1}}",
			mcp: "mcp: {upstreams: {fs: {command: [npx, -y, server, /srv/cfg]}}}", root: "/srv/cfg/public"},
		{name: "the command line before the file", vars: "{root: {upstream: fs, arg: -1}}",
			mcp: "mcp: {upstreams: {fs: {command: [npx, /srv/cfg]}}}", given: map[string][]string{"fs": {"x", "/srv/cli"}}, root: "/srv/cli/public"},
		{name: "an upstream not known here leaves it unbound", vars: "{root: {upstream: fs, arg: -1}}",
			given: map[string][]string{"everything": {"mcp-server-everything"}}, unbounds: true},
		{name: "unset takes the catalog's default (the last argument of upstream fs)",
			given: map[string][]string{"fs": {"mcp-server-filesystem", "/srv/default"}}, root: "/srv/default/public"},
		{name: "unset, and the default's upstream is not here: unbound", vars: "{}", unbounds: true},
		{name: "not declared", vars: "{root: /srv, rooot: /srv}", err: "domains.fs.vars.rooot: catalog fs declares no var rooot (it declares root)"},
		{name: "a number", vars: "{root: 7}", err: "domains.fs.vars.root: want a string or {upstream: NAME, arg: N}, not 7"},
		{name: "a list", vars: "{root: [/srv]}", err: "domains.fs.vars.root: want a string or {upstream: NAME, arg: N}"},
		{name: "empty", vars: `{root: ""}`, err: `domains.fs.vars.root: "" is not an absolute path`},
		{name: "an upstream without arg", vars: "{root: {upstream: fs}}", err: "domains.fs.vars.root: want a string or {upstream: NAME, arg: N}"},
		{name: "an arg that is not an integer", vars: "{root: {upstream: fs, arg: last}}", err: "domains.fs.vars.root.arg: want an integer"},
		{name: "an arg past the command", vars: "{root: {upstream: fs, arg: -3}}",
			given: map[string][]string{"fs": {"srv", "/d"}}, err: `domains.fs.vars.root.arg: upstream fs's command has no argument -3`},
		{name: "a url upstream", vars: "{root: {upstream: fs, arg: -1}}",
			mcp: "mcp: {upstreams: {fs: {url: http://127.0.0.1:1/mcp}}}", err: "domains.fs.vars.root: upstream fs has no command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "gatehost.yaml")
			body := fmt.Sprintf("event_log: {path: events.jsonl}\n%s\ndomains:\n  fs:\n    catalog: %s\n    source: {path: %s}\n", c.mcp, catalog, db)
			if c.vars != "" {
				body += "    vars: " + c.vars + "\n"
			}
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			l, err := LoadWith(p, Options{Upstreams: c.given})
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			cat := l.Host.Domains["fs"].Catalog
			if c.unbounds {
				assert.Equal(t, []string{"root"}, cat.Unbound("write_file"))
				return
			}
			assert.Empty(t, cat.Unbound("write_file"))
			w, ok := cat.Capability("write_file")
			require.True(t, ok)
			assert.Equal(t, &abi.Operand{Kind: abi.OperandLiteral, Value: c.root}, w.Preconditions[0].Require.Match.Under)
		})
	}
}

// TestDomainVarRequired: a var without a default that the config does not
// set refuses to load, naming the key.
func TestDomainVarRequired(t *testing.T) {
	dir := t.TempDir()
	cat := `domain: d
version: 4
vars:
  root: {description: the served directory}
capabilities:
  write_file:
    kind: update
    parameters: [path]
    preconditions:
      - id: under_root
        require: {match: {field: path, under: {var: root}}}
        message: writes under the root only
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(cat), 0o644))
	db, err := filepath.Abs("../testdata/mcp/empty-db.json")
	require.NoError(t, err)
	p := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("event_log: {path: events.jsonl}\ndomains:\n  d:\n    catalog: d.yaml\n    source: {path: %s}\n", db)), 0o644))
	_, err = LoadWith(p, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "domains.d.vars.root: required: catalog d reads var root (the served directory); set it in the config")
}
