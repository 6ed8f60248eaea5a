package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
)

// Variables (v4, DOMAIN.md "vars"): values a catalog declares and the host
// config sets (domains.NAME.vars), such as the directory an MCP server
// serves. A catalog refers to one with the operand {var: NAME} (optionally
// {var: NAME, join: PATH}); Bind replaces each reference by the literal
// value, so a gate never sees a variable.

// varFile is a declared variable.
type varFile struct {
	Description string `json:"description,omitempty"`
	// Default is the value when the host config sets none: a string, or
	// {upstream: NAME, arg: N} (an argument of an MCP upstream's command),
	// in the forms of domains.NAME.vars.
	Default any `json:"default,omitempty"`
}

// varNameRE is a variable's name: lower case, as config keys are folded to
// lower case.
var varNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// catVars are a catalog's variables: declared, how they are used, bound.
type catVars struct {
	declared map[string]string          // name → description
	defaults map[string]any             // name → default value, when declared
	path     map[string]bool            // used as a path: its value must be absolute
	uses     map[string]map[string]bool // capability → the variables it reads
	values   map[string]string          // bound so far
}

func newCatVars() *catVars {
	return &catVars{declared: map[string]string{}, defaults: map[string]any{}, path: map[string]bool{}, uses: map[string]map[string]bool{}, values: map[string]string{}}
}

func (cv *catVars) usedAsPath(name string) { cv.path[name] = true }

// declareVars validates the top-level vars.
func (v *validator) declareVars(vars map[string]varFile) {
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if !varNameRE.MatchString(name) {
			v.add(&Error{Field: "vars." + name, Reason: "a var's name must match " + varNameRE.String()})
			continue
		}
		v.vars.declared[name] = strings.Join(strings.Fields(vars[name].Description), " ")
		switch d := vars[name].Default.(type) {
		case nil:
		case string:
			v.vars.defaults[name] = d
		case map[string]any:
			up, ok := d["upstream"].(string)
			_, hasArg := d["arg"].(float64)
			if !ok || up == "" || !hasArg || len(d) != 2 {
				v.add(&Error{Field: "vars." + name + ".default", Reason: "want a string or {upstream: NAME, arg: N}"})
				continue
			}
			v.vars.defaults[name] = d
		default:
			v.add(&Error{Field: "vars." + name + ".default", Reason: "want a string or {upstream: NAME, arg: N}"})
		}
	}
}

// checkVarsUsed reports each declared variable nothing reads.
func (v *validator) checkVarsUsed() {
	used := map[string]bool{}
	for _, names := range v.vars.uses {
		for n := range names {
			used[n] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.vars.declared)) {
		if !used[name] {
			v.add(&Error{Field: "vars." + name, Reason: "declared, but no precondition or effect reads it"})
		}
	}
}

// varRef validates a var operand and records its use.
func (s *scope) varRef(field string, o *abi.Operand) {
	if s.vars == nil {
		s.bad(field, "var operands are not allowed here")
		return
	}
	if _, ok := s.vars.declared[o.Name]; !ok {
		if len(s.vars.declared) == 0 {
			s.bad(field, "unknown var %q: the catalog declares no vars (top level: vars: {%s: {description: …}})", o.Name, o.Name)
		} else {
			s.bad(field, "unknown var %q (declared: %s)", o.Name, strings.Join(slices.Sorted(maps.Keys(s.vars.declared)), ", "))
		}
		return
	}
	if o.Join != "" {
		j := o.Join
		if path.IsAbs(j) || path.Clean(j) != strings.TrimSuffix(j, "/") || j == "." || slices.Contains(strings.Split(j, "/"), "..") {
			s.bad(field+".join", "%q is not a clean relative path below the var's value (such as public or a/b)", j)
			return
		}
		s.vars.usedAsPath(o.Name)
	}
	if s.vars.uses[s.dc.Name] == nil {
		s.vars.uses[s.dc.Name] = map[string]bool{}
	}
	s.vars.uses[s.dc.Name][o.Name] = true
}

// rootProblem says what is wrong with a literal right side of under.
func rootProblem(v any) string {
	r, ok := v.(string)
	switch {
	case !ok:
		return fmt.Sprintf("a literal for under must be an absolute path, not a %s", jsonType(v))
	case !path.IsAbs(r):
		return fmt.Sprintf("a literal for under must be an absolute path (starting with /), not %q", r)
	}
	return ""
}

// Vars lists the catalog's declared variables, sorted.
func (c *Catalog) Vars() []string { return slices.Sorted(maps.Keys(c.vars.declared)) }

// VarDefault is a declared variable's default value (a string, or a
// map {upstream, arg}), nil when it declares none.
func (c *Catalog) VarDefault(name string) any { return c.vars.defaults[name] }

// VarDescription is a declared variable's description.
func (c *Catalog) VarDescription(name string) string { return c.vars.declared[name] }

// VarIsPath reports whether a variable is used as a path (under's right
// side, or with join), so that its value must be an absolute path.
func (c *Catalog) VarIsPath(name string) bool { return c.vars.path[name] }

// Unbound lists the variables the capability named name (or whose tools
// include name) reads and that are not bound, sorted. The host refuses to
// answer for such a capability: its preconditions cannot be evaluated.
func (c *Catalog) Unbound(name string) []string {
	n, ok := c.tools[name]
	if !ok {
		return nil
	}
	var out []string
	for v := range c.vars.uses[n] {
		if _, bound := c.vars.values[v]; !bound {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// VarError is a variable's value that Bind refuses.
type VarError struct {
	Domain, Name, Reason string
}

func (e *VarError) Error() string {
	return fmt.Sprintf("domain %s: var %s: %s", e.Domain, e.Name, e.Reason)
}

// Is makes a *VarError match ErrInvalid.
func (e *VarError) Is(target error) bool { return target == ErrInvalid }

// Bind returns the catalog with the variables in values set: every
// reference to one is replaced by its value as a literal (joined with the
// reference's join). Every name must be declared, and a variable used as a
// path must be an absolute path. Variables left out stay unbound (Unbound);
// binding one again is an error. c is not changed.
func (c *Catalog) Bind(values map[string]string) (*Catalog, error) {
	for _, name := range slices.Sorted(maps.Keys(values)) {
		val := values[name]
		_, declared := c.vars.declared[name]
		_, again := c.vars.values[name]
		switch {
		case !declared && len(c.vars.declared) == 0:
			return nil, &VarError{c.Name, name, "the catalog declares no vars"}
		case !declared:
			return nil, &VarError{c.Name, name, fmt.Sprintf("not declared by the catalog (declared: %s)", strings.Join(c.Vars(), ", "))}
		case again:
			return nil, &VarError{c.Name, name, "already bound"}
		case c.vars.path[name] && !path.IsAbs(val):
			return nil, &VarError{c.Name, name, fmt.Sprintf("%q is not an absolute path (the catalog compares paths under it)", val)}
		case val == "":
			return nil, &VarError{c.Name, name, "empty"}
		}
	}
	nv := &catVars{declared: c.vars.declared, defaults: c.vars.defaults, path: c.vars.path, uses: c.vars.uses, values: maps.Clone(c.vars.values)}
	maps.Copy(nv.values, values)
	out := &Catalog{Name: c.Name, Description: c.Description, Version: c.Version, LocalTimeOffset: c.LocalTimeOffset,
		views: c.views, caps: maps.Clone(c.caps), tools: c.tools, synth: c.synth, vars: nv}
	c.mu.RLock()
	out.capViews = maps.Clone(c.capViews)
	c.mu.RUnlock()
	for capName, names := range c.vars.uses {
		touched := false
		for n := range names {
			if _, ok := values[n]; ok {
				touched = true
			}
		}
		if !touched {
			continue
		}
		dc, err := substitute(c.caps[capName], values)
		if err != nil {
			return nil, &Error{Domain: c.Name, Capability: capName, Reason: "binding vars: " + err.Error()}
		}
		out.caps[capName] = dc
	}
	return out, nil
}

// substitute copies dc with each var operand named in values replaced by
// its literal value.
func substitute(dc *abi.DomainCapability, values map[string]string) (*abi.DomainCapability, error) {
	b, err := json.Marshal(dc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers keep their text
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	doc = replaceVars(doc, values)
	if b, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	var out abi.DomainCapability
	if err := strict(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// replaceVars walks a capability's JSON: an object {kind: var, name, join?}
// whose name is in values becomes {kind: literal, value}. A literal's value
// is data and is not walked.
func replaceVars(v any, values map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		switch x["kind"] {
		case abi.OperandLiteral:
			return x
		case abi.OperandVar:
			name, _ := x["name"].(string)
			val, ok := values[name]
			if !ok {
				return x
			}
			if j, _ := x["join"].(string); j != "" {
				val = path.Join(val, j)
			}
			return map[string]any{"kind": abi.OperandLiteral, "value": val}
		}
		for k, e := range x {
			x[k] = replaceVars(e, values)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = replaceVars(e, values)
		}
	}
	return v
}
