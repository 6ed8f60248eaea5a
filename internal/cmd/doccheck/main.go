// Command doccheck checks the repository's Markdown, for scripts/check-tree.sh:
//
//	go run ./internal/cmd/doccheck links FILE.md...
//	go run ./internal/cmd/doccheck layout README.md DIR...
//
// links: every relative link of each file (inline, image or reference
// definition; links with a scheme such as https: or mailto: are skipped)
// names a file or directory that exists inside the repository, and a
// #fragment into a Markdown file names one of its headings, by GitHub's
// anchor rules (see slug).
//
// layout: the README's "Layout" section (the level-2 heading "Layout" to the
// next heading of level 2 or less) names every DIR literally: as `host/eventlog`
// or `host/eventlog/`, not only through a longer path such as host/eventlog/x.
//
// Paths are relative to the working directory, the repository's root. Each
// problem is printed as FILE:LINE: problem (FILE: problem for layout), and
// the exit code is 1 when there is one, 2 on a usage or read error.
package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || (args[0] != "links" && args[0] != "layout") {
		fmt.Fprintln(stderr, "usage: doccheck links FILE.md... | doccheck layout README.md DIR...")
		return 2
	}
	var problems []string
	var err error
	switch args[0] {
	case "links":
		problems, err = checkLinks(".", args[1:])
	case "layout":
		var b []byte
		b, err = os.ReadFile(args[1])
		if err == nil {
			problems = checkLayout(args[1], string(b), args[2:])
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "doccheck:", err)
		return 2
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// line is one line of a Markdown file with its code spans blanked, or
// skipped when it lies in a fenced code block.
type line struct {
	n    int    // 1-based
	text string // code spans' contents replaced by spaces
	code bool   // inside a fenced code block (or its fence)
}

var fence = regexp.MustCompile("^ {0,3}(```+|~~~+)")

// scan splits md into lines, marking fenced code blocks and blanking the
// contents of code spans, so that neither yields links or headings.
func scan(md string) []line {
	raw := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	out := make([]line, len(raw))
	open := "" // the fence that opened the current block
	for i, l := range raw {
		out[i] = line{n: i + 1, text: l}
		if m := fence.FindStringSubmatch(l); m != nil {
			switch {
			case open == "":
				open = m[1]
				out[i].code = true
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(l[strings.Index(l, m[1])+len(m[1]):]) == "":
				open = ""
				out[i].code = true
				continue
			}
		}
		if open != "" {
			out[i].code = true
			continue
		}
		out[i].text = blankCodeSpans(l)
	}
	return out
}

// blankCodeSpans replaces the contents of each code span of l (a run of n
// backticks to the next run of exactly n) by spaces, keeping the backticks.
func blankCodeSpans(l string) string {
	b := []byte(l)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run0(b, i, '`')
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run0(b, j, '`')
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i + n; k < end; k++ {
			b[k] = ' '
		}
		i = end + n
	}
	return string(b)
}

func run0(b []byte, i int, c byte) int {
	n := 0
	for i+n < len(b) && b[i+n] == c {
		n++
	}
	return n
}

var (
	atx        = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setext     = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*(?:name|id)="([^"]+)"`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// heading is a heading's level and its text as written.
type heading struct {
	level int
	text  string
	line  int
}

// headings returns md's ATX and setext headings, outside code blocks. The
// text is taken from the raw line, code spans included.
func headings(md string) []heading {
	lines := scan(md)
	raw := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var hs []heading
	for i, l := range lines {
		if l.code {
			continue
		}
		if m := atx.FindStringSubmatch(l.text); m != nil {
			// Match again on the raw line: code spans are part of the text.
			r := atx.FindStringSubmatch(raw[i])
			hs = append(hs, heading{level: len(m[1]), text: r[2], line: l.n})
			continue
		}
		if i > 0 && setext.MatchString(l.text) {
			prev := lines[i-1]
			p := strings.TrimSpace(prev.text)
			if !prev.code && p != "" && !strings.HasPrefix(p, "|") && !strings.HasPrefix(p, "#") && !strings.HasPrefix(p, "- ") && !strings.HasPrefix(p, "* ") {
				level := 2
				if strings.HasPrefix(strings.TrimSpace(l.text), "=") {
					level = 1
				}
				hs = append(hs, heading{level: level, text: strings.TrimSpace(raw[i-1]), line: prev.n})
			}
		}
	}
	return hs
}

// slug is GitHub's anchor for a heading's text: the text as rendered (links
// by their text, no markup), lower-cased, every character removed but
// letters, digits, marks, underscores, hyphens and spaces, and each space
// made a hyphen.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor md defines: each heading's slug, the second
// and later uses of one slug suffixed -1, -2, …, and explicit HTML anchors.
func anchors(md string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, h := range headings(md) {
		s := slug(h.text)
		a := s
		if n := seen[s]; n > 0 {
			a = fmt.Sprintf("%s-%d", s, n)
		}
		seen[s]++
		set[a] = true
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(md, -1) {
		set[m[1]] = true
	}
	return set
}

// link is one link destination and the line it is on.
type link struct {
	line int
	dest string
}

var refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:[ \t]*(\S+)`)

// links returns md's link destinations outside code: inline links and
// images `[text](dest "title")`, and reference definitions `[ref]: dest`.
func links(md string) []link {
	var out []link
	for _, l := range scan(md) {
		if l.code {
			continue
		}
		if m := refDef.FindStringSubmatch(l.text); m != nil {
			out = append(out, link{l.n, strings.Trim(m[1], "<>")})
			continue
		}
		t := l.text
		for i := 0; i+1 < len(t); i++ {
			if t[i] != ']' || t[i+1] != '(' {
				continue
			}
			if d, ok := destination(t[i+2:]); ok {
				out = append(out, link{l.n, d})
			}
		}
	}
	return out
}

// destination reads a link destination at the start of s (just after
// "]("): <…>, or up to the parenthesis that closes the link, parentheses
// balanced, an optional title after a space.
func destination(s string) (string, bool) {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "<") {
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return "", false
		}
		return s[1:end], true
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return strings.TrimSpace(s[:i]), true
			}
			depth--
		case ' ':
			if depth == 0 {
				return s[:i], true
			}
		}
	}
	return "", false
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkLinks checks every relative link of files, which are paths relative
// to root (the repository's root), and returns the problems found.
func checkLinks(root string, files []string) ([]string, error) {
	rootAbs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		a := anchors(string(b))
		cache[path] = a
		return a, nil
	}
	var problems []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		for _, l := range links(string(b)) {
			if p := checkLink(rootAbs, root, f, l.dest, anchorsOf); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", f, l.line, l.dest, p))
			}
		}
	}
	return problems, nil
}

// checkLink returns what is wrong with the link dest in the file from, or "".
func checkLink(rootAbs, root, from, dest string, anchorsOf func(string) (map[string]bool, error)) string {
	if dest == "" {
		return "empty link"
	}
	if scheme.MatchString(dest) || strings.HasPrefix(dest, "//") {
		return "" // http(s), mailto and the like are not checked
	}
	path, frag, _ := strings.Cut(dest, "#")
	if q := strings.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	p, err := url.PathUnescape(path)
	if err != nil {
		return "not a valid path: " + err.Error()
	}
	target := filepath.ToSlash(from) // a fragment alone: this file
	if p != "" {
		if strings.HasPrefix(p, "/") {
			target = filepath.ToSlash(filepath.Clean(strings.TrimPrefix(p, "/")))
		} else {
			target = filepath.ToSlash(filepath.Join(filepath.Dir(from), p))
		}
		abs := filepath.Join(rootAbs, target)
		if rel, err := filepath.Rel(rootAbs, abs); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "points outside the repository"
		}
		info, err := os.Stat(filepath.Join(root, target))
		if err != nil {
			return fmt.Sprintf("%s does not exist", target)
		}
		if info.IsDir() {
			if frag != "" {
				return fmt.Sprintf("%s is a directory: it has no anchor %q", target, frag)
			}
			return ""
		}
	}
	if frag == "" || !strings.HasSuffix(strings.ToLower(target), ".md") {
		return ""
	}
	a, err := anchorsOf(target)
	if err != nil {
		return err.Error()
	}
	if !a[frag] {
		return fmt.Sprintf("no heading of %s has the anchor #%s", target, frag)
	}
	return ""
}

// layoutSection returns the lines of the README's Layout section and the
// line number of its heading (0 when there is none).
func layoutSection(md string) (string, int) {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	hs := headings(md)
	for i, h := range hs {
		if h.level != 2 || strings.TrimSpace(h.text) != "Layout" {
			continue
		}
		end := len(lines)
		for _, next := range hs[i+1:] {
			if next.level <= 2 {
				end = next.line - 1
				break
			}
		}
		return strings.Join(lines[h.line:end], "\n"), h.line
	}
	return "", 0
}

func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// names reports whether text names dir literally: dir or dir/, not as part
// of a longer path.
func names(text, dir string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], dir)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(dir)
		i = start + 1
		if start > 0 && isPathByte(text[start-1]) {
			continue
		}
		if end < len(text) && text[end] == '/' {
			end++
		}
		if end < len(text) && isPathByte(text[end]) {
			continue
		}
		return true
	}
}

// checkLayout returns a problem for each of dirs (package directories
// relative to the module root) that the Layout section of the README
// file does not name.
func checkLayout(file, md string, dirs []string) []string {
	section, at := layoutSection(md)
	if at == 0 {
		return []string{file + `: no "## Layout" section: it must name every package directory`}
	}
	var problems []string
	for _, d := range dirs {
		d = strings.TrimSuffix(filepath.ToSlash(d), "/")
		if d == "" || d == "." {
			continue
		}
		if !names(section, d) {
			problems = append(problems, fmt.Sprintf("%s: the Layout section (line %d) does not name the package directory %s: add it there", file, at, d))
		}
	}
	return problems
}
