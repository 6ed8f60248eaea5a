// Package editdist measures how far apart two names are, for the
// did-you-mean suggestions of error messages and findings. Both distances
// count runes, not bytes.
package editdist

// Levenshtein is the Levenshtein distance between a and b: insertions,
// deletions and substitutions of one rune each cost 1.
func Levenshtein(a, b string) int { return distance(a, b, false) }

// OSA is the optimal string alignment distance between a and b:
// Levenshtein plus the transposition of two adjacent runes at cost 1
// ("wrtie" is one edit from "write").
func OSA(a, b string) int { return distance(a, b, true) }

func distance(a, b string, transpose bool) int {
	s, t := []rune(a), []rune(b)
	if len(s) == 0 {
		return len(t)
	}
	if len(t) == 0 {
		return len(s)
	}
	// Three rows: the one before last, last, current.
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if transpose && i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}

// Closest returns the candidate nearest to name by OSA distance, when it
// is near enough to be the name meant: at most a third of name's runes
// (at least 1) away, and not name itself. Ties go to the candidate that
// sorts first, so the answer does not depend on the candidates' order.
func Closest(name string, candidates []string) (string, bool) {
	limit := max(1, len([]rune(name))/3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == name {
			continue
		}
		if d := OSA(name, c); d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	return best, best != ""
}
