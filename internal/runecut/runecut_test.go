package runecut_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/internal/runecut"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii", "abcdef", 5, "abcde…"},
		{"two-byte rune across the cut", "abcdé", 5, "abcd…"},
		{"three-byte rune across the cut", "ab€cd", 4, "ab…"},
		{"four-byte rune across the cut", "a😀b", 3, "a…"},
		{"rune ends at the cut", "ab€cd", 5, "ab€…"},
		{"first rune does not fit", "😀😀", 3, "…"},
		{"zero", "abc", 0, "…"},
		{"empty", "", 0, ""},
		{"invalid bytes count one each", "ab\xff\xfecd", 3, "ab\xff…"},
		{"stray continuation bytes", "\x80\x80\x80\x80", 2, "\x80\x80…"},
		{"truncated sequence before the cut", "a\xe2\x82b", 3, "a\xe2\x82…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runecut.Cut(tt.s, tt.max, "…")
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), tt.max+len("…"))
		})
	}
	assert.Equal(t, "ab...", runecut.Cut("abcdef", 2, "..."), "the caller chooses the mark")
}

func TestPrefixCost(t *testing.T) {
	six := func(r rune, size int) int {
		if r == '<' {
			return 6
		}
		return size
	}
	tests := []struct {
		s      string
		budget int
		want   string
		cost   int
	}{
		{"a<b", 7, "a<", 7},
		{"a<b", 6, "a", 1},
		{"<<", 11, "<", 6},
		{"é<", 2, "é", 2},
		{"é<", 1, "", 0},
		{"abc", 10, "abc", 3},
		{"abc", -1, "", 0},
	}
	for _, tt := range tests {
		got, cost := runecut.Prefix(tt.s, tt.budget, six)
		assert.Equal(t, tt.want, got, "%q budget %d", tt.s, tt.budget)
		assert.Equal(t, tt.cost, cost, "%q budget %d", tt.s, tt.budget)
	}
}

// FuzzCut: a cut result is a prefix of s plus the mark, within the bound,
// and never ends inside a sequence that was valid in s.
func FuzzCut(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo", "😀😀😀", "a\xffb", strings.Repeat("€", 50)} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := runecut.Cut(s, max, "|")
		if len(s) <= max {
			if got != s {
				t.Fatalf("%q cut although it fits", s)
			}
			return
		}
		p, ok := strings.CutSuffix(got, "|")
		if !ok || !strings.HasPrefix(s, p) || len(p) > max {
			t.Fatalf("Cut(%q, %d) = %q", s, max, got)
		}
		if rest := s[len(p):]; len(rest) > 0 && !utf8.RuneStart(rest[0]) && utf8.ValidString(s) {
			t.Fatalf("Cut(%q, %d) splits a rune", s, max)
		}
	})
}
