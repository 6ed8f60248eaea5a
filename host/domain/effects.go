package domain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// effects validates a capability's declared effects (DOMAIN.md, "Effects")
// and records them on dc. Faults name the field as effects[i].….
func (v *validator) effects(capName string, dc *abi.DomainCapability, cf *capFile) {
	if len(cf.Effects) > 0 && !abi.IsWriteKind(cf.Kind) {
		v.add(&Error{Capability: capName, Field: "effects", Reason: fmt.Sprintf("only write kinds (action, create, update, delete) declare effects, not %q", cf.Kind)})
		return
	}
	for i, raw := range cf.Effects {
		if e := v.effect(capName, dc, i, raw); e != nil {
			dc.Effects = append(dc.Effects, *e)
		}
	}
}

func (v *validator) effect(capName string, dc *abi.DomainCapability, i int, raw json.RawMessage) *abi.DomainEffect {
	prefix := fmt.Sprintf("effects[%d]", i)
	var e abi.DomainEffect
	if err := strict(raw, &e); err != nil {
		if ke := keyError(err, "capabilities."+capName+"."+prefix); ke != nil {
			ke.Capability = capName
			v.add(ke)
			return nil
		}
		v.add(&Error{Capability: capName, Field: prefix, Reason: err.Error()})
		return nil
	}
	bad := func(field, format string, args ...any) {
		v.add(&Error{Capability: capName, Field: prefix + "." + field, Reason: fmt.Sprintf(format, args...)})
	}
	s := &scope{dc: dc, vars: v.vars, bad: bad}
	if e.ForEach != nil {
		s.names = s.forEach("for_each", e.ForEach)
	}
	s.names = append(s.names, v.lets(s, e.Let)...)
	switch {
	case e.Collection == "":
		bad("collection", "required: the collection of the document the effect changes")
	case !nameRE.MatchString(e.Collection):
		bad("collection", "%q is not a name", e.Collection)
	}
	hasRow := v.rowSource(s, e.View, e.Capability, e.Bind)
	if !hasRow && len(e.Bind) > 0 {
		bad("bind", "an effect without view or capability binds nothing")
	}
	if e.ID.Kind == "" && e.ID.Value == nil {
		bad("id", "required: the id of the document the effect changes (an operand such as {param: order_id})")
	} else {
		s.operand("id", &e.ID, inEffectID(hasRow), 1)
		if e.ID.Kind == abi.OperandLiteral {
			switch e.ID.Value.(type) {
			case string, float64:
			default:
				bad("id", "a literal id is a string or a number, not a %s", jsonType(e.ID.Value))
			}
		}
	}
	if e.When != nil {
		s.condition("when", e.When, inEffectWhen(hasRow), 1)
	}
	if len(e.Set) == 0 {
		bad("set", "required: at least one path → value")
	}
	for _, path := range slices.Sorted(maps.Keys(e.Set)) {
		f := "set." + path
		s.setPath(f, path)
		o := e.Set[path]
		s.operand(f, &o, inEffectSet(hasRow), 1)
	}
	return &e
}

// setPath checks an effect's set path: dotted, non-empty segments, each a
// name, an array index or a {NAME} placeholder of a declared parameter or a
// for_each name (a placeholder may share a segment with text:
// "items.{i}_note").
func (s *scope) setPath(field, path string) {
	for _, seg := range strings.Split(path, ".") {
		if seg == "" {
			s.bad(field, "path %q has an empty segment", path)
			return
		}
		if seg == "*" || seg == "#" || seg == "@" || fromEndRE.MatchString(seg) {
			s.bad(field, "path %q: %s does not name a place to set", path, seg)
			return
		}
		rest := seg
		for {
			open := strings.IndexByte(rest, '{')
			if open < 0 {
				if strings.IndexByte(rest, '}') >= 0 {
					s.bad(field, "path %q: unbalanced }", path)
				}
				break
			}
			if strings.IndexByte(rest[:open], '}') >= 0 {
				s.bad(field, "path %q: unbalanced }", path)
				return
			}
			end := strings.IndexByte(rest[open:], '}')
			if end < 0 {
				s.bad(field, "path %q: unbalanced {", path)
				return
			}
			name := rest[open+1 : open+end]
			switch {
			case !identRE.MatchString(name):
				s.bad(field, "path %q: {%s} is not a {NAME} placeholder", path, name)
			case slices.Contains(s.names, name):
			case s.dc.Parameters != nil && !slices.Contains(s.dc.Parameters, name):
				s.bad(field, "path %q: {%s} is neither a parameter of %s (%v) nor a for_each name (%v)", path, name, s.dc.Name, s.dc.Parameters, s.names)
			}
			rest = rest[open+end+1:]
		}
	}
}

// lets validates the lets of a precondition or an effect (DOMAIN.md,
// "let") whose scope is s (its parameters and for_each names) and returns
// their names. A let's own scope is s's with its for_each names, not the
// other lets: lets are computed independently, before anything else.
func (v *validator) lets(s *scope, lets map[string]abi.Let) []string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(lets)) {
		l := lets[name]
		f := "let." + name
		switch {
		case !identRE.MatchString(name):
			s.bad(f, "%q is not a name matching %s", name, identRE)
			continue
		case slices.Contains(s.dc.Parameters, name):
			s.bad(f, "%q is a parameter of %s; a let needs a name of its own", name, s.dc.Name)
			continue
		case slices.Contains(s.names, name):
			s.bad(f, "%q is also a for_each name", name)
			continue
		}
		ls := &scope{dc: s.dc, vars: s.vars, names: slices.Clone(s.names), bad: func(field, format string, args ...any) {
			s.bad(f+"."+field, format, args...)
		}}
		if l.ForEach != nil {
			own := ls.forEach("for_each", l.ForEach)
			for _, n := range own {
				if slices.Contains(s.names, n) || n == name {
					ls.bad("for_each.as", "%q is already a name here", n)
				}
			}
			ls.names = append(ls.names, own...)
		}
		hasRow := v.rowSource(ls, l.View, l.Capability, l.Bind)
		if !hasRow && len(l.Bind) > 0 {
			ls.bad("bind", "a let without view or capability binds nothing")
		}
		if l.Value.Kind == "" {
			ls.bad("value", "required: the let's value (an operand)")
		} else {
			ls.operand("value", &l.Value, inLet(hasRow), 1)
		}
		names = append(names, name)
	}
	return names
}
