package staticverify

import (
	"strings"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/editdist"
)

// maxSuggestRunes bounds the names the suggester compares, so a huge bogus
// tool name costs no quadratic work.
const maxSuggestRunes = 128

// suggest returns the wire name of the catalog tool closest to name, or ""
// when none is reasonably close. Names are compared case-folded (a case slip
// is the likeliest typo), against each tool's wire name, id and aliases;
// ties go to the smaller exact-case distance, then the smaller wire name.
// "Reasonably close" is at most a third of the name's length, and at least
// one edit.
func suggest(name string, tools []abi.ToolEntry) string {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > maxSuggestRunes {
		return ""
	}
	limit := max(1, n/3)
	lname := strings.ToLower(name)
	best, bestFold, bestExact := "", limit+1, 0
	consider := func(cand, wire string) {
		m := utf8.RuneCountInString(cand)
		if m > maxSuggestRunes || m-n > limit || n-m > limit {
			return // the length difference alone exceeds the limit
		}
		fold := editdist.Levenshtein(lname, strings.ToLower(cand))
		if fold > limit || fold > bestFold {
			return
		}
		exact := editdist.Levenshtein(name, cand)
		if fold < bestFold || exact < bestExact || (exact == bestExact && wire < best) {
			best, bestFold, bestExact = wire, fold, exact
		}
	}
	for _, t := range tools {
		if t.Name == "" {
			continue
		}
		consider(t.Name, t.Name)
		if t.ID != "" {
			consider(t.ID, t.Name)
		}
		for _, a := range t.Aliases {
			consider(a, t.Name)
		}
	}
	return best
}
