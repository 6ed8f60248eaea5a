package preconditions

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/docpath"
)

// outcome of one precondition.
type outcome struct {
	failed      bool
	unevaluable string // why; empty when evaluated
	rows        []any  // the rows' relevant fields, for evidence
}

// tri is three-valued (Kleene) truth: a condition whose value depends on a
// missing field or an incomparable value is unknown, and an unknown that
// decides denies.
type tri int8

const (
	no tri = iota
	yes
	unknown
)

func (c *checker) evalPrecondition(_ context.Context, dc *abi.DomainCapability, p *abi.DomainPrecondition, params map[string]any) outcome {
	e := &evaluator{params: params, now: c.now}
	if dc.LocalTimeOffset != "" {
		if t, err := time.Parse("-07:00", dc.LocalTimeOffset); err == nil {
			e.local = t.Location()
		}
	}
	var rows []map[string]any
	if p.View == "" && p.Capability == "" {
		rows = []map[string]any{params} // a rule over the call's own parameters
	} else {
		bound := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(p.Bind)) {
			v, why := e.operand(p.Bind[name])
			if why != "" {
				return outcome{unevaluable: "bind " + name + ": " + why}
			}
			if t, ok := v.(time.Time); ok {
				v = t.Format(time.RFC3339Nano)
			}
			bound[name] = v
		}
		var a abi.QueryRowsAnswer
		err := c.hostCall(abi.OpQueryRows, abi.QueryRowsRequest{Domain: c.cfg.Domain, View: p.View, Capability: p.Capability, Params: bound}, &a)
		if err != nil {
			return outcome{unevaluable: "query failed: " + err.Error()}
		}
		rows = a.Rows
	}
	var cond *abi.Condition
	switch {
	case p.DenyWhen != nil && p.Require == nil:
		cond = p.DenyWhen
	case p.Require != nil && p.DenyWhen == nil && p.Require.Match != nil:
		cond = p.Require.Match
	default:
		return outcome{unevaluable: "the precondition has no single deny_when or require.match"}
	}
	fields := map[string]bool{}
	referenced(cond, fields)
	out := outcome{rows: []any{}}
	results := make([]tri, len(rows))
	whys := make([]string, len(rows))
	for i, r := range rows {
		results[i], whys[i] = e.cond(cond, r)
		if i < maxEvidenceRows {
			out.rows = append(out.rows, relevant(r, fields))
		}
	}
	firstUnknown := func() string {
		for i, t := range results {
			if t == unknown {
				return whys[i]
			}
		}
		return ""
	}
	if p.DenyWhen != nil {
		if len(rows) == 0 {
			out.unevaluable = "no row to test"
			return out
		}
		if slices.Contains(results, yes) {
			out.failed = true
			return out
		}
		out.unevaluable = firstUnknown()
		return out
	}
	if slices.Contains(results, yes) { // require.match: one matching row suffices
		return out
	}
	if why := firstUnknown(); why != "" {
		out.unevaluable = why
		return out
	}
	out.failed = true
	return out
}

// referenced collects the first segment of every field a condition tests.
func referenced(c *abi.Condition, into map[string]bool) {
	if c.Field != "" {
		first, _, _ := strings.Cut(c.Field, ".")
		into[first] = true
	}
	for i := range c.AllOf {
		referenced(&c.AllOf[i], into)
	}
	for i := range c.AnyOf {
		referenced(&c.AnyOf[i], into)
	}
	if c.Not != nil {
		referenced(c.Not, into)
	}
}

func relevant(row map[string]any, fields map[string]bool) map[string]any {
	out := map[string]any{}
	for f := range fields {
		if v, ok := row[f]; ok {
			out[f] = v
		}
	}
	return out
}

type evaluator struct {
	params map[string]any
	now    time.Time
	local  *time.Location // zone of zone-less timestamps; nil: not comparable
}

// operand resolves an operand to a JSON value or a time.Time (now).
func (e *evaluator) operand(o abi.Operand) (any, string) {
	switch o.Kind {
	case abi.OperandLiteral:
		return o.Value, ""
	case abi.OperandParam:
		if o.Name == "" {
			return nil, "param operand without name"
		}
		v, ok := docpath.Get(e.params, docpath.Split(o.Name))
		if !ok {
			return nil, fmt.Sprintf("unbound parameter %q", o.Name)
		}
		return v, ""
	case abi.OperandNow:
		t := e.now
		if o.Offset != "" {
			d, err := time.ParseDuration(o.Offset)
			if err != nil {
				return nil, fmt.Sprintf("now offset %q: %v", o.Offset, err)
			}
			t = t.Add(d)
		}
		return t, ""
	}
	return nil, fmt.Sprintf("unknown operand kind %q", o.Kind)
}

func (e *evaluator) cond(c *abi.Condition, row map[string]any) (tri, string) {
	switch {
	case c.AllOf != nil:
		res, why := yes, ""
		for i := range c.AllOf {
			t, w := e.cond(&c.AllOf[i], row)
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
			t, w := e.cond(&c.AnyOf[i], row)
			if t == yes {
				return yes, ""
			}
			if t == unknown && why == "" {
				res, why = unknown, w
			}
		}
		return res, why
	case c.Not != nil:
		t, why := e.cond(c.Not, row)
		switch t {
		case yes:
			return no, ""
		case no:
			return yes, ""
		}
		return unknown, why
	}
	if c.Field == "" {
		return unknown, "a condition without field or composition"
	}
	got, found := docpath.Get(row, docpath.Split(c.Field))
	if c.Exists != nil {
		return truth(found == *c.Exists), ""
	}
	var op string
	var o *abi.Operand
	for _, cand := range []struct {
		name string
		o    *abi.Operand
	}{{"equals", c.Equals}, {"not_equals", c.NotEquals}, {"in", c.In}, {"not_in", c.NotIn},
		{"gt", c.Gt}, {"gte", c.Gte}, {"lt", c.Lt}, {"lte", c.Lte}, {"contains", c.Contains}} {
		if cand.o != nil {
			if o != nil {
				return unknown, fmt.Sprintf("field %s: more than one operator", c.Field)
			}
			op, o = cand.name, cand.o
		}
	}
	if o == nil {
		return unknown, fmt.Sprintf("field %s: no known operator", c.Field)
	}
	if !found {
		return unknown, fmt.Sprintf("field %s is missing", c.Field)
	}
	want, why := e.operand(*o)
	if why != "" {
		return unknown, why
	}
	switch op {
	case "equals", "not_equals":
		eq := false
		if t, ok := want.(time.Time); ok {
			gt, ok := e.time(got)
			if !ok {
				return unknown, fmt.Sprintf("field %s is not a time", c.Field)
			}
			eq = gt.Equal(t)
		} else {
			eq = docpath.Equal(got, want)
		}
		return truth(eq == (op == "equals")), ""
	case "in", "not_in":
		list, ok := want.([]any)
		if !ok {
			return unknown, fmt.Sprintf("field %s: %s needs an array, got %T", c.Field, op, want)
		}
		in := slices.ContainsFunc(list, func(x any) bool { return docpath.Equal(got, x) })
		return truth(in == (op == "in")), ""
	case "contains":
		switch g := got.(type) {
		case string:
			s, ok := want.(string)
			if !ok {
				return unknown, fmt.Sprintf("field %s: contains on a string needs a string", c.Field)
			}
			return truth(strings.Contains(g, s)), ""
		case []any:
			return truth(slices.ContainsFunc(g, func(x any) bool { return docpath.Equal(x, want) })), ""
		}
		return unknown, fmt.Sprintf("field %s: contains needs a string or an array, got %T", c.Field, got)
	}
	cmp, ok := e.compare(got, want)
	if !ok {
		return unknown, fmt.Sprintf("field %s: %v and %v are not both numbers or both times", c.Field, got, want)
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

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// compare orders two numbers, or two times (RFC 3339 strings, zone-less
// timestamps read at the domain's local offset, or now).
func (e *evaluator) compare(a, b any) (int, bool) {
	fa, okA := number(a)
	fb, okB := number(b)
	if okA && okB {
		switch {
		case fa < fb:
			return -1, true
		case fa > fb:
			return 1, true
		}
		return 0, true
	}
	ta, okA := e.time(a)
	tb, okB := e.time(b)
	if okA && okB {
		return ta.Compare(tb), true
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
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
