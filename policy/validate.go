package policy

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"

	"github.com/gatehost/gatehost/internal/editdist"
)

// Problem kinds: what a refused policy names that does not exist, or
// "type" for an expression of the wrong type (a string compared with a
// number), "scope" for anything else Cedar's validator refuses.
const (
	KindTool      = "tool"
	KindArgument  = "argument"
	KindAttribute = "attribute"
	KindClaim     = "claim"
	KindEntity    = "entity"
	KindType      = "type"
	KindScope     = "scope"
)

// Problem is one reason a policy does not type-check against the schema.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Policy string `json:"policy"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Name is the name that does not exist (kinds tool, argument,
	// attribute, claim, entity).
	Name    string `json:"name,omitempty"`
	Message string `json:"message"`
	// Suggestion is the nearest real name, if one is near.
	Suggestion string `json:"suggestion,omitempty"`
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s:%d:%d: policy %s: %s", p.File, p.Line, p.Column, p.Policy, p.Message)
	if p.Suggestion != "" {
		s += fmt.Sprintf(" (did you mean %q?)", p.Suggestion)
	}
	return s
}

// ValidationError is a policy set that does not type-check.
type ValidationError struct{ Problems []Problem }

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

var (
	reAction    = regexp.MustCompile("^unrecognized action `Action::\"((?:[^\"\\\\]|\\\\.)*)\"`")
	reContext   = regexp.MustCompile("^attribute `(.+)` in context for (.+) not found$")
	reEntity    = regexp.MustCompile("^attribute `(.+)` on entity types? `?([A-Za-z_:]+)`?.* not found$")
	reEntityTyp = regexp.MustCompile("^unrecognized entity type `(.+)`")
	reOptional  = regexp.MustCompile("optional attribute `([^`]+)`")
	reCondition = regexp.MustCompile(`\b(when|unless)\s*\{`)
)

// Validate type-checks every policy of set against the schema (Cedar's
// strict mode) and returns the problems, in policy order; none means the
// set is valid.
func (s *Schema) Validate(set *Set) []Problem {
	v := validate.New(s.resolved, validate.WithStrict())
	var out []Problem
	for _, p := range set.Policies {
		var found []Problem
		if err := v.Policy("", (*ast.Policy)(p.cedar.AST())); err != nil {
			for _, e := range flatten(err) {
				found = append(found, s.problem(set, p, e.Error()))
			}
		}
		// The validator's messages in a fixed order (it may walk maps);
		// at one place, its message is kept over checkNames' plainer one.
		sort.SliceStable(found, func(i, j int) bool { return problemLess(found[i], found[j], true) })
		found = append(found, s.checkNames(set, p)...)
		found = append(found, s.checkLiterals(set, p)...)
		// An unknown action or entity type leaves no action the policy applies to: the
		// scope complaint that follows says nothing more.
		if slices.ContainsFunc(found, func(pr Problem) bool { return pr.Kind == KindTool || pr.Kind == KindEntity }) {
			found = slices.DeleteFunc(found, func(pr Problem) bool {
				return pr.Kind == KindScope && strings.Contains(pr.Message, "unable to find an applicable action")
			})
		}
		// Nor do the arguments read of a tool that is not there: they
		// are the tool's, and the tool is the problem (the gateway lets a
		// tool of an upstream that has not listed yet pass, and its
		// arguments with it).
		if slices.ContainsFunc(found, func(pr Problem) bool { return pr.Kind == KindTool }) {
			found = slices.DeleteFunc(found, func(pr Problem) bool { return pr.Kind == KindArgument })
		}
		// The first place a name is written is where it is reported.
		sort.SliceStable(found, func(i, j int) bool { return problemLess(found[i], found[j], false) })
		seen := map[string]int{} // key → index in out
		for _, pr := range found {
			key := pr.Kind + "\x00" + pr.Name + "\x00" + pr.Message
			if pr.Name != "" {
				key = pr.Kind + "\x00" + pr.Name
			}
			if i, ok := seen[key]; ok {
				// checkNames knows where a nested name was looked for
				// and what is near it; the validator does not.
				if out[i].Suggestion == "" && pr.Suggestion != "" {
					out[i] = pr
				}
				continue
			}
			seen[key] = len(out)
			out = append(out, pr)
		}
	}
	return out
}

// problemLess orders problems by place, then, with text, by kind, name
// and message.
func problemLess(a, b Problem, text bool) bool {
	if a.Line != b.Line || a.Column != b.Column {
		return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
	}
	return text && a.Kind+"\x00"+a.Name+"\x00"+a.Message < b.Kind+"\x00"+b.Name+"\x00"+b.Message
}

func flatten(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// problem classifies one validator message and finds the name it is
// about, where it is written and the nearest real name.
func (s *Schema) problem(set *Set, p Policy, msg string) Problem {
	pr := Problem{File: p.File, Line: p.Line, Column: p.Column, Policy: p.ID, Kind: KindScope, Message: msg}
	text, base := set.text(p)
	at := func(patterns ...string) {
		if i := firstOf(text, pr.Name, patterns); i >= 0 {
			pr.Line, pr.Column = set.position(p.src, base+i)
		}
	}
	switch {
	case reAction.MatchString(msg):
		pr.Kind, pr.Name = KindTool, unquoteCedar(reAction.FindStringSubmatch(msg)[1])
		pr.Message = fmt.Sprintf("no tool or action group %q in the catalog", pr.Name)
		pr.Suggestion = s.nearestAction(pr.Name)
		at(quote(pr.Name))
	case reContext.MatchString(msg):
		m := reContext.FindStringSubmatch(msg)
		pr.Name = m[1]
		action := strings.TrimSuffix(strings.TrimPrefix(m[2], `Action::"`), `"`)
		pr.Kind, pr.Message, pr.Suggestion = s.contextName(text, pr.Name, action)
		at("."+pr.Name, `["`+pr.Name+`"]`, "has "+pr.Name)
	case reEntity.MatchString(msg):
		m := reEntity.FindStringSubmatch(msg)
		path, ent := m[1], m[2]
		if claim, ok := strings.CutPrefix(path, "claims."); ok && ent == PrincipalType {
			pr.Kind, pr.Name = KindClaim, claim
			pr.Message = fmt.Sprintf("no claim %q is declared", claim)
			pr.Suggestion, _ = editdist.Closest(claim, sortedKeys(s.Claims))
			at("claims."+claim, `claims["`+claim+`"]`, "has "+claim)
		} else {
			pr.Kind, pr.Name = KindAttribute, path
			pr.Message = fmt.Sprintf("%s has no attribute %q", ent, path)
			pr.Suggestion, _ = editdist.Closest(path, entityAttrs[ent])
			at("."+path, `["`+path+`"]`, "has "+path)
		}
	case reEntityTyp.MatchString(msg):
		pr.Kind, pr.Name = KindEntity, reEntityTyp.FindStringSubmatch(msg)[1]
		pr.Message = fmt.Sprintf("no entity type %s (the types are %s, %s and Action)", pr.Name, PrincipalType, ResourceType)
		pr.Suggestion, _ = editdist.Closest(pr.Name, []string{PrincipalType, ResourceType, ActionType})
		at(pr.Name)
	case strings.Contains(msg, "type") || strings.Contains(msg, "optional attribute"):
		// The validator does not say which expression: name the
		// optional attribute when it says, else the first condition.
		pr.Kind = KindType
		if m := reOptional.FindStringSubmatch(msg); m != nil {
			leaf := m[1][strings.LastIndexByte(m[1], '.')+1:]
			if i := firstOf(text, leaf, []string{"." + leaf, `["` + leaf + `"]`}); i >= 0 {
				pr.Line, pr.Column = set.position(p.src, base+i)
			}
		} else if loc := reCondition.FindStringIndex(text); loc != nil {
			pr.Line, pr.Column = set.position(p.src, base+loc[0])
		}
	}
	return pr
}

var entityAttrs = map[string][]string{
	PrincipalType: {"authenticated", "claims", "issuer", "method", "subject"},
	ResourceType:  {"name", "provenance", "source"},
}

var (
	contextNames    = []string{"arguments", "now", "paths", "session", "tool"}
	toolNames       = []string{"annotations", "effect", "id", "name", "namespace"}
	annotationNames = []string{"destructive", "idempotent", "open_world", "read_only"}
)

// contextName classifies an unknown name read from context for action: an
// argument (context.arguments.X or context.paths.X) of the action, or an
// attribute of context, context.tool or its annotations.
func (s *Schema) contextName(text, name, action string) (kind, msg, suggestion string) {
	ts, _ := s.Tool(action)
	for _, c := range []struct {
		prefix, kind, what string
		names              []string
	}{
		{"arguments", KindArgument, "tool " + action + " has no argument", ts.Arguments.names()},
		{"paths", KindArgument, "tool " + action + " has no path argument", ts.Paths.names()},
		{"annotations", KindAttribute, "context.tool.annotations has no attribute", annotationNames},
		{"tool", KindAttribute, "context.tool has no attribute", toolNames},
	} {
		if strings.Contains(text, c.prefix+"."+name) || strings.Contains(text, c.prefix+`["`+name+`"]`) {
			sug, _ := editdist.Closest(name, c.names)
			return c.kind, fmt.Sprintf("%s %q", c.what, name), sug
		}
	}
	sug, _ := editdist.Closest(name, contextNames)
	return KindAttribute, fmt.Sprintf("context has no attribute %q (for %s)", name, action), sug
}

// nearestAction is the action id nearest name: the id of the tool whose
// wire name is name, else the closest id or group.
func (s *Schema) nearestAction(name string) string {
	var ids []string
	for _, t := range s.Tools {
		if t.Tool.Name == name || slices.Contains(t.Tool.Aliases, name) {
			return t.Action
		}
		ids = append(ids, t.Action)
		for _, g := range t.Groups {
			if !slices.Contains(ids, g) {
				ids = append(ids, g)
			}
		}
	}
	ids = append(ids, EffectGroups...)
	ids = append(ids, GroupDestructive)
	if c, ok := editdist.Closest(name, ids); ok {
		return c
	}
	// A mistyped wire name inside a right namespace ("fs:wirte_file"):
	// compare the names.
	for _, t := range s.Tools {
		if _, n, ok := strings.Cut(name, ":"); ok {
			if c, ok := editdist.Closest(n, []string{t.Tool.Name}); ok && c == t.Tool.Name {
				return t.Action
			}
		}
	}
	return ""
}

func unquoteCedar(s string) string {
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
}

// firstOf is the offset of name in the earliest match in text of any of
// the patterns (each holding name), or -1.
func firstOf(text, name string, patterns []string) int {
	best := -1
	for _, pat := range patterns {
		if i := strings.Index(text, pat); i >= 0 {
			if at := i + strings.Index(pat, name); best < 0 || at < best {
				best = at
			}
		}
	}
	return best
}
