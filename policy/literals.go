package policy

import (
	"slices"
	"strings"

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
	// known is what the attribute at path can hold, for the attributes
	// whose values the catalog fixes.
	known := func(n ast.IsNode) (kind, what string, names []string, ok bool) {
		path, ok := accessPath(n)
		if !ok {
			return "", "", nil, false
		}
		switch strings.Join(path, ".") {
		case "context.tool.effect":
			return KindType, "no tool's context.tool.effect is", EffectGroups, true
		case "context.tool.namespace", "resource.name":
			return KindEntity, "no upstream's namespace is", s.namespaces(), true
		case "context.tool.id":
			return KindTool, "no tool's id is", s.toolIDs(), true
		}
		return "", "", nil, false
	}
	// compared checks the strings among values, compared with attr.
	compared := func(attr ast.IsNode, values ...ast.IsNode) {
		kind, what, names, ok := known(attr)
		if !ok {
			return
		}
		for _, v := range values {
			if nv, isValue := v.(ast.NodeValue); isValue {
				if str, isString := nv.Value.(types.String); isString {
					add(kind, string(str), what, names)
				}
			}
		}
	}
	// elements are a set literal's elements.
	elements := func(n ast.IsNode) []ast.IsNode {
		switch x := n.(type) {
		case ast.NodeTypeSet:
			return x.Elements
		case ast.NodeValue:
			if set, ok := x.Value.(types.Set); ok {
				var out []ast.IsNode
				for v := range set.All() {
					out = append(out, ast.NodeValue{Value: v})
				}
				return out
			}
		}
		return nil
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
			case ast.NodeTypeContains: // ["a", "b"].contains(attr)
				compared(x.Right, elements(x.Left)...)
			case ast.NodeTypeContainsAny: // [attr].containsAny(["a"])
				for _, e := range elements(x.Left) {
					compared(e, elements(x.Right)...)
				}
			case ast.NodeTypeLike:
				if kind, what, names, ok := known(x.Arg); ok && !slices.ContainsFunc(names, func(n string) bool { return x.Value.Match(types.String(n)) }) {
					add(kind, strings.Trim(string(x.Value.MarshalCedar()), `"`), strings.Replace(what, " is", " matches", 1), nil)
				}
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
