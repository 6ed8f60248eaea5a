package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Limits", "limits"},
		{"Install", "install"},
		{"gatehost serve", "gatehost-serve"},
		{"HTTP server (`gatehost serve`)", "http-server-gatehost-serve"},
		{"The `store:` section", "the-store-section"},
		{"The edge: trust baseline, identity, caps", "the-edge-trust-baseline-identity-caps"},
		{"Plugins: `path` or `builtin`", "plugins-path-or-builtin"},
		{"vars and under (v4)", "vars-and-under-v4"},
		{"1. Get gatehost and build the CLI", "1-get-gatehost-and-build-the-cli"},
		{"Decision (`plugins/merge.Decide`)", "decision-pluginsmergedecide"},
		{"Decision-log export", "decision-log-export"},
		{"snake_case keys", "snake_case-keys"},
		{"A  double space", "a--double-space"},
		{"Why — an em dash", "why--an-em-dash"},
		{"Café ünïcode", "café-ünïcode"},
		{"A [linked](other.md) word", "a-linked-word"},
		{"  padded  ", "padded"},
		{"What's new?", "whats-new"},
		{"Tests on a loaded machine §3", "tests-on-a-loaded-machine-3"},
	} {
		assert.Equal(t, c.want, slug(c.heading), "slug(%q)", c.heading)
	}
}

func TestAnchors(t *testing.T) {
	md := "# Title\n\n## Rules, in order\n\ntext\n\n## Codes\n\n### Rules, in order\n\n" +
		"```sh\n# not a heading\n## Codes\n```\n\n#hashtag is not a heading\n\n" +
		"Setext heading\n--------------\n\n## Codes ##\n\n<a name=\"custom\"></a>\n"
	got := anchors(md)
	for _, want := range []string{"title", "rules-in-order", "rules-in-order-1", "codes", "codes-1", "setext-heading", "custom"} {
		assert.True(t, got[want], "anchor %q missing from %v", want, got)
	}
	for _, not := range []string{"not-a-heading", "codes-2", "hashtag-is-not-a-heading"} {
		assert.False(t, got[not], "anchor %q must not be defined", not)
	}
}

func TestLinks(t *testing.T) {
	md := "See [the spec](abi/SPEC.md) and [`docs/X.md`](docs/X.md#a-b).\n" +
		"Not `[code](span.md)`; ![img](pic.png \"title\"); [p](a/(b).md).\n" +
		"```\n[fenced](no.md)\n```\n" +
		"[ref]: ref.md#x\n" +
		"[web](https://example.com) [mail](mailto:a@b.c) [here](#local)\n"
	assert.Equal(t, []link{
		{1, "abi/SPEC.md"}, {1, "docs/X.md#a-b"},
		{2, "pic.png"}, {2, "a/(b).md"},
		{6, "ref.md#x"},
		{7, "https://example.com"}, {7, "mailto:a@b.c"}, {7, "#local"},
	}, links(md))
}

func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("README.md", "# Top\n\n## Install\n\n[ok](docs/A.md#the-store-section) [dir](docs/)\n"+
		"[bad](docs/B.md) [anchor](docs/A.md#nope) [self](#install) [selfbad](#gone)\n"+
		"[out](../x.md) [web](https://example.com/x.md#y) [code](main.go#L3)\n")
	write("docs/A.md", "# A\n\n## The `store:` section\n\n[up](../README.md#install) [up2](../README.md#top)\n")
	write("main.go", "package main\n")
	problems, err := checkLinks(root, []string{"README.md", "docs/A.md"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		`README.md:6: link "docs/B.md": docs/B.md does not exist`,
		`README.md:6: link "docs/A.md#nope": no heading of docs/A.md has the anchor #nope`,
		`README.md:6: link "#gone": no heading of README.md has the anchor #gone`,
		`README.md:7: link "../x.md": points outside the repository`,
	}, problems)
}

func TestCheckLayout(t *testing.T) {
	readme := "# x\n\n## Layout\n\n| path | what |\n|---|---|\n" +
		"| `host/` | the host |\n| `host/eventlog`, `sdk/gatekit` | log; kit |\n" +
		"| `internal/engine/rewrite` | rewrite |\n\n## Links\n\n`internal/testing/pgtest` is named after the section.\n"
	for _, c := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"all named", []string{"host", "host/eventlog", "sdk/gatekit", "internal/engine/rewrite", "."}, nil},
		{"a parent is not named by its child", []string{"sdk", "internal/engine"}, []string{
			"README.md: the Layout section (line 3) does not name the package directory sdk: add it there",
			"README.md: the Layout section (line 3) does not name the package directory internal/engine: add it there",
		}},
		{"a suffix is not the directory", []string{"eventlog", "gatekit"}, []string{
			"README.md: the Layout section (line 3) does not name the package directory eventlog: add it there",
			"README.md: the Layout section (line 3) does not name the package directory gatekit: add it there",
		}},
		{"named only outside the section", []string{"internal/testing/pgtest"}, []string{
			"README.md: the Layout section (line 3) does not name the package directory internal/testing/pgtest: add it there",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, checkLayout("README.md", readme, c.dirs))
		})
	}
	assert.Equal(t, []string{`README.md: no "## Layout" section: it must name every package directory`},
		checkLayout("README.md", "# x\n\n## Layouts\n", []string{"host"}))
}
