package preconditions

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/docpath"
)

// maxEvidenceElements caps the non-holding for_each elements listed in one
// finding.
const maxEvidenceElements = 16

// errQueryBudget is the failure of a query.rows past abi.MaxQueriesPerCall
// for one call.
var errQueryBudget = fmt.Errorf("more than %d queries for one call", abi.MaxQueriesPerCall)

// outcome of one precondition.
type outcome struct {
	failed      bool
	unevaluable string // why; empty when evaluated
	rows        []any  // the rows' relevant fields, for evidence
	// elements are the non-holding for_each elements, for evidence: index,
	// outcome, and reason or rows.
	elements          []any
	elementsTruncated bool
}

// evaluatorFor is the evaluator of a capability's expressions over params.
func (c *checker) evaluatorFor(dc *abi.DomainCapability, params map[string]any) *evaluator {
	e := &evaluator{params: params, now: c.now, steps: &c.steps}
	if dc.LocalTimeOffset != "" {
		if t, err := time.Parse("-07:00", dc.LocalTimeOffset); err == nil {
			e.local = t.Location()
		}
	}
	return e
}

// queryRows runs one query.rows for the call being checked, within its
// query budget and over the overlay of the plan's earlier admitted writes.
func (c *checker) queryRows(view, capability string, params map[string]any) ([]map[string]any, error) {
	if c.queries >= abi.MaxQueriesPerCall {
		return nil, errQueryBudget
	}
	c.queries++
	var a abi.QueryRowsAnswer
	req := abi.QueryRowsRequest{Domain: c.cfg.Domain, View: view, Capability: capability, Params: params, Overlay: c.overlay}
	if err := c.hostCall(abi.OpQueryRows, req, &a); err != nil {
		return nil, err
	}
	return a.Rows, nil
}

// queryFailure is the reason of a failed query.
func queryFailure(err error) string {
	if errors.Is(err, errQueryBudget) {
		return err.Error()
	}
	return "query failed: " + err.Error()
}

// evalPrecondition evaluates p for one call: once, or once per for_each
// element. Per element the outcome is that of the precondition without
// for_each over the parameters with the element bound; any failed element
// fails the precondition, else any unevaluable one makes it unevaluable,
// else (and for zero elements) it holds.
func (c *checker) evalPrecondition(dc *abi.DomainCapability, p *abi.DomainPrecondition, params map[string]any) outcome {
	if p.ForEach == nil {
		return c.evalOnce(c.evaluatorFor(dc, params), p)
	}
	bound, why := forEachParams(p.ForEach, params)
	if why != "" {
		return outcome{unevaluable: why}
	}
	var out outcome
	firstUnevaluable := ""
	for i, ps := range bound {
		o := c.evalOnce(c.evaluatorFor(dc, ps), p)
		if !o.failed && o.unevaluable == "" {
			continue
		}
		el := map[string]any{"index": i, "outcome": "failed"}
		if o.failed {
			out.failed = true
		} else {
			el["outcome"] = "unevaluable"
			el["reason"] = o.unevaluable
			if firstUnevaluable == "" {
				firstUnevaluable = fmt.Sprintf("element %d: %s", i, o.unevaluable)
			}
		}
		if len(o.rows) > 0 {
			el["rows"] = o.rows
		}
		if len(out.elements) == maxEvidenceElements {
			out.elementsTruncated = true
			continue
		}
		out.elements = append(out.elements, el)
	}
	if !out.failed {
		out.unevaluable = firstUnevaluable
	}
	return out
}

// forEachParams returns, per element of a for_each, the parameters with
// the element bound: params ∪ {As[0]: a[i], As[1]: b[i], …}. why is
// non-empty when the for_each cannot be iterated: a malformed for_each, a
// path without a value or whose value is not an array, arrays of different
// lengths, or more than abi.MaxForEachElements elements.
func forEachParams(fe *abi.ForEach, params map[string]any) ([]map[string]any, string) {
	paths := fe.Zip
	switch {
	case fe.Param != "" && len(fe.Zip) > 0:
		return nil, "for_each with both param and zip"
	case fe.Param != "":
		paths = []string{fe.Param}
	case len(fe.Zip) < 2:
		return nil, "for_each needs a param or a zip of two or more paths"
	}
	if len(fe.As) != len(paths) {
		return nil, fmt.Sprintf("for_each binds %d names for %d arrays", len(fe.As), len(paths))
	}
	for i, name := range fe.As {
		if name == "" || slices.Contains(fe.As[:i], name) {
			return nil, fmt.Sprintf("for_each name %q is empty or repeated", name)
		}
	}
	arrays := make([][]any, len(paths))
	for j, path := range paths {
		v, ok := docpath.Get(params, docpath.Split(path))
		if !ok {
			return nil, fmt.Sprintf("for_each %s: unbound parameter", path)
		}
		a, ok := v.([]any)
		if !ok {
			return nil, fmt.Sprintf("for_each %s is %s, not an array", path, describe(v))
		}
		if len(a) > abi.MaxForEachElements {
			return nil, fmt.Sprintf("for_each %s has %d elements, more than %d", path, len(a), abi.MaxForEachElements)
		}
		if j > 0 && len(a) != len(arrays[0]) {
			return nil, fmt.Sprintf("for_each zip: %s has %d elements, %s has %d", paths[0], len(arrays[0]), path, len(a))
		}
		arrays[j] = a
	}
	out := make([]map[string]any, len(arrays[0]))
	for i := range out {
		ps := maps.Clone(params)
		for j, name := range fe.As {
			ps[name] = arrays[j][i]
		}
		out[i] = ps
	}
	return out, ""
}

// withLets returns e with lets computed over e's parameters and bound as
// parameters, in name order (a let reads no other let). why is non-empty
// when a let is unknown.
func (c *checker) withLets(e *evaluator, lets map[string]abi.Let) (*evaluator, string) {
	if len(lets) == 0 {
		return e, ""
	}
	ps := maps.Clone(e.params)
	for _, name := range slices.Sorted(maps.Keys(lets)) {
		l := lets[name]
		v, why := c.letValue(e, &l)
		if why != "" {
			return nil, "let " + name + ": " + why
		}
		ps[name] = v
	}
	out := *e
	out.params = ps
	return &out, ""
}

// letValue computes one let: its value, or with for_each the array of its
// values, one per element, each over the element's own query.
func (c *checker) letValue(e *evaluator, l *abi.Let) (any, string) {
	if l.ForEach == nil {
		return c.letOnce(e, l)
	}
	bound, why := forEachParams(l.ForEach, e.params)
	if why != "" {
		return nil, why
	}
	out := make([]any, len(bound))
	for i, ps := range bound {
		el := *e
		el.params = ps
		v, why := c.letOnce(&el, l)
		if why != "" {
			return nil, fmt.Sprintf("element %d: %s", i, why)
		}
		out[i] = v
	}
	return out, ""
}

// letOnce is a let's value over e's parameters and its query's one row.
func (c *checker) letOnce(e *evaluator, l *abi.Let) (any, string) {
	sc, why := c.singleRow(e, l.View, l.Capability, l.Bind)
	if why != "" {
		return nil, why
	}
	return e.operand(l.Value, sc, 1)
}

// evalOnce evaluates p, without its for_each, over e's parameters and p's
// lets.
func (c *checker) evalOnce(e *evaluator, p *abi.DomainPrecondition) outcome {
	e, why := c.withLets(e, p.Let)
	if why != "" {
		return outcome{unevaluable: why}
	}
	var rows []map[string]any
	if p.View == "" && p.Capability == "" {
		rows = []map[string]any{e.params} // a rule over the call's own parameters
	} else {
		bound, why := e.bind(p.Bind)
		if why != "" {
			return outcome{unevaluable: why}
		}
		var err error
		if rows, err = c.queryRows(p.View, p.Capability, bound); err != nil {
			return outcome{unevaluable: queryFailure(err)}
		}
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
	referenced(cond, fields, 1)
	all := make([]any, len(rows))
	for i, r := range rows {
		all[i] = r
	}
	out := outcome{rows: []any{}}
	results := make([]tri, len(rows))
	whys := make([]string, len(rows))
	for i, r := range rows {
		results[i], whys[i] = e.cond(cond, scope{row: r, hasRow: true, rows: all, hasRows: true}, 1)
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
