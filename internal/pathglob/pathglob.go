// Package pathglob matches slash-separated repository paths against patterns
// in the style of .gitignore and GitHub's path filters: each segment is a
// path.Match pattern, and a "**" segment matches any number of segments,
// zero included. "docs/**" matches everything under docs; "**/*.md" every
// Markdown file; "go.mod" only the root go.mod. Patterns contain no
// leading slash.
package pathglob

import (
	"fmt"
	"path"
	"strings"
)

// Valid reports whether pattern is well formed (path.Match's syntax per
// segment, no empty segment).
func Valid(pattern string) error {
	if pattern == "" || strings.HasPrefix(pattern, "/") {
		return fmt.Errorf("pattern %q: must be a non-empty relative path pattern", pattern)
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "" {
			return fmt.Errorf("pattern %q: empty segment", pattern)
		}
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	return nil
}

// Match reports whether the repository path name matches pattern. A
// malformed pattern matches nothing.
func Match(pattern, name string) bool {
	return match(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func match(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of ** and try every split point.
			rest := pat[1:]
			for i := 0; i <= len(segs); i++ {
				if match(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		ok, err := path.Match(pat[0], segs[0])
		if err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
