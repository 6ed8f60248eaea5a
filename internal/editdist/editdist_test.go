package editdist

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDistances(t *testing.T) {
	for _, tc := range []struct {
		a, b     string
		lev, osa int
	}{
		{"", "", 0, 0},
		{"", "abc", 3, 3},
		{"abc", "", 3, 3},
		{"write", "write", 0, 0},
		{"write", "wrtie", 2, 1},
		{"move_fil", "move_file", 1, 1},
		{"kitten", "sitting", 3, 3},
		{"café", "cafe", 1, 1},
		{"ab", "ba", 2, 1},
	} {
		assert.Equal(t, tc.lev, Levenshtein(tc.a, tc.b), "Levenshtein(%q, %q)", tc.a, tc.b)
		assert.Equal(t, tc.osa, OSA(tc.a, tc.b), "OSA(%q, %q)", tc.a, tc.b)
		assert.Equal(t, Levenshtein(tc.a, tc.b), Levenshtein(tc.b, tc.a))
		assert.Equal(t, OSA(tc.a, tc.b), OSA(tc.b, tc.a))
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"pipelnes", []string{"plugins", "pipelines", "policy"}, "pipelines"},
		{"gaed", []string{"admission", "gated"}, "gated"},
		{"paramters", []string{"effect", "parameters"}, "parameters"},
		{"colour", []string{"catalog", "tracing"}, ""},
		{"ab", []string{"ba", "ac"}, "ac"}, // a tie: the first sorted
		{"x", []string{"x"}, ""},
	} {
		got, ok := Closest(tc.name, tc.cands)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.want != "", ok, tc.name)
	}
}
