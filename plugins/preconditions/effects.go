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
			r, why := c.resolveEffect(c.evaluatorFor(dc, ps), eff)
			if why != "" {
				if eff.ForEach != nil {
					why = fmt.Sprintf("element %d: %s", i, why)
				}
				return nil, &effectError{k, why}
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
// parameters.
func (c *checker) resolveEffect(e *evaluator, eff *abi.DomainEffect) (abi.Effect, string) {
	if eff.Collection == "" {
		return abi.Effect{}, "no collection"
	}
	if len(eff.Set) == 0 {
		return abi.Effect{}, "no set"
	}
	var sc scope
	if eff.View != "" || eff.Capability != "" {
		bound, why := e.bind(eff.Bind)
		if why != "" {
			return abi.Effect{}, why
		}
		rows, err := c.queryRows(eff.View, eff.Capability, bound)
		if err != nil {
			return abi.Effect{}, queryFailure(err)
		}
		if len(rows) != 1 {
			return abi.Effect{}, fmt.Sprintf("the query answered %d rows, not exactly one", len(rows))
		}
		sc = scope{row: rows[0], hasRow: true}
	}
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
