package policy

import (
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/gatehost/gatehost/abi"
)

// checkLiterals refuses the values a policy compares that the catalog
// never has: a Server entity whose id is no upstream's namespace
// (resource == Server::"github" where the id is "mcp.github"), and a
// string compared with an attribute whose values the catalog (or the
// ABI) fixes that no tool or caller has: context.tool's effect,
// namespace, id or wire name (context.tool.effect == "destructive":
// destructive is a group, never an effect; context.tool.name ==
// "delete_fle"), the resource's name, source or provenance, and the
// principal's method. Cedar's validator types them all as fine, and the
// rule would never apply. The principal's issuer, subject and claims and
// the arguments' values are the caller's and the agent's, not the
// catalog's: they are not checked.
func (s *Schema) checkLiterals(set *Set, p Policy) []Problem {
	pa := (*ast.Policy)(p.cedar.AST())
	var out []Problem
	add := func(d domain, name string) {
		if slices.Contains(d.names, name) {
			return
		}
		pr := problemAt(set, p, d.kind, name, d.what, d.names, []string{`"` + name + `"`})
		if d.hint != nil {
			if h, ok := d.hint(name); ok {
				pr.Suggestion = h
			}
		}
		out = append(out, pr)
	}
	nsHint := func(name string) (string, bool) { // an upstream's name where its namespace is wanted
		return "mcp." + name, slices.Contains(s.namespaces(), "mcp."+name)
	}
	server := func(u types.EntityUID) {
		if string(u.Type) == ResourceType {
			add(domain{KindEntity, "no upstream's namespace is", s.namespaces(), nsHint}, string(u.ID))
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
	known := func(n ast.IsNode) (domain, bool) {
		path, ok := accessPath(n)
		if !ok {
			return domain{}, false
		}
		switch strings.Join(path, ".") {
		case "context.tool.effect":
			return domain{KindType, "no tool's context.tool.effect is", EffectGroups, nil}, true
		case "context.tool.namespace", "resource.name":
			return domain{KindEntity, "no upstream's namespace is", s.namespaces(), nsHint}, true
		case "context.tool.id":
			return domain{KindTool, "no tool's id is", s.toolIDs(), nil}, true
		case "context.tool.name":
			return domain{KindTool, "no tool's name is", s.wireNames(), s.wireName}, true
		case "resource.source":
			return domain{KindEntity, "no tool's resource.source is", s.distinct(func(t abi.Tool) string { return t.Source }), nil}, true
		case "resource.provenance":
			return domain{KindEntity, "no tool's resource.provenance is", s.distinct(func(t abi.Tool) string { return t.Provenance }), nil}, true
		case "principal.method":
			return domain{KindType, "no caller's principal.method is", principalMethods, nil}, true
		}
		return domain{}, false
	}
	// compared checks the strings among values, compared with attr.
	compared := func(attr ast.IsNode, values ...ast.IsNode) {
		d, ok := known(attr)
		if !ok {
			return
		}
		for _, v := range values {
			if nv, isValue := v.(ast.NodeValue); isValue {
				if str, isString := nv.Value.(types.String); isString {
					add(d, string(str))
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
	// setsCompared checks the strings of one set literal against the
	// attributes the other holds.
	setsCompared := func(a, b ast.IsNode) {
		for _, e := range elements(a) {
			compared(e, elements(b)...)
		}
		for _, e := range elements(b) {
			compared(e, elements(a)...)
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
			case ast.NodeTypeContains: // ["a", "b"].contains(attr)
				compared(x.Right, elements(x.Left)...)
			case ast.NodeTypeContainsAny: // [attr].containsAny(["a"]), ["a"].containsAny([attr])
				setsCompared(x.Left, x.Right)
			case ast.NodeTypeContainsAll: // [attr].containsAll(["a"]), ["a"].containsAll([attr])
				setsCompared(x.Left, x.Right)
			case ast.NodeTypeLike:
				if d, ok := known(x.Arg); ok && !slices.ContainsFunc(d.names, func(n string) bool { return x.Value.Match(types.String(n)) }) {
					d.what, d.names, d.hint = strings.Replace(d.what, " is", " matches", 1), nil, nil
					add(d, strings.Trim(string(x.Value.MarshalCedar()), `"`))
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

// domain is what an attribute whose values the catalog fixes can hold:
// the problem kind and wording for a value it never holds, its values,
// and hint, a suggestion closer than the nearest value (an upstream's
// name where its namespace is wanted), or nil.
type domain struct {
	kind, what string
	names      []string
	hint       func(name string) (string, bool)
}

// principalMethods are the values of principal.method: the ABI's methods,
// and "" for an anonymous caller.
var principalMethods = []string{"", abi.MethodMTLS, abi.MethodOIDC, abi.MethodToken}

// wireNames are the catalog's tool names as the agent calls them
// (context.tool.name), sorted.
func (s *Schema) wireNames() []string {
	return s.distinct(func(t abi.Tool) string { return t.Name })
}

// wireName is the wire name of the tool whose id or alias is name: the
// name meant where a policy compares context.tool.name with an id.
func (s *Schema) wireName(name string) (string, bool) {
	for _, t := range s.Tools {
		if t.Action == name || slices.Contains(t.Tool.Aliases, name) {
			return t.Tool.Name, true
		}
	}
	return "", false
}

// distinct are the values of field over the catalog's tools, sorted.
func (s *Schema) distinct(field func(abi.Tool) string) []string {
	var out []string
	for _, t := range s.Tools {
		if v := field(t.Tool); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
