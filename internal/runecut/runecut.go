// Package runecut shortens untrusted text for messages and records without
// splitting a UTF-8 sequence: the one truncation rule of the host, the CLI
// and the built-in gates. It uses the standard library only, so gates
// compiled to WebAssembly import it too.
package runecut

import "unicode/utf8"

// Prefix returns the longest prefix of s whose runes cost at most budget in
// total, and that total. cost(r, size) prices the rune r, which takes size
// bytes of s (an invalid byte is utf8.RuneError of size 1); nil counts
// bytes. The prefix ends at a rune boundary, so a cut never splits a valid
// UTF-8 sequence. A budget below 1 gives "".
func Prefix(s string, budget int, cost func(r rune, size int) int) (string, int) {
	if cost == nil && len(s) <= budget {
		return s, len(s)
	}
	n := 0
	for i, r := range s {
		size := utf8.RuneLen(r)
		if r == utf8.RuneError {
			_, size = utf8.DecodeRuneInString(s[i:])
		}
		c := size
		if cost != nil {
			c = cost(r, size)
		}
		if n+c > budget {
			return s[:i], n
		}
		n += c
	}
	return s, n
}

// Cut returns s when it has at most max bytes; otherwise its longest prefix
// of at most max bytes that does not split a UTF-8 sequence, followed by
// mark (such as "..." or "…"). The result has at most max+len(mark) bytes.
func Cut(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	p, _ := Prefix(s, max, nil)
	return p + mark
}
