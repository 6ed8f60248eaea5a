package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// view is one request as the page shows it.
type view struct {
	ID, URL                                  string
	Tool, Upstream, Pipeline, Session, Front string
	Effect, Caller                           string
	Findings                                 []abi.Finding
	Created, Expires, DecidedAt              time.Time
	ExpiresIn                                string
	State, StateText                         string
	DecidedBy, Note                          string
	Args                                     template.HTML
	ArgBytes                                 int
	// Rendered is the bytes of Args and the diffs as rendered, what the
	// list's bound counts (a hidden character renders far larger than
	// it is sent).
	Rendered           int
	Diffs              []diffView
	MoreDiffs          int // pairs past maxDiffs, shown only in Args
	Mine               bool
	Prefix, CSRF, From string
}

// Display states: a request's State, or expired.
const stateExpired = "expired"

func (h *handler) view(r approval.Request, me *abi.Principal, csrf, from string) view {
	now := h.o.Now()
	v := view{ID: r.ID, URL: h.prefix + "/requests/" + r.ID, Tool: r.Tool, Upstream: r.Upstream,
		Pipeline: r.Pipeline, Session: r.Session, Front: r.Front, Effect: r.Effect,
		Caller: principalName(r.Caller), Findings: r.Findings, Created: r.CreatedAt, Expires: r.ExpiresAt,
		DecidedAt: r.DecidedAt, State: r.State, DecidedBy: principalName(r.DecidedBy), Note: r.Note,
		ArgBytes: len(r.Arguments), Prefix: h.prefix, CSRF: csrf, From: from}
	if r.State == approval.StatePending && !r.Open(now) {
		v.State = stateExpired
	}
	v.StateText = map[string]string{approval.StatePending: "Waiting for a decision", approval.StateApproved: "Approved",
		approval.StateUsed: "Approved and run", approval.StateDenied: "Denied", stateExpired: "Expired"}[v.State]
	if v.StateText == "" {
		v.StateText = r.State // a state this page does not know yet: as stored
	}
	if left := r.ExpiresAt.Sub(now); left > 0 {
		v.ExpiresIn = "in " + left.Round(time.Second).String()
	} else {
		v.ExpiresIn = "expired"
	}
	v.Mine = !h.desk.Rule().AllowSelf && approval.SamePrincipal(me, r.Caller)
	v.Args = showJSON(r.Arguments)
	v.Diffs, v.MoreDiffs = diffs(r.Arguments)
	v.Rendered = len(v.Args)
	for i := range v.Diffs {
		v.Rendered += len(v.Diffs[i].Path)
		for j := range v.Diffs[i].Lines {
			l := &v.Diffs[i].Lines[j]
			l.HTML = show(l.Text)
			v.Rendered += len(l.HTML)
		}
	}
	return v
}

// principalName writes a principal as the page shows it, "" for none.
func principalName(p *abi.Principal) string { return approval.PrincipalName(p) }

// signature is the list's version: it changes when a request is opened,
// decided or expires, so that the event stream says when to reload.
func signature(rs []approval.Request, now time.Time) string {
	h := sha256.New()
	for _, r := range rs {
		fmt.Fprintf(h, "%s %s %t\n", r.ID, r.State, r.Open(now))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// order puts the pending requests first, each group newest first (as
// listed).
func order(rs []approval.Request, now time.Time) {
	slices.SortStableFunc(rs, func(a, b approval.Request) int {
		pa, pb := a.Pending(now), b.Pending(now)
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return 0
	})
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"show":  show,
	"plain": plain,
	"clock": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}

// hidden reports a character that would not show as itself: controls,
// formatting (bidirectional overrides, zero-width characters), private
// use, surrogates, line and paragraph separators, spaces other than the
// plain one, whatever Unicode lets a font draw as nothing (the rest of
// Default_Ignorable_Code_Point: Hangul fillers, variation selectors,
// tags), and the braille blank, a symbol drawn empty.
func hidden(r rune) bool {
	if r == '\n' || r == '\t' || r == ' ' {
		return false
	}
	return r == utf8.RuneError || r == '\u2800' ||
		unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp, unicode.Zs,
			unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// maxMarks is how many combining marks one character carries as
// written: enough for what scripts stack in ordinary text (Vietnamese and
// Thai two, pointed Hebrew a dagesh, a vowel and an accent), far below the
// 30 of Unicode's Stream-Safe Text Format (UAX #15), which drawn stacked
// climb over the lines above. Beyond it each mark is written as an escape.
const maxMarks = 3

// glyphs follows the character combining marks attach to, deciding for
// each character in turn whether it is written as an escape (hides).
type glyphs struct {
	base    rune // the last character written as itself, not a mark
	marks   int  // the combining marks on base written as themselves
	escaped bool // the last character was written as an escape
}

func newGlyphs() glyphs { return glyphs{base: '\n'} }

// hides reports r as hidden where it follows: a hidden character, or a
// combining mark (Mn, Me) other than one of a script's own marks on a
// character of that script, as those scripts are written, the first
// maxMarks on it. The marks of no one script (such as U+0301, or U+0338
// drawn across what it follows), marks on another script's character and
// marks stacked beyond a script's use can change or cover what they
// follow. A mark after an escape would sit on the escape's text: marked.
func (g *glyphs) hides(r rune) bool {
	h := hidden(r)
	if !h && unicode.In(r, unicode.Mn, unicode.Me) {
		h = g.escaped || g.marks >= maxMarks || !ownMark(g.base, r)
		if !h {
			g.marks++
			return false
		}
	}
	g.base, g.marks, g.escaped = r, 0, h
	return h
}

// escape notes a character written as an escape by other means.
func (g *glyphs) escape() { g.base, g.marks, g.escaped = utf8.RuneError, 0, true }

// ownMark reports mark as one of a script's own marks on base, a
// character of that script.
func ownMark(base, mark rune) bool {
	for name, t := range unicode.Scripts {
		if unicode.Is(t, mark) {
			return name != "Inherited" && name != "Common" && !hidden(base) && unicode.Is(t, base)
		}
	}
	return false
}

// longBlank is the shortest run of spaces and tabs, after a line's
// indentation, that the page marks: a run that long can push the rest of
// a value out of sight.
const longBlank = 8

// show escapes s for HTML and writes each hidden character as a marked
// \uXXXX escape (valid in a JSON string, where alone such characters can
// stand in the arguments), so that no value can reorder or hide what the
// approver reads; it marks long runs of blanks, which stay as they are.
// A run of one hidden character is one mark holding every escape, so that
// an argument of 85,000 zero-width spaces is one element, not 85,000.
func show(s string) template.HTML { return render(s, false) }

// render is show; with inJSON, s is JSON text, and each run of \u escapes
// in it is marked too, with the text it stands for beside it (a value
// written in escapes reads as what it is).
func render(s string, inJSON bool) template.HTML {
	var b strings.Builder
	g, indent := newGlyphs(), true // indent: only blanks since the line began
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n := run(s[i:], 1)
			title := "a byte that is not UTF-8"
			if n > 1 {
				title = fmt.Sprintf("%d bytes that are not UTF-8", n)
			}
			fmt.Fprintf(&b, `<mark class="esc" title="%s">%s</mark>`, title, strings.Repeat(`\ufffd`, n))
			size *= n
			g.escape()
		case g.hides(r):
			n := run(s[i:], size)
			title := fmt.Sprintf("hidden character U+%04X", r)
			if n > 1 {
				title = fmt.Sprintf("%d hidden characters U+%04X", n, r)
			}
			fmt.Fprintf(&b, `<mark class="esc" title="%s">%s</mark>`, title, strings.Repeat(jsonEscape(r), n))
			size *= n
		case r == ' ' || r == '\t':
			n := len(s[i:]) - len(strings.TrimLeft(s[i:], " \t"))
			if !indent && n >= longBlank {
				fmt.Fprintf(&b, `<mark class="blank" title="%d spaces and tabs">%s</mark>`, n, s[i:i+n])
			} else {
				b.WriteString(s[i : i+n])
			}
			size = n
		case inJSON && r == '\\' && strings.HasPrefix(s[i:], `\u`):
			size = escapes(&b, s[i:])
		case inJSON && r == '\\' && i+1 < len(s) && strings.IndexByte(`"\/bfnrt`, s[i+1]) >= 0:
			b.WriteString(template.HTMLEscapeString(s[i : i+2])) // \" \\ \n and the like: so \\u is no \u
			size = 2
		default:
			b.WriteString(template.HTMLEscapeString(s[i : i+size]))
		}
		indent = r == '\n' || (indent && (r == ' ' || r == '\t'))
		i += size
	}
	return template.HTML(b.String())
}

// run is how many times s begins with its first size bytes.
func run(s string, size int) int {
	n := 1
	for (n+1)*size <= len(s) && s[n*size:(n+1)*size] == s[:size] {
		n++
	}
	return n
}

// escapes writes the run of \uXXXX escapes that s begins with, marked,
// with the text they stand for, and returns the run's length.
func escapes(b *strings.Builder, s string) int {
	n := 0
	for n+6 <= len(s) && s[n] == '\\' && s[n+1] == 'u' {
		n += 6
	}
	var text string
	if n == 0 || json.Unmarshal([]byte(`"`+s[:n]+`"`), &text) != nil {
		b.WriteString(template.HTMLEscapeString(s[:2])) // not JSON: as it is
		return 2
	}
	var says strings.Builder
	g := newGlyphs()
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if g.hides(r) || r == ' ' {
			n := run(text[i:], size) // a run of one character as one
			fmt.Fprintf(&says, "[U+%04X]", r)
			if n > 1 {
				fmt.Fprintf(&says, "×%d", n)
			}
			size *= n
		} else {
			says.WriteRune(r)
		}
		i += size
	}
	fmt.Fprintf(b, `<mark class="uesc" title="escaped: %[1]s" data-text="%[1]s">%s</mark>`,
		template.HTMLEscapeString(says.String()), s[:n])
	return n
}

// plain is s with each hidden character written as its \uXXXX escape,
// for text where no markup can go (the title, attributes).
func plain(s string) string {
	var b strings.Builder
	g := newGlyphs()
	for _, r := range s {
		if g.hides(r) {
			b.WriteString(jsonEscape(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func jsonEscape(r rune) string {
	if r > 0xFFFF {
		a, b := utf16.EncodeRune(r)
		return fmt.Sprintf(`\u%04x\u%04x`, a, b)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// showJSON is the arguments indented, every token as sent.
func showJSON(raw json.RawMessage) template.HTML {
	if len(bytes.TrimSpace(raw)) == 0 {
		return show("(no arguments)")
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return show(string(raw))
	}
	return render(b.String(), true)
}

// A diffView is the line diff of one old/new pair in the arguments.
type diffView struct {
	Path     string // JSON Pointer of the object holding the pair
	Old, New string // the pair's keys
	Lines    []diffLine
	Added    int
	Removed  int
}

type diffLine struct {
	Kind string // "same", "del" or "add"
	Text string
	HTML template.HTML // Text shown (view)
}

// pairs are the keys of edit-like arguments: an object holding both is
// shown as a diff of the old text into the new.
var pairs = [][2]string{
	{"oldText", "newText"}, {"old_text", "new_text"}, {"old_str", "new_str"}, {"old_string", "new_string"},
	{"oldString", "newString"}, {"old", "new"}, {"original", "updated"}, {"search", "replace"}, {"before", "after"},
}

// maxDiffs bounds the diffs a page shows: the arguments are shown whole
// below them, so a pair past the bound is still seen, only not as a diff.
const maxDiffs = 32

// diffs finds the objects in the arguments holding an old/new pair of
// strings, at most maxDiffs of them, and how many more there are. The
// arguments are the agent's: a path is built only for a diff shown (each
// repeats the member names above it, so building one for every element
// under a long name cost the product of the two).
func diffs(raw json.RawMessage) ([]diffView, int) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, 0
	}
	var out []diffView
	more := 0
	var path []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, p := range pairs {
				o, ok1 := v[p[0]].(string)
				n, ok2 := v[p[1]].(string)
				if !ok1 || !ok2 {
					continue
				}
				if len(out) == maxDiffs {
					more++
					continue
				}
				d := diffView{Path: jsonptr.Join(path...), Old: p[0], New: p[1], Lines: lineDiff(o, n)}
				if d.Path == "" {
					d.Path = "/"
				}
				for _, l := range d.Lines {
					switch l.Kind {
					case "add":
						d.Added++
					case "del":
						d.Removed++
					}
				}
				out = append(out, d)
			}
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				path = append(path, k)
				walk(v[k])
				path = path[:len(path)-1]
			}
		case []any:
			for i, e := range v {
				path = append(path, strconv.Itoa(i))
				walk(e)
				path = path[:len(path)-1]
			}
		}
	}
	walk(v)
	return out, more
}

// maxDiffCells bounds the table of a line diff; larger texts are shown as
// all removed, then all added.
const maxDiffCells = 1 << 21

// lineDiff is a line diff of a into b by longest common subsequence.
func lineDiff(a, b string) []diffLine {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	var out []diffLine
	if n*m > maxDiffCells {
		for _, l := range x {
			out = append(out, diffLine{Kind: "del", Text: l})
		}
		for _, l := range y {
			out = append(out, diffLine{Kind: "add", Text: l})
		}
		return out
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				*at(i, j) = *at(i+1, j+1) + 1
			} else {
				*at(i, j) = max(*at(i+1, j), *at(i, j+1))
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{Kind: "same", Text: x[i]})
			i, j = i+1, j+1
		case *at(i+1, j) >= *at(i, j+1):
			out = append(out, diffLine{Kind: "del", Text: x[i]})
			i++
		default:
			out = append(out, diffLine{Kind: "add", Text: y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{Kind: "del", Text: x[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{Kind: "add", Text: y[j]})
	}
	return out
}
