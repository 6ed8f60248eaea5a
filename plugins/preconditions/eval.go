package preconditions

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/docpath"
)

// tri is three-valued (Kleene) truth: a condition whose value depends on a
// missing field or an incomparable value is unknown, and an unknown that
// decides denies.
type tri int8

const (
	no tri = iota
	yes
	unknown
)

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// scope is what an expression reads besides the parameters: the current
// row (the row a condition tests; in an aggregate's where, the element,
// which may be a scalar) and the rows the precondition's query answered.
type scope struct {
	row     any
	hasRow  bool
	rows    []any
	hasRows bool
}

// evaluator resolves operands and tests conditions for one set of
// parameters: a call's, or a call's with one for_each element bound.
type evaluator struct {
	params map[string]any
	now    time.Time
	local  *time.Location // zone of zone-less timestamps; nil: not comparable
	// steps, when set, is the call's remaining evaluation budget, shared by
	// every evaluator of the call.
	steps *int
}

// maxSteps bounds the operands and conditions evaluated for one call.
// Depth is bounded, but aggregates nest: a count over 1,000 rows inside a
// where over 1,000 rows is a million element tests, and each further level
// multiplies it by the rows again. Past the budget the expression is
// unknown, so the call is denied in bounded time instead of running until
// the stage's timeout or memory ends it. An aggregate over abi.MaxQueryRows
// rows costs a few thousand steps, so a call has room for hundreds.
const maxSteps = 1 << 20

// tooMuchWork is the reason given past maxSteps.
var tooMuchWork = fmt.Sprintf("evaluation needs more than %d steps for one call", maxSteps)

// step spends one unit of the call's budget; false when it is spent.
func (e *evaluator) step() bool {
	if e.steps == nil {
		return true
	}
	if *e.steps <= 0 {
		return false
	}
	*e.steps--
	return true
}

// tooDeep is the reason given for an expression nested deeper than
// abi.MaxExpressionDepth. The root operand or condition is level 1; every
// nested operand (an argument, an aggregate's over, a leaf's value or
// right-hand side) and every nested condition (a composite's member, an
// aggregate's where) is one level deeper.
var tooDeep = fmt.Sprintf("expression nested deeper than %d levels", abi.MaxExpressionDepth)

// getPath follows a dotted row path; "@" alone is v itself.
func getPath(v any, path string) (any, bool) {
	if path == "@" {
		return v, v != nil
	}
	return docpath.Get(v, docpath.Split(path))
}

// lookup resolves a param or field operand. absent is true when the
// operand is well formed but its path has no value.
func (e *evaluator) lookup(o abi.Operand, sc scope) (v any, absent bool, why string) {
	if o.Name == "" {
		return nil, false, o.Kind + " operand without name"
	}
	if o.Kind == abi.OperandParam {
		v, ok := docpath.Get(e.params, docpath.Split(o.Name))
		if !ok {
			return nil, true, fmt.Sprintf("unbound parameter %q", o.Name)
		}
		return v, false, ""
	}
	if !sc.hasRow {
		return nil, false, fmt.Sprintf("field operand %q has no row to read", o.Name)
	}
	v, ok := getPath(sc.row, o.Name)
	if !ok {
		return nil, true, fmt.Sprintf("field %s is missing", o.Name)
	}
	return v, false, ""
}

// operand resolves o at level d to a JSON value, a *big.Rat (a computed
// number) or a time.Time (now). why is non-empty when it is unknown.
func (e *evaluator) operand(o abi.Operand, sc scope, d int) (any, string) {
	if d > abi.MaxExpressionDepth {
		return nil, tooDeep
	}
	if !e.step() {
		return nil, tooMuchWork
	}
	switch o.Kind {
	case abi.OperandLiteral:
		return o.Value, ""
	case abi.OperandParam, abi.OperandField:
		v, _, why := e.lookup(o, sc)
		return v, why
	case abi.OperandNow:
		t := e.now
		if o.Offset != "" {
			dur, err := time.ParseDuration(o.Offset)
			if err != nil {
				return nil, fmt.Sprintf("now offset %q: %v", o.Offset, err)
			}
			t = t.Add(dur)
		}
		return t, ""
	case abi.OperandRows:
		if !sc.hasRows {
			return nil, "rows operand outside a precondition's condition"
		}
		return sc.rows, ""
	case abi.OperandAdd, abi.OperandSub, abi.OperandMul, abi.OperandDiv, abi.OperandMin, abi.OperandMax:
		return e.arith(o, sc, d)
	case abi.OperandCount, abi.OperandSum:
		return e.aggregate(o, sc, d)
	}
	return nil, fmt.Sprintf("unknown operand kind %q", o.Kind)
}

// arith computes add, sub, mul, div, min or max exactly.
func (e *evaluator) arith(o abi.Operand, sc scope, d int) (any, string) {
	n := len(o.Args)
	switch {
	case (o.Kind == abi.OperandAdd || o.Kind == abi.OperandMul) && n < 2,
		(o.Kind == abi.OperandSub || o.Kind == abi.OperandDiv) && n != 2,
		n < 1:
		return nil, fmt.Sprintf("%s with %d arguments", o.Kind, n)
	}
	xs := make([]*big.Rat, n)
	for i, a := range o.Args {
		v, why := e.operand(a, sc, d+1)
		if why != "" {
			return nil, why
		}
		r, ok := rat(v)
		if !ok {
			return nil, fmt.Sprintf("%s argument %d is %s, not a number", o.Kind, i, describe(v))
		}
		xs[i] = r
	}
	acc := new(big.Rat).Set(xs[0])
	for _, x := range xs[1:] {
		switch o.Kind {
		case abi.OperandAdd:
			acc.Add(acc, x)
		case abi.OperandSub:
			acc.Sub(acc, x)
		case abi.OperandMul:
			acc.Mul(acc, x)
		case abi.OperandDiv:
			if x.Sign() == 0 {
				return nil, "division by zero"
			}
			acc.Quo(acc, x)
		case abi.OperandMin:
			if x.Cmp(acc) < 0 {
				acc.Set(x)
			}
		case abi.OperandMax:
			if x.Cmp(acc) > 0 {
				acc.Set(x)
			}
		}
		if tooBig(acc) {
			return nil, fmt.Sprintf("%s: the result is too large to compute exactly", o.Kind)
		}
	}
	return acc, ""
}

// aggregate computes count or sum over the elements of Over for which
// Where holds. An element for which Where is unknown makes the aggregate
// unknown; so does, for sum, an element without a number at Of.
func (e *evaluator) aggregate(o abi.Operand, sc scope, d int) (any, string) {
	if o.Over == nil {
		return nil, o.Kind + " without over"
	}
	if o.Kind == abi.OperandCount && o.Of != "" {
		return nil, "count with of"
	}
	v, why := e.operand(*o.Over, sc, d+1)
	if why != "" {
		return nil, why
	}
	elems, ok := v.([]any)
	if !ok {
		return nil, fmt.Sprintf("%s over %s, not an array", o.Kind, describe(v))
	}
	acc := new(big.Rat)
	one := big.NewRat(1, 1)
	for i, el := range elems {
		if o.Where != nil {
			t, why := e.cond(o.Where, scope{row: el, hasRow: true, rows: sc.rows, hasRows: sc.hasRows}, d+1)
			if t == unknown {
				return nil, fmt.Sprintf("%s element %d: %s", o.Kind, i, why)
			}
			if t == no {
				continue
			}
		}
		if o.Kind == abi.OperandCount {
			acc.Add(acc, one)
			continue
		}
		x := el
		if o.Of != "" {
			if x, ok = getPath(el, o.Of); !ok {
				return nil, fmt.Sprintf("sum element %d has no %s", i, o.Of)
			}
		}
		r, ok := rat(x)
		if !ok {
			return nil, fmt.Sprintf("sum element %d is %s, not a number", i, describe(x))
		}
		acc.Add(acc, r)
		if tooBig(acc) {
			return nil, "sum: the result is too large to compute exactly"
		}
	}
	return acc, ""
}

// describe names a value's JSON type for a reason.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case time.Time:
		return "a time"
	}
	if isNumber(v) {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// operator is the one operator of a leaf: its name and right-hand side
// (nil for exists).
func operator(c *abi.Condition) (op string, rhs *abi.Operand, n int) {
	for _, cand := range []struct {
		name string
		o    *abi.Operand
	}{{"equals", c.Equals}, {"not_equals", c.NotEquals}, {"in", c.In}, {"not_in", c.NotIn},
		{"gt", c.Gt}, {"gte", c.Gte}, {"lt", c.Lt}, {"lte", c.Lte}, {"contains", c.Contains},
		{"starts_with", c.StartsWith}, {"under", c.Under}} {
		if cand.o != nil {
			op, rhs = cand.name, cand.o
			n++
		}
	}
	if c.Exists != nil {
		op, rhs = "exists", nil
		n++
	}
	return op, rhs, n
}

// cond tests c, at level d, in scope sc.
func (e *evaluator) cond(c *abi.Condition, sc scope, d int) (tri, string) {
	if d > abi.MaxExpressionDepth {
		return unknown, tooDeep
	}
	if !e.step() {
		return unknown, tooMuchWork
	}
	composites := 0
	for _, set := range []bool{c.AllOf != nil, c.AnyOf != nil, c.Not != nil} {
		if set {
			composites++
		}
	}
	_, _, ops := operator(c)
	isLeaf := c.Field != "" || c.Value != nil || ops > 0
	if composites > 1 || (composites == 1 && isLeaf) {
		return unknown, "a condition with more than one of all_of, any_of, not and a leaf"
	}
	switch {
	case c.AllOf != nil:
		res, why := yes, ""
		for i := range c.AllOf {
			t, w := e.cond(&c.AllOf[i], sc, d+1)
			if t == no {
				return no, ""
			}
			if t == unknown && why == "" {
				res, why = unknown, w
			}
		}
		return res, why
	case c.AnyOf != nil:
		res, why := no, ""
		for i := range c.AnyOf {
			t, w := e.cond(&c.AnyOf[i], sc, d+1)
			if t == yes {
				return yes, ""
			}
			if t == unknown && why == "" {
				res, why = unknown, w
			}
		}
		return res, why
	case c.Not != nil:
		t, why := e.cond(c.Not, sc, d+1)
		switch t {
		case yes:
			return no, ""
		case no:
			return yes, ""
		}
		return unknown, why
	}
	return e.leaf(c, sc, d)
}

// leaf tests a {field|value, operator} condition.
func (e *evaluator) leaf(c *abi.Condition, sc scope, d int) (tri, string) {
	if (c.Field != "") == (c.Value != nil) {
		if c.Field == "" {
			return unknown, "a condition without field, value or composition"
		}
		return unknown, "a condition with both field and value"
	}
	label := "field " + c.Field
	if c.Value != nil {
		label = c.Value.Kind + " value"
	}
	op, rhs, n := operator(c)
	switch {
	case n == 0:
		return unknown, label + ": no known operator"
	case n > 1:
		return unknown, label + ": more than one operator"
	}
	var got any
	if c.Field != "" {
		if !sc.hasRow {
			return unknown, label + " has no row to read"
		}
		v, found := getPath(sc.row, c.Field)
		if op == "exists" {
			return truth(found == *c.Exists), ""
		}
		if !found {
			return unknown, label + " is missing"
		}
		got = v
	} else {
		if op == "exists" {
			return e.valueExists(*c.Value, *c.Exists, sc, d+1)
		}
		v, why := e.operand(*c.Value, sc, d+1)
		if why != "" {
			return unknown, why
		}
		got = v
	}
	want, why := e.operand(*rhs, sc, d+1)
	if why != "" {
		return unknown, why
	}
	return e.apply(op, label, got, want)
}

// valueExists is {value: X, exists: B}: X exists when it resolves. A param
// or field whose path has no value does not exist; any other failure to
// resolve (a malformed or incomputable operand) is unknown, so that it can
// decide neither way.
func (e *evaluator) valueExists(o abi.Operand, want bool, sc scope, d int) (tri, string) {
	if d > abi.MaxExpressionDepth {
		return unknown, tooDeep
	}
	if o.Kind == abi.OperandParam || o.Kind == abi.OperandField {
		_, absent, why := e.lookup(o, sc)
		if absent {
			return truth(!want), ""
		}
		if why != "" {
			return unknown, why
		}
		return truth(want), ""
	}
	if _, why := e.operand(o, sc, d); why != "" {
		return unknown, why
	}
	return truth(want), ""
}

// apply tests got op want.
func (e *evaluator) apply(op, label string, got, want any) (tri, string) {
	switch op {
	case "equals", "not_equals":
		_, gotTime := got.(time.Time)
		_, wantTime := want.(time.Time)
		var eq bool
		if gotTime || wantTime {
			c, ok := e.compareTimes(got, want)
			if !ok {
				return unknown, fmt.Sprintf("%s: %v and %v are not both times", label, export(got), export(want))
			}
			eq = c == 0
		} else {
			eq = equal(got, want)
		}
		return truth(eq == (op == "equals")), ""
	case "in", "not_in":
		list, ok := want.([]any)
		if !ok {
			return unknown, fmt.Sprintf("%s: %s needs an array, got %s", label, op, describe(want))
		}
		in := slices.ContainsFunc(list, func(x any) bool { return equal(got, x) })
		return truth(in == (op == "in")), ""
	case "contains":
		switch g := got.(type) {
		case string:
			s, ok := want.(string)
			if !ok {
				return unknown, fmt.Sprintf("%s: contains on a string needs a string", label)
			}
			return truth(strings.Contains(g, s)), ""
		case []any:
			return truth(slices.ContainsFunc(g, func(x any) bool { return equal(x, want) })), ""
		}
		return unknown, fmt.Sprintf("%s: contains needs a string or an array, got %s", label, describe(got))
	case "starts_with":
		g, okG := got.(string)
		w, okW := want.(string)
		if !okG || !okW {
			return unknown, fmt.Sprintf("%s: starts_with needs two strings, got %s and %s", label, describe(got), describe(want))
		}
		return truth(strings.HasPrefix(g, w)), ""
	case "under":
		g, okG := got.(string)
		w, okW := want.(string)
		if !okG || !okW {
			return unknown, fmt.Sprintf("%s: under needs two strings, got %s and %s", label, describe(got), describe(want))
		}
		under, ok := abi.PathUnder(g, w)
		if !ok {
			return unknown, fmt.Sprintf("%s: under needs an absolute path to compare with, got %q", label, w)
		}
		return truth(under), ""
	}
	cmp, ok := compareNumbers(got, want)
	if !ok {
		cmp, ok = e.compareTimes(got, want)
	}
	if !ok {
		return unknown, fmt.Sprintf("%s: %v and %v are not both numbers or both times", label, export(got), export(want))
	}
	switch op {
	case "gt":
		return truth(cmp > 0), ""
	case "gte":
		return truth(cmp >= 0), ""
	case "lt":
		return truth(cmp < 0), ""
	}
	return truth(cmp <= 0), "" // lte
}

// compareTimes orders two times: RFC 3339 strings, zone-less timestamps
// read at the domain's local offset, or now.
func (e *evaluator) compareTimes(a, b any) (int, bool) {
	ta, okA := e.time(a)
	tb, okB := e.time(b)
	if !okA || !okB {
		return 0, false
	}
	return ta.Compare(tb), true
}

func (e *evaluator) time(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t, true
		}
		if e.local != nil {
			for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
				if t, err := time.ParseInLocation(layout, x, e.local); err == nil {
					return t, true
				}
			}
		}
	}
	return time.Time{}, false
}

// bind resolves a bind (or the bind of an effect's query) into query
// parameters, names in sorted order so the first failure reported is
// stable. A computed number is sent as its nearest float64, a time as RFC
// 3339 text.
func (e *evaluator) bind(b map[string]abi.Operand) (map[string]any, string) {
	bound := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		v, why := e.operand(b[name], scope{}, 1)
		if why != "" {
			return nil, "bind " + name + ": " + why
		}
		out, why := exportValue(v)
		if why != "" {
			return nil, "bind " + name + ": " + why
		}
		bound[name] = out
	}
	return bound, ""
}

// referenced collects the first segment of every row field a condition
// tests (leaf fields and field operands outside an aggregate's where,
// whose fields are an element's), for the evidence of a finding.
func referenced(c *abi.Condition, into map[string]bool, d int) {
	if c == nil || d > abi.MaxExpressionDepth {
		return
	}
	addField(c.Field, into)
	for _, o := range []*abi.Operand{c.Value, c.Equals, c.NotEquals, c.In, c.NotIn, c.Gt, c.Gte, c.Lt, c.Lte, c.Contains, c.StartsWith, c.Under} {
		referencedOperand(o, into, d+1)
	}
	for i := range c.AllOf {
		referenced(&c.AllOf[i], into, d+1)
	}
	for i := range c.AnyOf {
		referenced(&c.AnyOf[i], into, d+1)
	}
	referenced(c.Not, into, d+1)
}

func referencedOperand(o *abi.Operand, into map[string]bool, d int) {
	if o == nil || d > abi.MaxExpressionDepth {
		return
	}
	if o.Kind == abi.OperandField {
		addField(o.Name, into)
	}
	for i := range o.Args {
		referencedOperand(&o.Args[i], into, d+1)
	}
	referencedOperand(o.Over, into, d+1)
}

func addField(path string, into map[string]bool) {
	if path == "" || path == "@" {
		return
	}
	first, _, _ := strings.Cut(path, ".")
	into[first] = true
}

func relevant(row map[string]any, fields map[string]bool) map[string]any {
	out := map[string]any{}
	for f := range fields {
		if v, ok := row[f]; ok {
			out[f] = export(v) // a let in the row of a view-less precondition may be computed
		}
	}
	return out
}
