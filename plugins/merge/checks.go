package merge

import (
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// ContainmentViolation is a changed symbol outside the declared footprint.
type ContainmentViolation struct {
	ChangedSymbol
}

// ContainmentViolations returns the changed symbols that no footprint entry
// covers: an entry covers a symbol when its file is the symbol's file and
// its symbol is the symbol's name or "*". It returns nil when footprint is
// empty (no declaration: the check is skipped, see Evaluate).
func ContainmentViolations(symbols []ChangedSymbol, footprint []abi.SymbolRef) []ContainmentViolation {
	if len(footprint) == 0 {
		return nil
	}
	declared := map[abi.SymbolRef]bool{}
	for _, r := range footprint {
		declared[r] = true
	}
	var out []ContainmentViolation
	for _, s := range symbols {
		if declared[abi.SymbolRef{File: s.File, Symbol: s.Symbol}] || declared[abi.SymbolRef{File: s.File, Symbol: "*"}] {
			continue
		}
		out = append(out, ContainmentViolation{s})
	}
	return out
}

// DuplicateDeclaration is a name declared more than once at the top level of
// one file after the change.
type DuplicateDeclaration struct {
	File   string `json:"file"`
	Symbol string `json:"symbol"`
	// Kinds are the kinds of the declarations, in source order, such as
	// ["func","func"] or ["func","var"].
	Kinds []string `json:"kinds"`
	// Lines are the lines of the declarations, in source order.
	Lines []int `json:"lines"`
}

// DuplicateDeclarations scans the after side of every parsed Go file for a
// name declared twice. Functions, types, vars and consts share the package
// block, so two of them with one name are a duplicate whatever their kinds
// (the origin's (name, kind) pairs are the subset with equal kinds); methods
// count by receiver type and name. init functions and the blank identifier
// may repeat. The same name in two files is not reported (build/test covers
// that).
func DuplicateDeclarations(c Changes) []DuplicateDeclaration {
	var out []DuplicateDeclaration
	files := make([]string, 0, len(c.after))
	for f := range c.after {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		seen := map[string]*DuplicateDeclaration{}
		var order []string
		for _, d := range c.after[f] {
			if d.name == "_" || (d.kind == KindFunc && d.name == "init") {
				continue
			}
			key := d.name
			if d.kind == KindMethod {
				key = "method " + d.name
			}
			dd, ok := seen[key]
			if !ok {
				dd = &DuplicateDeclaration{File: f, Symbol: d.name}
				seen[key] = dd
				order = append(order, key)
			}
			dd.Kinds = append(dd.Kinds, d.kind)
			dd.Lines = append(dd.Lines, d.line)
		}
		for _, k := range order {
			if dd := seen[k]; len(dd.Lines) > 1 {
				out = append(out, *dd)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b DuplicateDeclaration) int {
		return strings.Compare(a.File+"\x00"+a.Symbol, b.File+"\x00"+b.Symbol)
	})
	return out
}
