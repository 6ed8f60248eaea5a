package domain

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// badFunc reports a fault at a field path of the capability, precondition
// or effect being validated.
type badFunc func(field, format string, args ...any)

// scope is what an expression may refer to: the capability's declared
// parameters and the for_each names of the enclosing precondition or
// effect.
type scope struct {
	dc    *abi.DomainCapability
	vars  *catVars // the catalog's variables, whose uses are recorded
	names []string // for_each `as` names, usable as param operands
	bad   badFunc
}

// place says which operand kinds an expression may use where it stands.
type place struct {
	now, field, rows, agg bool
	// noRow: field is refused because the effect (or let) has no view or
	// capability, rather than because of where it stands; owner names it
	// ("let"; empty is an effect).
	noRow bool
	owner string
	// where names the place and what it takes, for messages: "in bind
	// (bind takes …)".
	where string
}

var (
	inBind      = place{where: "in bind (bind takes literal, param and arithmetic over those)"}
	inCondition = place{now: true, field: true, rows: true, agg: true}
)

// inEffectID and inEffectSet are the places of an effect's id and set
// values; hasRow tells whether the effect's view or capability gives a row
// for field operands.
func inEffectID(hasRow bool) place {
	return place{field: hasRow, noRow: !hasRow, where: "in an effect's id (it takes literal, param, field and arithmetic over those)"}
}

func inEffectSet(hasRow bool) place {
	return place{now: true, field: hasRow, agg: true, noRow: !hasRow, where: "in an effect's set (rows is a precondition's rows)"}
}

// inEffectWhen is the place of an effect's when; inLet that of a let's
// value, whose row is its own query's.
func inEffectWhen(hasRow bool) place {
	return place{now: true, field: hasRow, agg: true, noRow: !hasRow, where: "in an effect's when (rows is a precondition's rows)"}
}

func inLet(hasRow bool) place {
	return place{now: true, field: hasRow, agg: true, noRow: !hasRow, owner: "let", where: "in a let's value (rows is a precondition's rows)"}
}

// noRowReason says why a field cannot be read at pl.
func (pl place) noRowReason() string {
	owner, article := "effect", "an"
	if pl.owner != "" {
		owner, article = pl.owner, "a"
	}
	return fmt.Sprintf("field reads the %s's row, and %s %s without view or capability has none", owner, article, owner)
}

// identRE is a for_each `as` name, a let name and a set path {NAME}
// placeholder.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fromEndRE is a segment that reads as a negative number; indexFromEndRE
// the ones that index an array from its end (-1 the last element).
var (
	fromEndRE      = regexp.MustCompile(`^-[0-9]+$`)
	indexFromEndRE = regexp.MustCompile(`^-[1-9][0-9]*$`)
)

// checkPath reports what is wrong with a dotted path (DOMAIN.md, "Paths"):
// empty segments, a "#" before the end, an "@" that is not the whole path.
func checkPath(p string) string {
	if p == "" {
		return "empty path"
	}
	if p == "@" {
		return ""
	}
	segs := strings.Split(p, ".")
	for i, s := range segs {
		switch {
		case s == "":
			return fmt.Sprintf("path %q has an empty segment", p)
		case s == "#" && i != len(segs)-1:
			return fmt.Sprintf("path %q: # (an array's length) must be the last segment", p)
		case s == "@":
			return fmt.Sprintf("path %q: @ (the current row or element) must be the whole path", p)
		case fromEndRE.MatchString(s) && !indexFromEndRE.MatchString(s):
			return fmt.Sprintf("path %q: %s is not an index from the end (-1 is an array's last element, -2 the one before)", p, s)
		}
	}
	return ""
}

// paramPath checks a param path: a valid path whose first segment is a
// declared parameter of the capability (when it declares them) or, with
// names, one of the for_each names.
func (s *scope) paramPath(field, p string, names bool) {
	if p == "" {
		s.bad(field, "a param operand needs name")
		return
	}
	if why := checkPath(p); why != "" {
		s.bad(field, "%s", why)
		return
	}
	first, _, _ := strings.Cut(p, ".")
	if first == "@" || first == "*" || first == "#" {
		s.bad(field, "param path %q must start with a parameter name", p)
		return
	}
	if names && slices.Contains(s.names, first) {
		return
	}
	if s.dc.Parameters != nil && !slices.Contains(s.dc.Parameters, first) {
		if names && len(s.names) > 0 {
			s.bad(field, "%q is not a parameter of %s (parameters: %v; for_each names: %v)", first, s.dc.Name, s.dc.Parameters, s.names)
			return
		}
		s.bad(field, "%q is not a parameter of %s (parameters: %v)", first, s.dc.Name, s.dc.Parameters)
	}
}

// members are an operand's members other than kind, in wire order.
func members(o *abi.Operand) []string {
	var set []string
	add := func(name string, present bool) {
		if present {
			set = append(set, name)
		}
	}
	add("name", o.Name != "")
	add("value", o.Value != nil)
	add("offset", o.Offset != "")
	add("args", o.Args != nil)
	add("over", o.Over != nil)
	add("where", o.Where != nil)
	add("of", o.Of != "")
	add("join", o.Join != "")
	return set
}

// operandMembers are the members each kind may have.
var operandMembers = map[string][]string{
	abi.OperandLiteral: {"value"},
	abi.OperandParam:   {"name"},
	abi.OperandNow:     {"offset"},
	abi.OperandField:   {"name"},
	abi.OperandAdd:     {"args"}, abi.OperandSub: {"args"}, abi.OperandMul: {"args"},
	abi.OperandDiv: {"args"}, abi.OperandMin: {"args"}, abi.OperandMax: {"args"},
	abi.OperandCount: {"over", "where"},
	abi.OperandSum:   {"over", "of", "where"},
	abi.OperandRows:  {},
	abi.OperandVar:   {"name", "join"},
}

// arity is the argument count of each arithmetic kind: at least min, at
// most max (0: unbounded).
var arity = map[string]struct{ min, max int }{
	abi.OperandAdd: {2, 0}, abi.OperandMul: {2, 0},
	abi.OperandSub: {2, 2}, abi.OperandDiv: {2, 2},
	abi.OperandMin: {1, 0}, abi.OperandMax: {1, 0},
}

const operandKinds = "literal, param, now, field, add, sub, mul, div, min, max, count, sum, rows, var"

// refused reports whether kind may not stand at pl, and why.
func (pl place) refused(kind string) (string, bool) {
	var ok bool
	switch kind {
	case abi.OperandNow:
		ok = pl.now
	case abi.OperandField:
		if pl.noRow {
			return pl.noRowReason(), true
		}
		ok = pl.field
	case abi.OperandRows:
		ok = pl.rows
	case abi.OperandCount, abi.OperandSum:
		ok = pl.agg
	default:
		return "", false
	}
	if ok {
		return "", false
	}
	if pl.where == "" {
		return kind + " is not allowed here", true
	}
	return kind + " is not allowed " + pl.where, true
}

// operand validates o at field, standing at pl, at nesting depth depth
// (1 for a top-level operand).
func (s *scope) operand(field string, o *abi.Operand, pl place, depth int) {
	if depth > abi.MaxExpressionDepth {
		s.bad(field, "nested deeper than %d operands and conditions", abi.MaxExpressionDepth)
		return
	}
	allowed, known := operandMembers[o.Kind]
	if !known {
		s.bad(field, "unknown operand kind %q (want %s)", o.Kind, operandKinds)
		return
	}
	if why, no := pl.refused(o.Kind); no {
		s.bad(field, "%s", why)
		return
	}
	for _, m := range members(o) {
		if !slices.Contains(allowed, m) {
			if len(allowed) == 0 {
				s.bad(field, "a %s operand has no members but kind", o.Kind)
			} else {
				s.bad(field, "a %s operand has only %s, not %s", o.Kind, strings.Join(allowed, ", "), m)
			}
			return
		}
	}
	switch o.Kind {
	case abi.OperandParam:
		s.paramPath(field, o.Name, true)
	case abi.OperandVar:
		s.varRef(field, o)
	case abi.OperandNow:
		if o.Offset != "" {
			if _, err := time.ParseDuration(o.Offset); err != nil {
				s.bad(field+".offset", "%q is not a duration such as -24h", o.Offset)
			}
		}
	case abi.OperandField:
		if o.Name == "" {
			s.bad(field, "a field operand needs a path")
		} else if why := checkPath(o.Name); why != "" {
			s.bad(field, "%s", why)
		}
	case abi.OperandAdd, abi.OperandSub, abi.OperandMul, abi.OperandDiv, abi.OperandMin, abi.OperandMax:
		n := arity[o.Kind]
		switch {
		case n.min == n.max && len(o.Args) != n.min:
			s.bad(field+"."+o.Kind, "%s takes exactly %d operands, not %d", o.Kind, n.min, len(o.Args))
		case len(o.Args) < n.min:
			s.bad(field+"."+o.Kind, "%s takes at least %d operand(s), not %d", o.Kind, n.min, len(o.Args))
		}
		for i := range o.Args {
			f := fmt.Sprintf("%s.%s[%d]", field, o.Kind, i)
			a := &o.Args[i]
			if a.Kind == abi.OperandLiteral {
				if _, ok := a.Value.(float64); !ok {
					s.bad(f, "arithmetic takes numbers; the literal %v is a %s", a.Value, jsonType(a.Value))
					continue
				}
			}
			s.operand(f, a, pl, depth+1)
		}
	case abi.OperandCount, abi.OperandSum:
		f := field + "." + o.Kind
		switch {
		case o.Over == nil:
			s.bad(f+".over", "required: the array to %s (a param, field or rows operand)", o.Kind)
		case o.Over.Kind != abi.OperandParam && o.Over.Kind != abi.OperandField && o.Over.Kind != abi.OperandRows:
			s.bad(f+".over", "%s is over an array: a param, field or rows operand, not %q", o.Kind, o.Over.Kind)
		default:
			s.operand(f+".over", o.Over, pl, depth+1)
		}
		if o.Of != "" {
			if why := checkPath(o.Of); why != "" {
				s.bad(f+".of", "%s", why)
			}
		}
		if o.Where != nil {
			// In where, field paths are the element's.
			el := pl
			el.field, el.noRow = true, false
			s.condition(f+".where", o.Where, el, depth+1)
		}
	}
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

const operators = "equals, not_equals, in, not_in, exists, gt, gte, lt, lte, contains, starts_with, under"

// condition validates c at field, standing at pl, at nesting depth depth.
func (s *scope) condition(field string, c *abi.Condition, pl place, depth int) {
	if depth > abi.MaxExpressionDepth {
		s.bad(field, "nested deeper than %d operands and conditions", abi.MaxExpressionDepth)
		return
	}
	type op struct {
		name string
		o    *abi.Operand
	}
	ops := []op{{"equals", c.Equals}, {"not_equals", c.NotEquals}, {"in", c.In}, {"not_in", c.NotIn},
		{"gt", c.Gt}, {"gte", c.Gte}, {"lt", c.Lt}, {"lte", c.Lte}, {"contains", c.Contains}, {"starts_with", c.StartsWith}, {"under", c.Under}}
	var set []string
	for _, o := range ops {
		if o.o != nil {
			set = append(set, o.name)
		}
	}
	if c.Exists != nil {
		set = append(set, "exists")
	}
	composites := 0
	for _, present := range []bool{c.AllOf != nil, c.AnyOf != nil, c.Not != nil} {
		if present {
			composites++
		}
	}
	leaf := c.Field != "" || c.Value != nil || len(set) > 0
	switch {
	case composites > 1 || (composites == 1 && leaf):
		s.bad(field, "a condition is a leaf {field or value, operator} or exactly one of all_of, any_of, not")
		return
	case composites == 1:
		for i := range c.AllOf {
			s.condition(fmt.Sprintf("%s.all_of[%d]", field, i), &c.AllOf[i], pl, depth+1)
		}
		for i := range c.AnyOf {
			s.condition(fmt.Sprintf("%s.any_of[%d]", field, i), &c.AnyOf[i], pl, depth+1)
		}
		if (c.AllOf != nil && len(c.AllOf) == 0) || (c.AnyOf != nil && len(c.AnyOf) == 0) {
			s.bad(field, "all_of and any_of need at least one condition")
		}
		if c.Not != nil {
			s.condition(field+".not", c.Not, pl, depth+1)
		}
		return
	}
	switch {
	case c.Field != "" && c.Value != nil:
		s.bad(field, "a leaf has exactly one left-hand side: field or value, not both")
	case c.Field == "" && c.Value == nil:
		s.bad(field+".field", "required (or value: an operand)")
	case c.Field != "":
		if why := checkPath(c.Field); why != "" {
			s.bad(field+".field", "%s", why)
		} else if pl.noRow {
			s.bad(field+".field", "%s", pl.noRowReason())
		}
	default:
		s.operand(field+".value", c.Value, pl, depth+1)
	}
	if len(set) != 1 {
		s.bad(field, "want exactly one operator of %s; have %v", operators, set)
		return
	}
	for _, o := range ops {
		if o.o == nil {
			continue
		}
		f := field + "." + o.name
		s.operand(f, o.o, pl, depth+1)
		if o.name == "under" && o.o.Kind == abi.OperandVar {
			s.vars.usedAsPath(o.o.Name)
		}
		if o.o.Kind != abi.OperandLiteral {
			continue
		}
		switch o.name {
		case "in", "not_in":
			if _, ok := o.o.Value.([]any); !ok {
				s.bad(f, "a literal for %s must be an array", o.name)
			}
		case "starts_with":
			if _, ok := o.o.Value.(string); !ok {
				s.bad(f, "a literal for starts_with must be a string, not a %s", jsonType(o.o.Value))
			}
		case "under":
			if why := rootProblem(o.o.Value); why != "" {
				s.bad(f, "%s", why)
			}
		case "gt", "gte", "lt", "lte":
			switch x := o.o.Value.(type) {
			case float64:
			case string:
				if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
					s.bad(f, "%q is neither a number nor an RFC 3339 time", x)
				}
			default:
				s.bad(f, "ordering compares numbers or RFC 3339 times, not a %s", jsonType(o.o.Value))
			}
		}
	}
}

// forEach validates a for_each at field and returns its `as` names.
func (s *scope) forEach(field string, fe *abi.ForEach) []string {
	want := 1
	switch {
	case (fe.Param == "") == (len(fe.Zip) == 0):
		s.bad(field, "give exactly one of param (one array) and zip (two or more, paired)")
		return nil
	case fe.Param != "":
		s.paramPath(field+".param", fe.Param, false)
	case len(fe.Zip) < 2:
		s.bad(field+".zip", "zip pairs two or more arrays; for one give param")
	default:
		want = len(fe.Zip)
		for i, p := range fe.Zip {
			s.paramPath(fmt.Sprintf("%s.zip[%d]", field, i), p, false)
		}
	}
	if len(fe.As) != want {
		s.bad(field+".as", "want %d name(s), one per array; have %d", want, len(fe.As))
	}
	var names []string
	for i, n := range fe.As {
		f := fmt.Sprintf("%s.as[%d]", field, i)
		switch {
		case !identRE.MatchString(n):
			s.bad(f, "%q is not a name matching %s", n, identRE)
		case slices.Contains(names, n):
			s.bad(f, "duplicate name %q", n)
		case slices.Contains(s.dc.Parameters, n):
			s.bad(f, "%q is a parameter of %s; an element needs a name of its own", n, s.dc.Name)
		default:
			names = append(names, n)
		}
	}
	return names
}
