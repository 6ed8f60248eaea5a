package policy

import (
	"slices"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// checkLiterals refuses the values a policy compares that the catalog
// never has: a Server entity whose id is no upstream's namespace
// (resource == Server::"github" where the id is "mcp.github"), and a
// string compared with context.tool's effect, namespace or id that no
// tool has (context.tool.effect == "destructive": destructive is a group,
// never an effect). Cedar's validator types both as fine, and the rule
// would never apply.
func (s *Schema) checkLiterals(set *Set, p Policy) []Problem {
	pa := (*ast.Policy)(p.cedar.AST())
	var out []Problem
	add := func(kind, name, what string, names []string) {
		if slices.Contains(names, name) {
			return
		}
		pr := problemAt(set, p, kind, name, what, names, []string{`"` + name + `"`})
		if slices.Contains(names, "mcp."+name) {
			pr.Suggestion = "mcp." + name // an upstream's name where its namespace is wanted
		}
		out = append(out, pr)
	}
	server := func(u types.EntityUID) {
		if string(u.Type) == ResourceType {
			add(KindEntity, string(u.ID), "no upstream's namespace is", s.namespaces())
		}
	}
	switch sc := pa.Resource.(type) {
	case ast.ScopeTypeEq:
		server(sc.Entity)
	case ast.ScopeTypeIn:
		server(sc.Entity)
	case ast.ScopeTypeIsIn:
		server(sc.Entity)
	}
	compared := func(l, r ast.IsNode) {
		path, ok := accessPath(l)
		v, isValue := r.(ast.NodeValue)
		if !ok || !isValue || len(path) != 3 || path[0] != "context" || path[1] != "tool" {
			return
		}
		str, ok := v.Value.(types.String)
		if !ok {
			return
		}
		switch path[2] {
		case "effect":
			add(KindType, string(str), "no tool's context.tool.effect is", EffectGroups)
		case "namespace":
			add(KindEntity, string(str), "no upstream's namespace is", s.namespaces())
		case "id":
			add(KindTool, string(str), "no tool's id is", s.toolIDs())
		}
	}
	for _, c := range pa.Conditions {
		ast.Inspect(ast.NewNode(c.Body), func(n ast.IsNode) bool {
			switch x := n.(type) {
			case ast.NodeValue:
				if u, ok := x.Value.(types.EntityUID); ok {
					server(u)
				}
			case ast.NodeTypeEquals:
				compared(x.Left, x.Right)
				compared(x.Right, x.Left)
			case ast.NodeTypeNotEquals:
				compared(x.Left, x.Right)
				compared(x.Right, x.Left)
			}
			return true
		})
	}
	return out
}

// namespaces are the catalog's upstream namespaces ("mcp.fs"), sorted.
func (s *Schema) namespaces() []string {
	var out []string
	for _, t := range s.Tools {
		if ns := namespaceOf(t.Tool.ID); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// toolIDs are the catalog's tool ids, as its actions are named.
func (s *Schema) toolIDs() []string {
	ids := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		ids[i] = t.Action
	}
	return ids
}
