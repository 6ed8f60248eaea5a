// Package domain reads and validates domain catalogs (domain.yaml): the
// capabilities of an application domain, their kinds, the views that read its
// state, and the preconditions that guard its writes. See DOMAIN.md in this
// directory for the format.
//
// A catalog is validated whole when it is loaded; every fault is reported as
// an *Error naming the capability, precondition id or view and the field.
// Validation against a data source (does each view have a definition the
// source can run?) is Catalog.Prepare.
package domain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Version is the catalog format version this package reads.
const Version = 1

// MaxCatalogBytes caps a catalog file.
const MaxCatalogBytes = 4 << 20

// Catalog is a validated domain catalog. It is immutable.
type Catalog struct {
	// Name is the domain's name, such as "retail".
	Name        string
	Description string
	// LocalTimeOffset is the zone ("-05:00") of zone-less timestamps in
	// the domain's data.
	LocalTimeOffset string

	views    map[string]*datasource.View
	capViews map[string]*datasource.View // query/get capability → its view
	caps     map[string]*abi.DomainCapability
	tools    map[string]string // tool name → capability name
}

// Error is one fault of a catalog. Empty fields do not apply.
type Error struct {
	Domain       string
	View         string
	Capability   string
	Precondition string
	// Field is the path of the faulty field within the view, capability or
	// precondition, such as "bind.order_id".
	Field  string
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("domain")
	if e.Domain != "" {
		b.WriteString(" " + e.Domain)
	}
	if e.View != "" {
		b.WriteString(": view " + e.View)
	}
	if e.Capability != "" {
		b.WriteString(": capability " + e.Capability)
	}
	if e.Precondition != "" {
		b.WriteString(": precondition " + e.Precondition)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	return b.String() + ": " + e.Reason
}

// ErrInvalid matches (errors.Is) every error of Load and Parse about the
// catalog's content.
var ErrInvalid = errors.New("invalid domain catalog")

// Is makes every *Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// file is the YAML shape; members are decoded strictly, one capability and
// one precondition at a time so that errors can name them.
type file struct {
	Domain          string                     `json:"domain"`
	Version         int                        `json:"version"`
	Description     string                     `json:"description,omitempty"`
	LocalTimeOffset string                     `json:"local_time_offset,omitempty"`
	Views           map[string]json.RawMessage `json:"views,omitempty"`
	Capabilities    map[string]json.RawMessage `json:"capabilities"`
}

type capFile struct {
	Kind          string            `json:"kind"`
	Description   string            `json:"description,omitempty"`
	Entity        string            `json:"entity,omitempty"`
	Tools         []string          `json:"tools,omitempty"`
	Parameters    []json.RawMessage `json:"parameters,omitempty"`
	View          string            `json:"view,omitempty"`
	Preconditions []json.RawMessage `json:"preconditions,omitempty"`
	Effects       []json.RawMessage `json:"effects,omitempty"`
}

type paramFile struct {
	Name        string `json:"name"`
	Type        any    `json:"type,omitempty"`
	Required    *bool  `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
}

// Load reads and validates the catalog file at path (YAML or JSON), of at
// most MaxCatalogBytes. A path that is not a regular file (a named pipe, a
// device) is refused without being read: errors.Is(err,
// host.ErrNotRegular), or host.ErrFileTooLarge past the cap.
func Load(path string) (*Catalog, error) {
	b, err := safefile.ReadFile(path, MaxCatalogBytes)
	if err != nil {
		return nil, fmt.Errorf("domain: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse validates a catalog given as YAML (JSON is YAML). The error joins an
// *Error per fault.
func Parse(b []byte) (*Catalog, error) {
	if len(b) > MaxCatalogBytes {
		return nil, &Error{Reason: fmt.Sprintf("%d bytes exceeds the cap of %d", len(b), MaxCatalogBytes)}
	}
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil {
		return nil, &Error{Reason: "not YAML: " + err.Error()}
	}
	// Aliases are refused: expanded, a few of them make an exponentially
	// large document (the "billion laughs"), and a catalog has no need of
	// them.
	if line := aliasLine(&node); line > 0 {
		return nil, &Error{Reason: fmt.Sprintf("line %d: YAML aliases are not allowed in a domain catalog", line)}
	}
	var doc any
	if err := node.Decode(&doc); err != nil {
		return nil, &Error{Reason: "not YAML: " + err.Error()}
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return nil, &Error{Reason: "not representable as JSON (keys must be strings): " + err.Error()}
	}
	var f file
	if err := strict(js, &f); err != nil {
		return nil, &Error{Reason: err.Error()}
	}
	v := &validator{c: &Catalog{
		Name: f.Domain, Description: f.Description, LocalTimeOffset: f.LocalTimeOffset,
		views: map[string]*datasource.View{}, capViews: map[string]*datasource.View{}, caps: map[string]*abi.DomainCapability{}, tools: map[string]string{},
	}}
	v.file(&f)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return v.c, nil
}

func strict(b []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]*$`)

type validator struct {
	c    *Catalog
	errs []error
}

func (v *validator) add(e *Error) {
	e.Domain = v.c.Name
	v.errs = append(v.errs, e)
}

func (v *validator) file(f *file) {
	if !nameRE.MatchString(f.Domain) {
		v.add(&Error{Field: "domain", Reason: fmt.Sprintf("%q is not a name", f.Domain)})
	}
	if f.Version != Version {
		v.add(&Error{Field: "version", Reason: fmt.Sprintf("%d is not a supported version (want %d)", f.Version, Version)})
	}
	if f.LocalTimeOffset != "" {
		if _, err := time.Parse("-07:00", f.LocalTimeOffset); err != nil {
			v.add(&Error{Field: "local_time_offset", Reason: fmt.Sprintf("%q is not an offset such as -05:00", f.LocalTimeOffset)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Views)) {
		v.view(name, f.Views[name])
	}
	if len(f.Capabilities) == 0 {
		v.add(&Error{Field: "capabilities", Reason: "a domain needs at least one capability"})
	}
	names := slices.Sorted(maps.Keys(f.Capabilities))
	parsed := map[string]*capFile{}
	for _, name := range names { // first pass: kinds and views, for references
		var cf capFile
		if err := strict(f.Capabilities[name], &cf); err != nil {
			v.add(&Error{Capability: name, Reason: err.Error()})
			continue
		}
		parsed[name] = &cf
		if !nameRE.MatchString(name) {
			v.add(&Error{Capability: name, Reason: "name must match " + nameRE.String()})
		}
		dc := &abi.DomainCapability{Domain: f.Domain, Name: name, Kind: cf.Kind, Tools: []string{name}, LocalTimeOffset: f.LocalTimeOffset}
		switch cf.Kind {
		case abi.KindQuery, abi.KindGet, abi.KindAction, abi.KindCreate, abi.KindUpdate, abi.KindDelete:
		default:
			v.add(&Error{Capability: name, Field: "kind", Reason: fmt.Sprintf("%q is not one of query, get, action, create, update, delete", cf.Kind)})
		}
		for i, raw := range cf.Parameters {
			var p paramFile
			if err := json.Unmarshal(raw, &p.Name); err != nil {
				if err := strict(raw, &p); err != nil {
					v.add(&Error{Capability: name, Field: fmt.Sprintf("parameters[%d]", i), Reason: "want a name or {name, type?, required?, description?}: " + err.Error()})
					continue
				}
			}
			if p.Name == "" || slices.Contains(dc.Parameters, p.Name) {
				v.add(&Error{Capability: name, Field: fmt.Sprintf("parameters[%d]", i), Reason: fmt.Sprintf("empty or duplicate name %q", p.Name)})
				continue
			}
			dc.Parameters = append(dc.Parameters, p.Name)
		}
		if cf.View != "" {
			view, ok := v.c.views[cf.View]
			switch {
			case !ok:
				v.add(&Error{Capability: name, Field: "view", Reason: fmt.Sprintf("no view named %q", cf.View)})
			case cf.Kind != abi.KindQuery && cf.Kind != abi.KindGet:
				v.add(&Error{Capability: name, Field: "view", Reason: "only query and get capabilities are backed by a view"})
			case dc.Parameters != nil && !sameSet(view.Params, dc.Parameters):
				v.add(&Error{Capability: name, Field: "view", Reason: fmt.Sprintf("view %s takes %v, the capability %v", cf.View, view.Params, dc.Parameters)})
			default:
				v.c.capViews[name] = view
			}
		}
		dc.Tools = append(dc.Tools, cf.Tools...)
		for _, t := range dc.Tools {
			if other, dup := v.c.tools[t]; dup {
				v.add(&Error{Capability: name, Field: "tools", Reason: fmt.Sprintf("tool name %q also names capability %s", t, other)})
				continue
			}
			v.c.tools[t] = name
		}
		v.c.caps[name] = dc
	}
	for _, name := range names {
		cf, dc := parsed[name], v.c.caps[name]
		if cf == nil {
			continue
		}
		if len(cf.Preconditions) > 0 && !abi.IsWriteKind(cf.Kind) {
			v.add(&Error{Capability: name, Field: "preconditions", Reason: fmt.Sprintf("only write kinds (action, create, update, delete) declare preconditions, not %q", cf.Kind)})
			continue
		}
		seen := map[string]bool{}
		for i, raw := range cf.Preconditions {
			p := v.precondition(name, dc, i, raw)
			if p == nil {
				continue
			}
			if seen[p.ID] {
				v.add(&Error{Capability: name, Precondition: p.ID, Field: "id", Reason: "duplicate id"})
			}
			seen[p.ID] = true
			dc.Preconditions = append(dc.Preconditions, *p)
		}
		v.effects(name, dc, cf)
	}
}

var placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)

func (v *validator) view(name string, raw json.RawMessage) {
	var vw datasource.View
	if err := strict(raw, &vw); err != nil {
		v.add(&Error{View: name, Reason: err.Error()})
		return
	}
	vw.Name = name
	if !nameRE.MatchString(name) {
		v.add(&Error{View: name, Reason: "name must match " + nameRE.String()})
	}
	for i, p := range vw.Params {
		if !nameRE.MatchString(p) || slices.Index(vw.Params, p) != i {
			v.add(&Error{View: name, Field: fmt.Sprintf("params[%d]", i), Reason: fmt.Sprintf("empty, invalid or duplicate name %q", p)})
		}
	}
	if vw.Document == nil && vw.SQL == "" {
		v.add(&Error{View: name, Reason: "a view needs a document or an sql definition"})
	}
	if d := vw.Document; d != nil {
		if d.Collection == "" {
			v.add(&Error{View: name, Field: "document.collection", Reason: "required"})
		}
		check := func(field, s string, item bool) {
			for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
				ph := m[1]
				switch {
				case strings.HasPrefix(ph, "doc.") && len(ph) > 4:
				case strings.HasPrefix(ph, "item.") && len(ph) > 5:
					if !item {
						v.add(&Error{View: name, Field: field, Reason: fmt.Sprintf("{%s}: item. placeholders need for_each", ph)})
					}
				case !slices.Contains(vw.Params, ph):
					v.add(&Error{View: name, Field: field, Reason: fmt.Sprintf("{%s} is not a parameter (params: %v)", ph, vw.Params)})
				}
			}
		}
		check("document.id", d.ID, false)
		for k, w := range d.Where {
			if s, ok := w.(string); ok {
				check("document.where."+k, s, false)
			}
		}
		for k, p := range d.Fields {
			check("document.fields."+k, p, false)
		}
		for k, l := range d.Lookups {
			f := "document.lookups." + k
			if l.Collection == "" || l.ID == "" {
				v.add(&Error{View: name, Field: f, Reason: "collection and id are required"})
			}
			check(f+".id", l.ID, l.ForEach != "")
			check(f+".path", l.Path, l.ForEach != "")
			if _, dup := d.Fields[k]; dup {
				v.add(&Error{View: name, Field: f, Reason: "also a field"})
			}
		}
	}
	v.c.views[name] = &vw
}

func (v *validator) precondition(capName string, dc *abi.DomainCapability, i int, raw json.RawMessage) *abi.DomainPrecondition {
	var p abi.DomainPrecondition
	if err := strict(raw, &p); err != nil {
		var probe struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &probe)
		v.add(&Error{Capability: capName, Precondition: cmpOr(probe.ID, fmt.Sprintf("#%d", i)), Reason: err.Error()})
		return nil
	}
	bad := func(field, format string, args ...any) {
		v.add(&Error{Capability: capName, Precondition: cmpOr(p.ID, fmt.Sprintf("#%d", i)), Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if !nameRE.MatchString(p.ID) {
		bad("id", "required, a name matching %s", nameRE)
	}
	p.Message = strings.Join(strings.Fields(p.Message), " ")
	if p.Message == "" {
		bad("message", "required")
	}
	var params []string
	switch {
	case p.View != "" && p.Capability != "":
		bad("view", "give view or capability, not both")
	case p.View != "":
		vw, ok := v.c.views[p.View]
		if !ok {
			bad("view", "no view named %q", p.View)
		} else {
			params = vw.Params
		}
	case p.Capability != "":
		qc, ok := v.c.caps[p.Capability]
		switch {
		case !ok:
			bad("capability", "no capability named %q", p.Capability)
		case qc.Kind != abi.KindQuery && qc.Kind != abi.KindGet:
			bad("capability", "%s is a %s capability; rows come from query or get capabilities", p.Capability, qc.Kind)
		default:
			if vw, ok := v.c.capViews[p.Capability]; ok {
				params = vw.Params
			} else {
				bad("capability", "%s has no view to answer it", p.Capability)
			}
		}
	default:
		if len(p.Bind) > 0 {
			bad("bind", "a precondition over the call's own parameters (no view or capability) binds nothing")
		}
	}
	if p.View != "" || p.Capability != "" {
		for _, name := range params {
			if _, ok := p.Bind[name]; !ok {
				bad("bind."+name, "the view's parameter %s is not bound", name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(p.Bind)) {
			if !slices.Contains(params, name) && params != nil {
				bad("bind."+name, "not a parameter of the view (parameters: %v)", params)
			}
			o := p.Bind[name]
			v.operand(dc, "bind."+name, &o, bad, false)
		}
	}
	switch {
	case (p.DenyWhen == nil) == (p.Require == nil):
		bad("deny_when", "give exactly one of deny_when and require")
	case p.DenyWhen != nil:
		v.condition(dc, "deny_when", p.DenyWhen, bad)
	case p.Require.Match == nil:
		bad("require.match", "required")
	default:
		v.condition(dc, "require.match", p.Require.Match, bad)
	}
	return &p
}

func (v *validator) operand(dc *abi.DomainCapability, field string, o *abi.Operand, bad func(string, string, ...any), allowNow bool) {
	switch o.Kind {
	case abi.OperandLiteral:
		if o.Name != "" || o.Offset != "" {
			bad(field, "a literal has only value")
		}
	case abi.OperandParam:
		first, _, _ := strings.Cut(o.Name, ".")
		switch {
		case first == "":
			bad(field, "a param operand needs name")
		case dc.Parameters != nil && !slices.Contains(dc.Parameters, first):
			bad(field, "%q is not a parameter of %s (parameters: %v)", first, dc.Name, dc.Parameters)
		}
		if o.Value != nil || o.Offset != "" {
			bad(field, "a param operand has only name")
		}
	case abi.OperandNow:
		if !allowNow {
			bad(field, "now is not allowed here")
		}
		if o.Offset != "" {
			if _, err := time.ParseDuration(o.Offset); err != nil {
				bad(field+".offset", "%q is not a duration such as -24h", o.Offset)
			}
		}
	default:
		bad(field, "unknown operand kind %q (want literal, param or now)", o.Kind)
	}
}

func (v *validator) condition(dc *abi.DomainCapability, field string, c *abi.Condition, bad func(string, string, ...any)) {
	type op struct {
		name string
		o    *abi.Operand
	}
	ops := []op{{"equals", c.Equals}, {"not_equals", c.NotEquals}, {"in", c.In}, {"not_in", c.NotIn},
		{"gt", c.Gt}, {"gte", c.Gte}, {"lt", c.Lt}, {"lte", c.Lte}, {"contains", c.Contains}}
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
	if c.AllOf != nil {
		composites++
	}
	if c.AnyOf != nil {
		composites++
	}
	if c.Not != nil {
		composites++
	}
	switch {
	case composites > 1 || (composites == 1 && (c.Field != "" || len(set) > 0)):
		bad(field, "a condition is a leaf {field, operator} or exactly one of all_of, any_of, not")
		return
	case composites == 1:
		for i := range c.AllOf {
			v.condition(dc, fmt.Sprintf("%s.all_of[%d]", field, i), &c.AllOf[i], bad)
		}
		for i := range c.AnyOf {
			v.condition(dc, fmt.Sprintf("%s.any_of[%d]", field, i), &c.AnyOf[i], bad)
		}
		if (c.AllOf != nil && len(c.AllOf) == 0) || (c.AnyOf != nil && len(c.AnyOf) == 0) {
			bad(field, "all_of and any_of need at least one condition")
		}
		if c.Not != nil {
			v.condition(dc, field+".not", c.Not, bad)
		}
		return
	}
	if c.Field == "" {
		bad(field+".field", "required")
	}
	if len(set) != 1 {
		bad(field, "want exactly one operator of equals, not_equals, in, not_in, exists, gt, gte, lt, lte, contains; have %v", set)
		return
	}
	for _, o := range ops {
		if o.o == nil {
			continue
		}
		f := field + "." + o.name
		v.operand(dc, f, o.o, bad, true)
		if o.o.Kind == abi.OperandLiteral {
			switch o.name {
			case "in", "not_in":
				if _, ok := o.o.Value.([]any); !ok {
					bad(f, "a literal for %s must be an array", o.name)
				}
			case "gt", "gte", "lt", "lte":
				switch x := o.o.Value.(type) {
				case float64:
				case string:
					if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
						bad(f, "%q is neither a number nor an RFC 3339 time", x)
					}
				default:
					bad(f, "ordering compares numbers or RFC 3339 times, not %T", o.o.Value)
				}
			}
		}
	}
}

// Prepare checks that src can evaluate every view of c (at load time).
func (c *Catalog) Prepare(ctx context.Context, src datasource.DataSource) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.views)) {
		if err := src.Prepare(ctx, c.views[name]); err != nil {
			errs = append(errs, &Error{Domain: c.Name, View: name, Reason: err.Error()})
		}
	}
	return errors.Join(errs...)
}

// Capability returns the capability called name, or whose tools include
// name.
func (c *Catalog) Capability(name string) (*abi.DomainCapability, bool) {
	n, ok := c.tools[name]
	if !ok {
		return nil, false
	}
	return c.caps[n], true
}

// View returns the named view.
func (c *Catalog) View(name string) (*datasource.View, bool) {
	v, ok := c.views[name]
	return v, ok
}

// CapabilityView returns the view backing a query or get capability.
func (c *Catalog) CapabilityView(name string) (*datasource.View, bool) {
	if _, ok := c.caps[name]; !ok {
		return nil, false
	}
	v, ok := c.capViews[name]
	return v, ok
}

// Capabilities lists the capability names, sorted.
func (c *Catalog) Capabilities() []string { return slices.Sorted(maps.Keys(c.caps)) }

// Views lists the view names, sorted.
func (c *Catalog) Views() []string { return slices.Sorted(maps.Keys(c.views)) }

// Preconditions counts the preconditions of all capabilities.
func (c *Catalog) Preconditions() int {
	n := 0
	for _, dc := range c.caps {
		n += len(dc.Preconditions)
	}
	return n
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// aliasLine returns the line of the first alias node under n, or 0.
func aliasLine(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode {
		return max(n.Line, 1)
	}
	for _, c := range n.Content {
		if l := aliasLine(c); l > 0 {
			return l
		}
	}
	return 0
}
