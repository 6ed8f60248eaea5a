package merge

import (
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/merge/mergetest"
)

// FuzzVerify feeds arbitrary file contents (untrusted: they come from an
// agent's worktree) through extraction, the scans and the decision: no
// panic, and never an acceptance without a passed check or a waiver.
func FuzzVerify(f *testing.F) {
	f.Add("package p\nfunc A() {}\n", "package p\nfunc A() {}\nfunc A() {}\n", "a.go")
	f.Add("package p\nconst (\nA = iota\nB\n)\n", "package p\nfunc (x *T[K]) M() {}\n", "b.go")
	f.Add("", "package p\nfunc {", "c.go")
	f.Fuzz(func(t *testing.T, before, after, path string) {
		if path == "" {
			path = "x.go"
		}
		m := abi.Merge{FileChanges: []abi.FileChange{{Path: path, Before: &before, After: &after}}}
		r := Verify(m, Config{}, &mergetest.Host{})
		if r.Verdict == abi.Accepted {
			t.Fatalf("accepted without evidence: %+v", r)
		}
	})
}
