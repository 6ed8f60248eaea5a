package page

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShow(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{`<b>&"'`, "&lt;b&gt;&amp;&#34;&#39;"},
		{"a\u202eb", `a<mark class="esc" title="hidden character U+202E">\u202e</mark>b`},
		{"\u200b", `<mark class="esc" title="hidden character U+200B">\u200b</mark>`},
		{"x\x00y", `x<mark class="esc" title="hidden character U+0000">\u0000</mark>y`},
		{"nb\u00a0sp", `nb<mark class="esc" title="hidden character U+00A0">\u00a0</mark>sp`},
		{"tag\U000E0041", `tag<mark class="esc" title="hidden character U+E0041">\udb40\udc41</mark>`},
		{"bad\xffbyte", `bad<mark class="esc" title="a byte that is not UTF-8">\ufffd</mark>byte`},
		{"line\nbreak\ttab", "line\nbreak\ttab"},
		{"", ""},
	} {
		assert.Equal(t, c.want, string(show(c.in)), "%q", c.in)
	}
	assert.Equal(t, `a\u202eb`, plain("a\u202eb"))
}

// FuzzShow: show never panics, leaves no hidden character, and adds no
// markup but its marks.
func FuzzShow(f *testing.F) {
	for _, s := range []string{"", "<script>", "\u202e\u2066\u200b", "\xff\xfe", "a\x00b", "\U000E0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(show(s))
		require.True(t, utf8.ValidString(out))
		for _, r := range out {
			require.False(t, hidden(r), "%q left in %q", r, out)
		}
		bare := strings.NewReplacer(`<mark class="esc" title="`, "", `">`, "", "</mark>", "").Replace(out)
		require.NotContains(t, bare, "<")
		_ = html.UnescapeString(bare)
	})
}

func TestDiffs(t *testing.T) {
	for _, c := range []struct {
		name, args string
		want       []string // each diff: path and its lines, "-x", "+y", " z"
	}{
		{"filesystem edit_file", `{"path":"a","edits":[{"oldText":"a\nb\nc","newText":"a\nB\nc"},{"oldText":"","newText":"new"}]}`,
			[]string{"/edits/0: a -b +B c", "/edits/1: - +new"}},
		{"str_replace at the top", `{"old_str":"x","new_str":"x\ny"}`, []string{"/: x +y"}},
		{"nested and escaped keys", `{"a/b":{"c~d":[{"old_string":"1","new_string":"2"}]}}`, []string{"/a~1b/c~0d/0: -1 +2"}},
		{"not strings", `{"oldText":1,"newText":"2"}`, nil},
		{"half a pair", `{"oldText":"1"}`, nil},
		{"not an object", `"oldText"`, nil},
		{"not JSON", `{`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, d := range diffs(json.RawMessage(c.args)) {
				parts := []string{d.Path + ":"}
				for _, l := range d.Lines {
					parts = append(parts, map[string]string{"same": "", "del": "-", "add": "+"}[l.Kind]+l.Text)
				}
				got = append(got, strings.Join(parts, " "))
			}
			assert.Equal(t, c.want, got)
		})
	}
}

func TestLineDiffLarge(t *testing.T) {
	a := strings.Repeat("line\n", 3000)
	b := strings.Repeat("other\n", 3000)
	d := lineDiff(a, b) // over the table's bound: all removed, then all added
	require.Len(t, d, 6002)
	assert.Equal(t, "del", d[0].Kind)
	assert.Equal(t, "add", d[len(d)-1].Kind)
}
