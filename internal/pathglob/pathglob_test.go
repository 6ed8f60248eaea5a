package pathglob

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"go.mod", "go.mod", true},
		{"go.mod", "sub/go.mod", false},
		{"**/go.mod", "sub/go.mod", true},
		{"**/go.mod", "go.mod", true},
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/a/b.yml", true},
		{".github/workflows/**", ".github/ci.yml", false},
		{"docs/**", "docs", true},
		{"*.md", "README.md", true},
		{"*.md", "docs/a.md", false},
		{"**/*.md", "docs/a.md", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"[", "[", false},
	} {
		assert.Equal(t, c.want, Match(c.pattern, c.name), "%s ~ %s", c.pattern, c.name)
	}
}

func TestValid(t *testing.T) {
	assert.NoError(t, Valid("docs/**"))
	assert.Error(t, Valid(""))
	assert.Error(t, Valid("/abs"))
	assert.Error(t, Valid("a//b"))
	assert.Error(t, Valid("a/[/b"))
}
