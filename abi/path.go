package abi

import (
	"path"
	"strings"
)

// PathUnder is the `under` operator of domain conditions (minor 7): whether
// p, a slash-separated path, equals root or lies below it once both are
// cleaned lexically (path.Clean: "." and ".." segments, repeated and trailing
// slashes), compared segment by segment, so /srv/publicity is not under
// /srv/public. A relative p is not under any root. ok is false when root
// is not an absolute path: the test cannot be made.
//
// The test is lexical: it reads no file system, so it cannot see symbolic
// links. ".." is resolved against the path as written, as a server that
// cleans its paths before opening them does.
func PathUnder(p, root string) (under, ok bool) {
	if !path.IsAbs(root) {
		return false, false
	}
	if !path.IsAbs(p) {
		return false, true
	}
	r, c := path.Clean(root), path.Clean(p)
	if r == "/" || c == r {
		return true, true
	}
	return strings.HasPrefix(c, r+"/"), true
}
