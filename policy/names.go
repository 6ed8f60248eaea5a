package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/gatehost/gatehost/internal/editdist"
)

// checkNames refuses the names a policy reads that no schema type holds,
// at any depth, including those only tested with has: Cedar's validator
// types "principal.claims has rolez" (or "context.arguments.options has
// forse") as false and lets it pass, which would leave a misspelled
// name's rule silently dead.
func (s *Schema) checkNames(set *Set, p Policy) []Problem {
	pa := (*ast.Policy)(p.cedar.AST())
	tools := s.scopeTools(pa.Action)
	var out []Problem
	for _, c := range pa.Conditions {
		ast.Inspect(ast.NewNode(c.Body), func(n ast.IsNode) bool {
			var op ast.StrOpNode
			switch x := n.(type) {
			case ast.NodeTypeHas:
				op = x.StrOpNode
			case ast.NodeTypeAccess:
				op = x.StrOpNode
			default:
				return true
			}
			path, ok := accessPath(op.Arg)
			if !ok {
				return true
			}
			if pr, bad := s.checkName(set, p, path, string(op.Value), tools); bad {
				out = append(out, pr)
			}
			return true
		})
	}
	return out
}

// accessPath is the chain of attribute reads rooted at a variable
// (["principal", "claims"]), or false.
func accessPath(n ast.IsNode) ([]string, bool) {
	switch x := n.(type) {
	case ast.NodeTypeVariable:
		return []string{string(x.Name)}, true
	case ast.NodeTypeAccess:
		p, ok := accessPath(x.Arg)
		return append(p, string(x.Value)), ok
	}
	return nil, false
}

// scopeTools are the tools a policy's action scope can apply to.
func (s *Schema) scopeTools(scope ast.IsActionScopeNode) []ToolSchema {
	var uids []types.EntityUID
	switch sc := scope.(type) {
	case ast.ScopeTypeEq:
		uids = []types.EntityUID{sc.Entity}
	case ast.ScopeTypeIn:
		uids = []types.EntityUID{sc.Entity}
	case ast.ScopeTypeInSet:
		uids = sc.Entities
	default:
		return s.Tools
	}
	var out []ToolSchema
	for _, t := range s.Tools {
		for _, u := range uids {
			if string(u.ID) == t.Action || slices.Contains(t.Groups, string(u.ID)) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// namesAt is what the record at path holds: the problem kind and wording
// for a name it lacks, and the names it has; false where path is no record
// the schema describes (Cedar's validator then refuses its parent, or its
// type).
func (s *Schema) namesAt(path []string, tools []ToolSchema) (kind, what string, names []string, ok bool) {
	dotted := strings.Join(path, ".")
	switch dotted {
	case "principal":
		return KindAttribute, PrincipalType + " has no attribute", entityAttrs[PrincipalType], true
	case "principal.claims":
		return KindClaim, "no claim is declared named", sortedKeys(s.Claims), true
	case "resource":
		return KindAttribute, ResourceType + " has no attribute", entityAttrs[ResourceType], true
	case "context":
		return KindAttribute, "context has no attribute", contextNames, true
	case "context.tool":
		return KindAttribute, "context.tool has no attribute", toolNames, true
	case "context.tool.annotations":
		return KindAttribute, "context.tool.annotations has no attribute", annotationNames, true
	}
	if len(path) < 2 || path[0] != "context" {
		return "", "", nil, false
	}
	switch path[1] {
	case "arguments", "paths":
		names, ok = argumentNames(path[1], path[2:], tools)
		switch {
		case !ok:
			return "", "", nil, false
		case len(path) > 2:
			what = fmt.Sprintf("no tool the policy applies to has an argument %s with an attribute", strings.Join(path[2:], "."))
		case path[1] == "paths":
			what = "no tool the policy applies to has a path argument"
		default:
			what = "no tool the policy applies to has an argument"
		}
		return KindArgument, what, names, true
	case "session":
		names, ok = s.sessionNames(path[2:])
		return KindAttribute, dotted + " has no attribute", names, ok
	}
	return "", "", nil, false
}

// argumentNames are the attribute names, across tools, of the record at
// rest within context.arguments or context.paths (root), and whether any
// tool has a record there. At the top every tool has one.
func argumentNames(root string, rest []string, tools []ToolSchema) ([]string, bool) {
	var names []string
	found := len(rest) == 0
	for _, ts := range tools {
		t := ts.Arguments
		if root == "paths" {
			t = ts.Paths
		}
		for _, seg := range rest {
			i := slices.IndexFunc(t.Attrs, func(a Attr) bool { return a.Name == seg })
			if t.Kind != KindRecord || i < 0 {
				t = Type{}
				break
			}
			t = t.Attrs[i].Type
		}
		if t.Kind != KindRecord {
			continue
		}
		found = true
		for _, n := range t.names() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, found
}

// sessionNames are the attribute names of the record at rest within
// context.session (the Session type, writeSessionTypes): calls by tool
// id, windows by declared name.
func (s *Schema) sessionNames(rest []string) ([]string, bool) {
	node := "session"
	for _, seg := range rest {
		switch {
		case node == "session" && seg == "calls", node == "window" && seg == "calls":
			node = "calls"
		case node == "session" && seg == "window", node == "principal" && seg == "window":
			node = "windows"
		case node == "session" && seg == "principal":
			node = "principal"
		case node == "windows" && slices.Contains(s.windows, seg):
			node = "window"
		default:
			return nil, false
		}
	}
	switch node {
	case "session":
		return []string{"calls", "principal", "window"}, true
	case "principal":
		return []string{"window"}, true
	case "windows":
		return s.windows, true
	case "window":
		return []string{"calls"}, true
	}
	return s.toolIDs(), true
}

func (s *Schema) checkName(set *Set, p Policy, path []string, name string, tools []ToolSchema) (Problem, bool) {
	kind, what, names, ok := s.namesAt(path, tools)
	if !ok || slices.Contains(names, name) {
		return Problem{}, false
	}
	leaf := path[len(path)-1]
	pr := problemAt(set, p, kind, name, what, names, []string{leaf + "." + name, leaf + `["` + name + `"]`, "has " + name, `has "` + name + `"`})
	if a := s.nearestAction(name); pr.Suggestion == "" && path[0] == "context" && leaf == "calls" && slices.Contains(names, a) {
		pr.Suggestion = a // the counts are keyed by id, not by wire name
	}
	return pr, true
}

// problemAt is the problem of a name policy p reads that is not among
// names: what (the message, before the quoted name), the nearest of
// names, and the place where any of patterns first finds it in p's text
// (else the policy's).
func problemAt(set *Set, p Policy, kind, name, what string, names, patterns []string) Problem {
	pr := Problem{File: p.File, Line: p.Line, Column: p.Column, Policy: p.ID, Kind: kind, Name: name,
		Message: fmt.Sprintf("%s %q", what, name)}
	pr.Suggestion, _ = editdist.Closest(name, names)
	text, base := set.text(p)
	if i := firstOf(text, name, patterns); i >= 0 {
		pr.Line, pr.Column = set.position(p.src, base+i)
	}
	return pr
}
