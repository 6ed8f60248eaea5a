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
// including those only tested with has: Cedar's validator types
// "principal.claims has rolez" as false and lets it pass, which would
// leave a misspelled claim's rule silently dead.
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

// accessPath is the dotted path of a chain of attribute reads rooted at a
// variable ("principal.claims"), or false.
func accessPath(n ast.IsNode) (string, bool) {
	switch x := n.(type) {
	case ast.NodeTypeVariable:
		return string(x.Name), true
	case ast.NodeTypeAccess:
		p, ok := accessPath(x.Arg)
		return p + "." + string(x.Value), ok
	}
	return "", false
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

func (s *Schema) checkName(set *Set, p Policy, path, name string, tools []ToolSchema) (Problem, bool) {
	var kind, what string
	var names []string
	switch path {
	case "principal":
		kind, what, names = KindAttribute, PrincipalType+" has no attribute", entityAttrs[PrincipalType]
	case "principal.claims":
		kind, what, names = KindClaim, "no claim is declared named", sortedKeys(s.Claims)
	case "resource":
		kind, what, names = KindAttribute, ResourceType+" has no attribute", entityAttrs[ResourceType]
	case "context":
		kind, what, names = KindAttribute, "context has no attribute", contextNames
	case "context.tool":
		kind, what, names = KindAttribute, "context.tool has no attribute", toolNames
	case "context.tool.annotations":
		kind, what, names = KindAttribute, "context.tool.annotations has no attribute", annotationNames
	case "context.arguments", "context.paths":
		kind, what = KindArgument, "no tool the policy applies to has an argument"
		if path == "context.paths" {
			what = "no tool the policy applies to has a path argument"
		}
		for _, t := range tools {
			a := t.Arguments
			if path == "context.paths" {
				a = t.Paths
			}
			for _, n := range a.names() {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	default:
		return Problem{}, false
	}
	if slices.Contains(names, name) {
		return Problem{}, false
	}
	pr := Problem{File: p.File, Line: p.Line, Column: p.Column, Policy: p.ID, Kind: kind, Name: name,
		Message: fmt.Sprintf("%s %q", what, name)}
	pr.Suggestion, _ = editdist.Closest(name, names)
	text, base := set.text(p)
	leaf := path[strings.LastIndexByte(path, '.')+1:]
	if i := firstOf(text, name, []string{leaf + "." + name, leaf + `["` + name + `"]`, "has " + name, `has "` + name + `"`}); i >= 0 {
		pr.Line, pr.Column = set.position(p.src, base+i)
	}
	return pr, true
}
