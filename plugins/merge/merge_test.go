package merge

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/plugins/merge/mergetest"
	"github.com/gatehost/gatehost/sdk/gatetest"
)

func s(v string) *string { return &v }

func TestExtractChanges(t *testing.T) {
	before := `package p

import "fmt"

// Doc of Keep.
func Keep() {}

func Edit() int { return 1 }

func Gone() {}

type T struct{ A int }

func (t *T) M() {}

func (t T) N() {}

type G[K comparable] struct{}

func (g *G[K]) Get() {}

var (
	V1 = 1
	V2, V3 = 2, 3
)

const (
	C0 = iota
	C1
)

var _ = fmt.Sprint
`
	after := `package p

import "fmt"

// A new doc comment: not a change of Keep.
func Keep() {}

func Edit() int { return 2 }

func New() {}

type T struct{ A, B int }

func (t *T) M() {}

func (t T) N() { _ = t }

type G[K comparable] struct{}

func (g *G[K]) Get() { }

var (
	V1 = 1
	V2, V3 = 2, 4
)

const (
	C0 = iota + 1
	C1
)

var _ = fmt.Sprint
`
	c := ExtractChanges([]abi.FileChange{
		{Path: "p/p.go", Before: s(before), After: s(after)},
		{Path: "p/same.go", Before: s("package p"), After: s("package p")},
		{Path: "p/new.go", After: s("package p\nfunc Added() {}\n")},
		{Path: "p/del.go", Before: s("package p\ntype Deleted int\n")},
		{Path: "p/broken.go", Before: s("package p"), After: s("package p\nfunc {")},
		{Path: "README.md", Before: s("a"), After: s("b")},
		{Path: "logo.png", Before: s(""), After: s(""), ContentOmitted: true},
	})
	got := map[string]string{}
	for _, sym := range c.Symbols {
		got[sym.File+" "+sym.Kind+" "+sym.Symbol] = sym.Change
	}
	assert.Equal(t, map[string]string{
		"p/p.go func Edit":      "modified",
		"p/p.go func Gone":      "removed",
		"p/p.go func New":       "added",
		"p/p.go type T":         "modified",
		"p/p.go method T.N":     "modified",
		"p/p.go method G.Get":   "modified",
		"p/p.go var V2":         "modified",
		"p/p.go var V3":         "modified",
		"p/p.go const C0":       "modified",
		"p/p.go const C1":       "modified", // repeats C0's changed expression
		"p/new.go func Added":   "added",
		"p/del.go type Deleted": "removed",
	}, got)
	assert.Equal(t, []string{"README.md", "logo.png", "p/broken.go"}, c.UnparsedChangedFiles)
	assert.Contains(t, c.ParseErrors, "p/broken.go")
}

func TestDuplicateDeclarations(t *testing.T) {
	c := ExtractChanges([]abi.FileChange{
		{Path: "a.go", Before: s("package p\nfunc Foo() {}\n"), After: s("package p\nfunc Foo() {}\n\nfunc Foo() { println() }\nfunc init() {}\nfunc init() {}\nvar _ = 1\nvar _ = 2\n")},
		{Path: "b.go", After: s("package p\ntype T int\nfunc (T) M() {}\nfunc (*T) M() {}\nfunc M() {}\nvar X int\nfunc X() {}\n")},
		{Path: "c.go", After: s("package p\nfunc Foo() {}\n")}, // other file: normal
	})
	d := DuplicateDeclarations(c)
	assert.Equal(t, []DuplicateDeclaration{
		{File: "a.go", Symbol: "Foo", Kinds: []string{"func", "func"}, Lines: []int{2, 4}},
		{File: "b.go", Symbol: "T.M", Kinds: []string{"method", "method"}, Lines: []int{3, 4}},
		{File: "b.go", Symbol: "X", Kinds: []string{"var", "func"}, Lines: []int{6, 7}},
	}, d)
}

func TestContainmentViolations(t *testing.T) {
	syms := []ChangedSymbol{
		{File: "a.go", Symbol: "Foo", Kind: KindFunc, Change: "modified"},
		{File: "a.go", Symbol: "T.M", Kind: KindMethod, Change: "added"},
		{File: "b.go", Symbol: "Bar", Kind: KindFunc, Change: "modified"},
	}
	assert.Nil(t, ContainmentViolations(syms, nil), "no footprint: skipped")
	v := ContainmentViolations(syms, []abi.SymbolRef{{File: "a.go", Symbol: "Foo"}, {File: "b.go", Symbol: "*"}})
	require.Len(t, v, 1)
	assert.Equal(t, "T.M", v[0].Symbol)
	v = ContainmentViolations(syms, []abi.SymbolRef{{File: "b.go", Symbol: "Foo"}})
	assert.Len(t, v, 3, "a symbol name in another file does not cover")
}

// Every value of every input of Decide, including one outside each
// enumeration.
var (
	allCounts   = []int{0, 1}
	allPolicies = []PolicyOutcome{PolicyAllow, PolicyDeny, PolicyUnknown, "bogus"}
	allBuilds   = []BuildTestStatus{BuildNotConfigured, BuildNotRun, BuildPassed, BuildFailed, BuildUnavailable, "bogus"}
	allWaivers  = []WaiverState{WaiverNone, WaiverApplies, WaiverOutOfScope, "bogus"}
)

// TestDecideTruthTable checks every combination of inputs against the rules
// of docs/GATES.md#merge stated as properties, and pins the rows the origin
// names.
func TestDecideTruthTable(t *testing.T) {
	n := 0
	for _, v := range allCounts {
		for _, d := range allCounts {
			for _, p := range allPolicies {
				for _, b := range allBuilds {
					for _, w := range allWaivers {
						n++
						in := Inputs{ContainmentViolations: v, DuplicateDeclarations: d, Policy: p, BuildTest: b, Waiver: w}
						out := Decide(in)
						name := fmt.Sprintf("%+v", in)
						blocked := v > 0 || d > 0 || p == PolicyDeny
						switch {
						case blocked || b == BuildFailed:
							assert.Equal(t, Outcome{Verdict: abi.Rejected}, out, name)
						case p != PolicyAllow:
							assert.Equal(t, abi.Inconclusive, out.Verdict, name)
						case b == BuildPassed:
							assert.Equal(t, Outcome{Verdict: abi.Accepted, Basis: BasisVerified}, out, name)
						case (b == BuildNotConfigured || b == BuildNotRun) && w == WaiverApplies:
							assert.Equal(t, Outcome{Verdict: abi.Accepted, Basis: BasisWaived}, out, name)
						default:
							assert.Equal(t, abi.Inconclusive, out.Verdict, name)
						}
						// Invariants: acceptance has a basis and positive
						// evidence; inconclusive has a reason.
						if out.Verdict == abi.Accepted {
							assert.True(t, v == 0 && d == 0 && p == PolicyAllow, name)
							assert.True(t, b == BuildPassed || w == WaiverApplies, name)
							assert.NotEqual(t, BuildUnavailable, b, "a waiver does not fill a broken check: %s", name)
						}
						if out.Verdict == abi.Inconclusive {
							assert.NotEmpty(t, out.Reason, name)
						}
					}
				}
			}
		}
	}
	assert.Equal(t, 2*2*4*6*4, n)
	// The rows the origin spells out (docs/GATES.md#merge).
	clean := Inputs{Policy: PolicyAllow, Waiver: WaiverNone}
	with := func(f func(*Inputs)) Inputs { c := clean; f(&c); return c }
	assert.Equal(t, Outcome{abi.Accepted, BasisVerified, ""}, Decide(with(func(i *Inputs) { i.BuildTest = BuildPassed })))
	assert.Equal(t, Outcome{abi.Rejected, "", ""}, Decide(with(func(i *Inputs) { i.BuildTest = BuildFailed; i.Waiver = WaiverApplies })))
	assert.Equal(t, Outcome{abi.Inconclusive, "", ReasonNotConfigured}, Decide(with(func(i *Inputs) { i.BuildTest = BuildNotConfigured })))
	assert.Equal(t, Outcome{abi.Inconclusive, "", ReasonNotRun}, Decide(with(func(i *Inputs) { i.BuildTest = BuildNotRun })))
	assert.Equal(t, Outcome{abi.Accepted, BasisWaived, ""}, Decide(with(func(i *Inputs) { i.BuildTest = BuildNotConfigured; i.Waiver = WaiverApplies })))
	assert.Equal(t, Outcome{abi.Rejected, "", ""}, Decide(with(func(i *Inputs) { i.Policy = PolicyDeny; i.BuildTest = BuildPassed; i.Waiver = WaiverApplies })))
	assert.Equal(t, Outcome{abi.Rejected, "", ""}, Decide(with(func(i *Inputs) { i.ContainmentViolations = 1; i.BuildTest = BuildPassed })))
	assert.Equal(t, Outcome{abi.Rejected, "", ""}, Decide(with(func(i *Inputs) { i.DuplicateDeclarations = 1; i.BuildTest = BuildPassed })))
}

func TestVerifyEvidenceRecordsEveryCheck(t *testing.T) {
	m := abi.Merge{FileChanges: []abi.FileChange{{Path: "a.go", Before: s("package p\nfunc A() {}\n"), After: s("package p\nfunc A() { println() }\n")}}}
	// Nothing configured, no footprint: inconclusive, and the audit says so.
	h := &mergetest.Host{}
	r := Verify(m, Config{}, h)
	assert.Equal(t, abi.Inconclusive, r.Verdict)
	assert.Equal(t, ReasonNotConfigured, r.Reason)
	checks := r.Evidence["checks"].(map[string]any)
	assert.Equal(t, StatusSkipped, checks["containment"].(map[string]any)["status"])
	assert.Equal(t, StatusRan, checks["duplicate_declarations"].(map[string]any)["status"])
	assert.Equal(t, StatusRan, checks["policy"].(map[string]any)["status"])
	assert.Equal(t, StatusSkipped, checks["build_test"].(map[string]any)["status"])
	assert.Equal(t, BuildNotConfigured, checks["build_test"].(map[string]any)["result"])

	// A footprint miss: rejected naming the symbol; the check never runs.
	m.Footprint = []abi.SymbolRef{{File: "a.go", Symbol: "B"}}
	h = &mergetest.Host{}
	r = Verify(m, Config{Check: "pass"}, h)
	assert.Equal(t, abi.Rejected, r.Verdict)
	require.NotEmpty(t, r.Findings)
	assert.Equal(t, CodeContainmentViolation, r.Findings[0].Code)
	assert.Equal(t, "A", r.Findings[0].Details["symbol"])
	assert.NotContains(t, h.Calls, abi.OpCheckRun)
	checks = r.Evidence["checks"].(map[string]any)
	assert.Equal(t, StatusNotRun, checks["build_test"].(map[string]any)["status"])

	// Policy not granted: never acceptance, not even with a waiver.
	m.Footprint = nil
	m.Waiver = &abi.Waiver{Reason: "r", ApprovedBy: "x", Scope: []string{"**"}}
	r = Verify(m, Config{Check: "pass"}, &mergetest.Host{Granted: []string{CapabilityCheck}})
	assert.Equal(t, abi.Inconclusive, r.Verdict)
	assert.Equal(t, ReasonPolicyUnavailable, r.Reason)
	assert.Equal(t, "r", r.Evidence["waiver"].(map[string]any)["reason"])
}

func TestGateThroughSDK(t *testing.T) {
	subj, _ := json.Marshal(abi.Merge{FileChanges: []abi.FileChange{{Path: "a.go", After: s("package p\nfunc A() {}\n")}}})
	resp, err := gatetest.Evaluate(context.Background(), Gate, abi.Request{SubjectKind: abi.SubjectMerge, Subject: subj, Config: json.RawMessage(`{"check":"pass"}`)}, &mergetest.Host{})
	require.NoError(t, err)
	assert.Equal(t, abi.Accepted, resp.Verdict)
	assert.Equal(t, BasisVerified, resp.Basis)

	resp, err = gatetest.Evaluate(context.Background(), Gate, abi.Request{SubjectKind: abi.SubjectMerge, Subject: subj, Config: json.RawMessage(`{"command":"rm -rf /"}`)}, &mergetest.Host{})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, resp.Verdict, "a stage config cannot carry a command")

	resp, err = gatetest.Evaluate(context.Background(), Gate, abi.Request{SubjectKind: abi.SubjectProposal, Subject: subj}, &mergetest.Host{})
	require.NoError(t, err)
	assert.Equal(t, abi.Inconclusive, resp.Verdict)
}
