package page

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"runtime"
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
		// Characters Unicode draws as nothing, and the braille blank.
		{"a\u115fb", `a<mark class="esc" title="hidden character U+115F">\u115f</mark>b`},
		{"\u1160", `<mark class="esc" title="hidden character U+1160">\u1160</mark>`},
		{"\u3164", `<mark class="esc" title="hidden character U+3164">\u3164</mark>`},
		{"\uffa0", `<mark class="esc" title="hidden character U+FFA0">\uffa0</mark>`},
		{"\u2800", `<mark class="esc" title="hidden character U+2800">\u2800</mark>`},
		{"a\u034fb", `a<mark class="esc" title="hidden character U+034F">\u034f</mark>b`},
		// Combining marks: of no one script, or on another script's
		// character, marked; a script's own on its characters, as written.
		{"=\u0338", `=<mark class="esc" title="hidden character U+0338">\u0338</mark>`},
		{"cafe\u0301", `cafe<mark class="esc" title="hidden character U+0301">\u0301</mark>`},
		{"x\u20dd", `x<mark class="esc" title="hidden character U+20DD">\u20dd</mark>`},
		{"a\u094d", `a<mark class="esc" title="hidden character U+094D">\u094d</mark>`},
		{"\u0915\u094d\u0937", "\u0915\u094d\u0937"},
		{"\u05e9\u05c1", "\u05e9\u05c1"},
		// A script's own marks, up to three on one character; beyond,
		// stacked over the lines above: marked.
		{"\u05e9\u05bc\u05b8\u0591", "\u05e9\u05bc\u05b8\u0591"},
		{"\u0434" + strings.Repeat("\u0483", 3) + "\u0434\u0483", "\u0434" + strings.Repeat("\u0483", 3) + "\u0434\u0483"},
		{"\u0434" + strings.Repeat("\u0483", 40) + "x",
			"\u0434" + strings.Repeat("\u0483", 3) + `<mark class="esc" title="37 hidden characters U+0483">` + strings.Repeat(`\u0483`, 37) + "</mark>x"},
		{"\u05e9" + strings.Repeat("\u05c4", 40) + strings.Repeat("\u05b4", 40),
			"\u05e9" + strings.Repeat("\u05c4", 3) + `<mark class="esc" title="37 hidden characters U+05C4">` + strings.Repeat(`\u05c4`, 37) +
				`</mark><mark class="esc" title="40 hidden characters U+05B4">` + strings.Repeat(`\u05b4`, 40) + "</mark>"},
		// A run of one hidden character is one mark, every escape in it.
		{"a" + strings.Repeat("\u200b", 5) + "\u200cb", `a<mark class="esc" title="5 hidden characters U+200B">` + strings.Repeat(`\u200b`, 5) +
			`</mark><mark class="esc" title="hidden character U+200C">\u200c</mark>b`},
		{"\xff\xff\xff", `<mark class="esc" title="3 bytes that are not UTF-8">\ufffd\ufffd\ufffd</mark>`},
		// Long runs of blanks after the indentation are marked, kept.
		{"w" + strings.Repeat(" ", 300) + "; rm -rf /",
			`w<mark class="blank" title="300 spaces and tabs">` + strings.Repeat(" ", 300) + `</mark>; rm -rf /`},
		{"a       b", "a       b"},
		{"        indented\n        too", "        indented\n        too"},
		// Outside JSON text, a backslash is only a character.
		{`\u0065`, `\u0065`},
	} {
		assert.Equal(t, c.want, string(show(c.in)), "%q", c.in)
	}
	assert.Equal(t, `a\u202eb`, plain("a\u202eb"))
	assert.Equal(t, `=\u0338 \u3164`, plain("=\u0338 \u3164"))
	assert.Equal(t, "\u0434\u0483\u0483\u0483"+`\u0483`, plain("\u0434\u0483\u0483\u0483\u0483"))
}

func TestShowJSON(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a value in escapes", `{"cmd":"\u0065\u0076\u0069\u006c"}`,
			"{\n  &#34;cmd&#34;: &#34;" + `<mark class="uesc" title="escaped: evil" data-text="evil">\u0065\u0076\u0069\u006c</mark>` + "&#34;\n}"},
		{"a hidden character in an escape", `["a\u202eb"]`,
			"[\n  &#34;a" + `<mark class="uesc" title="escaped: [U+202E]" data-text="[U+202E]">\u202e</mark>` + "b&#34;\n]"},
		{"a run of one hidden character in escapes", `"` + strings.Repeat(`\u200b`, 4) + `"`,
			`&#34;<mark class="uesc" title="escaped: [U+200B]×4" data-text="[U+200B]×4">` + strings.Repeat(`\u200b`, 4) + `</mark>&#34;`},
		{"a surrogate pair", `"\ud83d\ude00"`, `&#34;<mark class="uesc" title="escaped: 😀" data-text="😀">\ud83d\ude00</mark>&#34;`},
		{"markup in an escape", `"\u003c"`, `&#34;<mark class="uesc" title="escaped: &lt;" data-text="&lt;">\u003c</mark>&#34;`},
		{"an escaped backslash is no \\u escape", `"\\u0065"`, `&#34;\\u0065&#34;`},
		{"other escapes as they are", `"a\"b\n"`, `&#34;a\&#34;b\n&#34;`},
		{"long blanks in a value", `{"repo":"w` + strings.Repeat(" ", 300) + `; rm -rf /"}`,
			"{\n  &#34;repo&#34;: &#34;w" + `<mark class="blank" title="300 spaces and tabs">` + strings.Repeat(" ", 300) + "</mark>; rm -rf /&#34;\n}"},
		{"deep indentation unmarked", `[[[[[[1]]]]]]`, indentedText(t, `[[[[[[1]]]]]]`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, string(showJSON(json.RawMessage(c.in))))
		})
	}
}

func indentedText(t *testing.T, raw string) string {
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, []byte(raw), "", "  "))
	return b.String()
}

// FuzzShow: show and render never panic, leaves no hidden character, and adds no
// markup but its marks.
func FuzzShow(f *testing.F) {
	for _, s := range []string{"", "<script>", "\u202e\u2066\u200b", "\xff\xfe", "a\x00b", "\U000E0001", "=\u0338", "a         b"} {
		f.Add(s)
	}
	f.Add(`"\u0065\u202e\ud800"`)
	f.Add("\\\x1e") // a backslash before a control, outside any escape
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{string(show(s)), string(render(s, true))} {
			checkShown(t, out)
		}
	})
}

func checkShown(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out))
	g := newGlyphs()
	for _, r := range out {
		require.False(t, g.hides(r), "%q left in %q", r, out)
	}
	bare := marks.ReplaceAllString(out, "")
	require.NotContains(t, bare, "<")
	_ = html.UnescapeString(bare)
}

// marks are the only markup show and render add.
var marks = regexp.MustCompile(`<mark class="(esc|blank)" title="[^"<>]*">|<mark class="uesc" title="[^"<>]*" data-text="[^"<>]*">|</mark>`)

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
			ds, _ := diffs(json.RawMessage(c.args))
			for _, d := range ds {
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

// The agent's arguments with many edit pairs under one long member name:
// at most maxDiffs diffs are shown (the rest only in the arguments), and
// a path is built only for a diff shown, so the long name costs memory
// linear in its length (quadratic, one copy per pair).
func TestDiffsOfALongNameAreBounded(t *testing.T) {
	const name, pairs = 64 << 10, 4000
	args := func(key string) json.RawMessage {
		return json.RawMessage(`{"` + key + `":[` + strings.TrimSuffix(strings.Repeat(`{"old":"a","new":"b"},`, pairs), ",") + `]}`)
	}
	measure := func(key string) ([]diffView, int, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ds, more := diffs(args(key))
		runtime.ReadMemStats(&after)
		return ds, more, after.TotalAlloc - before.TotalAlloc
	}
	_, _, short := measure("k")
	ds, more, long := measure(strings.Repeat("k", name))
	assert.Less(t, long, short+uint64(4*maxDiffs*name), "a %d-byte name allocated %d bytes, against %d under a one-byte name", name, long, short)
	assert.Len(t, ds, maxDiffs)
	assert.Equal(t, pairs-maxDiffs, more)
	assert.Equal(t, "/"+strings.Repeat("k", name)+"/0", ds[0].Path)
}
