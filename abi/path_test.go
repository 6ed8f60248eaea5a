package abi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gatehost/gatehost/abi"
)

func TestPathUnder(t *testing.T) {
	cases := []struct {
		name, path, root string
		under, ok        bool
	}{
		{"a file below", "/srv/files/public/x.txt", "/srv/files/public", true, true},
		{"deep below", "/srv/files/public/a/b/c", "/srv/files/public", true, true},
		{"the root itself", "/srv/files/public", "/srv/files/public", true, true},
		{"the root with a trailing slash", "/srv/files/public/", "/srv/files/public", true, true},
		{"a root with a trailing slash", "/srv/files/public/x", "/srv/files/public/", true, true},
		{"an unclean root", "/srv/files/public/x", "/srv//files/./public", true, true},
		{"a sibling", "/srv/files/private/x", "/srv/files/public", false, true},
		{"the parent", "/srv/files", "/srv/files/public", false, true},
		{"a prefix that is not a segment", "/srv/files/publicity/x", "/srv/files/public", false, true},
		{"a prefix of the root's name", "/srv/files/publi", "/srv/files/public", false, true},
		{"a .. escape", "/srv/files/public/../private/x", "/srv/files/public", false, true},
		{"a .. escape to the root's parent", "/srv/files/public/..", "/srv/files/public", false, true},
		{"a deep .. escape", "/srv/files/public/a/../../../../etc/passwd", "/srv/files/public", false, true},
		{".. that stays below", "/srv/files/public/a/../b", "/srv/files/public", true, true},
		{".. into the root", "/srv/files/private/../public/x", "/srv/files/public", true, true},
		{". segments", "/srv/files/./public/./x", "/srv/files/public", true, true},
		{"repeated slashes", "//srv///files//public//x", "/srv/files/public", true, true},
		{".. above / stays at /", "/../../srv/files/public/x", "/srv/files/public", true, true},
		{"a public directory elsewhere", "/srv/files/private/public/x.txt", "/srv/files/public", false, true},
		{"a served tree under a directory named public", "/home/public/site/private/x", "/home/public/site/public", false, true},
		{"the same tree's public", "/home/public/site/public/x", "/home/public/site/public", true, true},
		{"a relative path", "public/x", "/srv/files/public", false, true},
		{"a relative path that looks like the root", "srv/files/public/x", "/srv/files/public", false, true},
		{"a dot path", "./public/x", "/srv/files/public", false, true},
		{"a home path", "~/public/x", "/srv/files/public", false, true},
		{"the empty path", "", "/srv/files/public", false, true},
		{"everything is under /", "/etc/passwd", "/", true, true},
		{"/ itself under /", "/", "/", true, true},
		{"a relative root", "/srv/files/public/x", "srv/files/public", false, false},
		{"an empty root", "/srv/files/public/x", "", false, false},
		{"a backslash is a name character", "/srv/files/public\\..\\private", "/srv/files/public", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			under, ok := abi.PathUnder(c.path, c.root)
			assert.Equal(t, c.ok, ok, "ok")
			assert.Equal(t, c.under, under, "under")
		})
	}
}
