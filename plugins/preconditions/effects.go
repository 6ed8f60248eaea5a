package preconditions

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/docpath"
)

// maxEvidenceEffects caps the resolved effects listed in a call's evidence.
const maxEvidenceEffects = 16

// effectError is a declared effect of an admitted write that could not be
// resolved: the call is denied and nothing of it is applied.
type effectError struct {
	index  int // the effect's position in the capability's Effects
	reason string
}

// resolveEffects resolves every declared effect of dc for one admitted
// call with params, in order, reading the state before the write (the
// overlay of the plan's earlier admitted writes, not this call's own
// effects). It fails when an effect cannot be resolved or when the overlay
// would exceed abi.MaxOverlayEffects.
func (c *checker) resolveEffects(dc *abi.DomainCapability, params map[string]any) ([]abi.Effect, *effectError) {
	var out []abi.Effect
	for k := range dc.Effects {
		eff := &dc.Effects[k]
		bound := []map[string]any{params}
		if eff.ForEach != nil {
			var why string
			if bound, why = forEachParams(eff.ForEach, params); why != "" {
				return nil, &effectError{k, why}
			}
		}
		for i, ps := range bound {
			r, applies, why := c.resolveEffect(c.evaluatorFor(dc, ps), eff)
			if why != "" {
				if eff.ForEach != nil {
					why = fmt.Sprintf("element %d: %s", i, why)
				}
				return nil, &effectError{k, why}
			}
			if !applies {
				continue
			}
			out = append(out, r)
			if len(c.overlay)+len(out) > abi.MaxOverlayEffects {
				return nil, &effectError{k, fmt.Sprintf("more than %d effects in one plan's overlay", abi.MaxOverlayEffects)}
			}
		}
	}
	return out, nil
}

// resolveEffect resolves one effect (one for_each element of it) over e's
// parameters: its lets, its row, its when, then its id and set. applies is
// false when the effect's when does not hold (nothing to apply).
func (c *checker) resolveEffect(e *evaluator, eff *abi.DomainEffect) (_ abi.Effect, applies bool, _ string) {
	if eff.Collection == "" {
		return abi.Effect{}, false, "no collection"
	}
	if len(eff.Set) == 0 {
		return abi.Effect{}, false, "no set"
	}
	e, why := c.withLets(e, eff.Let)
	if why != "" {
		return abi.Effect{}, false, why
	}
	sc, why := c.singleRow(e, eff.View, eff.Capability, eff.Bind)
	if why != "" {
		return abi.Effect{}, false, why
	}
	if eff.When != nil {
		t, why := e.cond(eff.When, sc, 1)
		switch t {
		case unknown:
			return abi.Effect{}, false, "when: " + why
		case no:
			return abi.Effect{}, false, ""
		}
	}
	r, why := resolveChange(e, eff, sc)
	return r, why == "", why
}

// singleRow runs the query of a let or an effect, when it has one, and
// returns the scope of the single row it must answer; without view and
// capability the scope has no row.
func (c *checker) singleRow(e *evaluator, view, capability string, bind map[string]abi.Operand) (scope, string) {
	if view == "" && capability == "" {
		return scope{}, ""
	}
	bound, why := e.bind(bind)
	if why != "" {
		return scope{}, why
	}
	rows, err := c.queryRows(view, capability, bound)
	if err != nil {
		return scope{}, queryFailure(err)
	}
	if len(rows) != 1 {
		return scope{}, fmt.Sprintf("the query answered %d rows, not exactly one", len(rows))
	}
	return scope{row: rows[0], hasRow: true}, ""
}

// resolveChange resolves an effect's id and set in scope sc.
func resolveChange(e *evaluator, eff *abi.DomainEffect, sc scope) (abi.Effect, string) {
	idv, why := e.operand(eff.ID, sc, 1)
	if why != "" {
		return abi.Effect{}, "id: " + why
	}
	id, ok := text(idv)
	if !ok {
		return abi.Effect{}, fmt.Sprintf("id is %s, not a string or a number", describe(idv))
	}
	set := map[string]any{}
	for _, path := range slices.Sorted(maps.Keys(eff.Set)) {
		p, why := fillPath(path, e.params)
		if why != "" {
			return abi.Effect{}, "set " + path + ": " + why
		}
		v, why := e.operand(eff.Set[path], sc, 1)
		if why != "" {
			return abi.Effect{}, "set " + path + ": " + why
		}
		if _, dup := set[p]; dup {
			return abi.Effect{}, fmt.Sprintf("set %s: another set path also resolves to %s", path, p)
		}
		out, why := exportValue(v)
		if why != "" {
			return abi.Effect{}, "set " + path + ": " + why
		}
		set[p] = out
	}
	return abi.Effect{Collection: eff.Collection, ID: id, Set: set}, ""
}

// fillPath replaces each {NAME} of a set path with the text of parameter
// NAME (a call parameter or a for_each name): a string, or a number in its
// shortest form. A value that is empty or holds a dot would change the
// path's segments, so it cannot be used.
func fillPath(path string, params map[string]any) (string, string) {
	var b strings.Builder
	rest := path
	for {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			b.WriteString(rest)
			return b.String(), ""
		}
		if rest[open] == '}' {
			return "", "unbalanced }"
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] != '}' {
			return "", "unclosed {"
		}
		name := rest[open+1 : open+1+end]
		v, ok := docpath.Get(params, docpath.Split(name))
		if name == "" || !ok {
			return "", fmt.Sprintf("placeholder {%s}: unbound parameter", name)
		}
		s, ok := text(v)
		if !ok {
			return "", fmt.Sprintf("placeholder {%s} is %s, not a string or a number", name, describe(v))
		}
		if s == "" || strings.Contains(s, ".") {
			return "", fmt.Sprintf("placeholder {%s} is %q, not usable as a path segment", name, s)
		}
		b.WriteString(rest[:open])
		b.WriteString(s)
		rest = rest[open+1+end+1:]
	}
}
