package host

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/editdist"
)

// ErrUnmatchedTool is matched (errors.Is) by every *UnmatchedToolError.
var ErrUnmatchedTool = errors.New("tool reference matches no tool")

// UnmatchedTool is one reference that matches no tool of the catalog.
type UnmatchedTool struct {
	Ref ToolReference
	// Suggestion is the closest real name ("" for none): a tool of the
	// same name under another namespace, the canonical id of a tool the
	// name is a wire name of (for a field of canonical ids), or the
	// nearest id or wire name by edit distance.
	Suggestion string
}

func (u UnmatchedTool) String() string {
	var b strings.Builder
	b.WriteString(u.Ref.Field)
	if u.Ref.File != "" || u.Ref.Via != "" {
		b.WriteString(" (")
		b.WriteString(strings.Join(nonEmpty(u.Ref.File, via(u.Ref.Via)), "; "))
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s matches no tool", strconv.Quote(u.Ref.Name))
	if u.Ref.Kind == RefToolID {
		if _, _, ok := strings.Cut(u.Ref.Name, ":"); !ok {
			b.WriteString(" (the field takes canonical ids, namespace:name)")
		}
	}
	if u.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %s?", strconv.Quote(u.Suggestion))
	}
	return b.String()
}

func via(field string) string {
	if field == "" {
		return ""
	}
	return "the domain of " + field
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

// UnmatchedToolError lists every reference CheckToolReferences found
// unmatched, in the order given.
type UnmatchedToolError struct {
	Unmatched []UnmatchedTool
}

func (e *UnmatchedToolError) Error() string {
	parts := make([]string, len(e.Unmatched))
	for i, u := range e.Unmatched {
		parts[i] = u.String()
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return fmt.Sprintf("%d tool references match no tool: %s", len(parts), strings.Join(parts, "; "))
}

func (e *UnmatchedToolError) Is(target error) bool { return target == ErrUnmatchedTool }

// CheckToolReferences resolves each reference in snap the way its
// consumer does: a RefToolID against the tools' canonical ids, a RefTool
// against ids, wire names and aliases (catalog.Snapshot.Get), any of a
// reference's Alternatives counting as well; a Wildcard reference matches
// whatever the catalog holds, even when it is empty. It returns nil when
// every reference matches, or an *UnmatchedToolError (errors.Is
// ErrUnmatchedTool) listing every one that does not, with the closest
// real name.
func CheckToolReferences(refs []ToolReference, snap *catalog.Snapshot) error {
	var out []UnmatchedTool
	var idx *nameIndex
	for _, r := range refs {
		if r.Wildcard || matches(r, snap) {
			continue
		}
		if idx == nil {
			idx = newNameIndex(snap)
		}
		out = append(out, UnmatchedTool{Ref: r, Suggestion: idx.suggest(r)})
	}
	if len(out) == 0 {
		return nil
	}
	return &UnmatchedToolError{Unmatched: out}
}

func matches(r ToolReference, snap *catalog.Snapshot) bool {
	for _, n := range append([]string{r.Name}, r.Alternatives...) {
		t, ok := snap.Get(n)
		if ok && (r.Kind != RefToolID || t.ID == n) {
			return true
		}
	}
	return false
}

// nameIndex holds a catalog's names for suggestions.
type nameIndex struct {
	ids    []string          // sorted
	wire   []string          // wire names and aliases, sorted
	idOf   map[string]string // wire name or alias -> id
	byName map[string][]string
}

func newNameIndex(snap *catalog.Snapshot) *nameIndex {
	x := &nameIndex{idOf: map[string]string{}, byName: map[string][]string{}}
	for _, e := range snap.Entries() {
		x.ids = append(x.ids, e.ID)
		if _, name, ok := strings.Cut(e.ID, ":"); ok {
			x.byName[name] = append(x.byName[name], e.ID)
		}
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			if _, dup := x.idOf[n]; !dup {
				x.idOf[n] = e.ID
				x.wire = append(x.wire, n)
			}
		}
	}
	slices.Sort(x.wire)
	return x
}

// suggest returns the closest real name to an unmatched reference, or "".
func (x *nameIndex) suggest(r ToolReference) string {
	name := r.Name
	if ns, raw, ok := strings.Cut(name, ":"); ok {
		// The same tool under another namespace: mcp.fs:move_file when
		// the upstream is named filesystem.
		best, bestD := "", -1
		for _, id := range x.byName[raw] {
			ons, _, _ := strings.Cut(id, ":")
			if d := editdist.OSA(ns, ons); bestD < 0 || d < bestD {
				best, bestD = id, d
			}
		}
		if best != "" {
			return best
		}
	}
	if id, ok := x.idOf[name]; ok && r.Kind == RefToolID {
		return id // a wire name where a canonical id is wanted
	}
	cands := x.ids
	if r.Kind != RefToolID {
		cands = append(slices.Clone(x.ids), x.wire...)
	}
	best, bestD := "", -1
	for _, c := range cands {
		if d := editdist.OSA(name, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > maxSuggestDistance(name) {
		// Perhaps a typo in a wire name of a field that takes ids.
		if r.Kind == RefToolID {
			for _, w := range x.wire {
				if editdist.OSA(name, w) <= maxSuggestDistance(name) {
					return x.idOf[w]
				}
			}
		}
		return ""
	}
	return best
}

// maxSuggestDistance is the largest edit distance a suggestion may be
// from name: a quarter of its length, at least 1.
func maxSuggestDistance(name string) int {
	return max(1, len([]rune(name))/4)
}
