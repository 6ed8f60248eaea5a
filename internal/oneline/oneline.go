// Package oneline joins a multi-line message into one line, for errors
// printed on one line of a terminal, a log record or an HTTP error body.
package oneline

import "strings"

// Of joins the lines of s with "; ", each trimmed of surrounding space;
// empty lines are dropped.
func Of(s string) string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	out := fields[:0]
	for _, f := range fields {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return strings.Join(out, "; ")
}
