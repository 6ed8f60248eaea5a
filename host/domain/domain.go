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
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/internal/editdist"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Version is the newest catalog format version this package reads. A
// catalog without `version` is version 1; versions 1 to 4 are read, and
// the v2, v3 and v4 forms (DOMAIN.md) are accepted in any of them.
const Version = 4

// MaxCatalogBytes caps a catalog file.
const MaxCatalogBytes = 4 << 20

// Catalog is a validated domain catalog. It is immutable.
type Catalog struct {
	// Name is the domain's name, such as "retail".
	Name        string
	Description string
	// Version is the catalog's format version, 1 to 4.
	Version int
	// LocalTimeOffset is the zone ("-05:00") of zone-less timestamps in
	// the domain's data.
	LocalTimeOffset string

	views map[string]*datasource.View
	caps  map[string]*abi.DomainCapability
	tools map[string]string // tool name → capability name
	// synth are the view-less query/get capabilities that a precondition
	// or effect reads: their views are made by Prepare (synth.go).
	synth map[string]*synthView

	mu       sync.RWMutex                // guards capViews, which Prepare completes
	capViews map[string]*datasource.View // query/get capability → its view

	// vars are the declared variables (v4), their uses and the values
	// bound so far (vars.go).
	vars *catVars
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
	// Path is set for an unknown key: the path, in the file's own terms,
	// of the mapping that holds it ("capabilities.write_file.preconditions[0]";
	// "" at the top level). The message is then Path and Reason alone:
	// `capabilities.write_file: unknown key "paramters"; did you mean
	// "parameters"?`.
	Path   string
	keyErr bool
}

func (e *Error) Error() string {
	if e.keyErr {
		if e.Path == "" {
			return e.Reason
		}
		return e.Path + ": " + e.Reason
	}
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
	Domain          string                     `json:"domain,omitempty"`
	Version         *int                       `json:"version,omitempty"`
	Description     string                     `json:"description,omitempty"`
	LocalTimeOffset string                     `json:"local_time_offset,omitempty"`
	Vars            map[string]varFile         `json:"vars,omitempty"`
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
// most MaxCatalogBytes. A catalog without `domain` is named after the file:
// its base name without extension, or the directory's name when that is
// "domain" (retail/domain.yaml is "retail"). A path that is not a regular
// file (a named pipe, a device) is refused without being read:
// errors.Is(err, host.ErrNotRegular), or host.ErrFileTooLarge past the cap.
func Load(path string) (*Catalog, error) {
	b, err := safefile.ReadFile(path, MaxCatalogBytes)
	if err != nil {
		return nil, fmt.Errorf("domain: %w", err)
	}
	c, err := ParseNamed(b, NameFromPath(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// NameFromPath is the domain name Load gives a catalog file without
// `domain`: "retail" for retail/domain.yaml, "banking" for banking.yaml.
func NameFromPath(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name != "domain" {
		return name
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Base(dir)
}

// Parse validates a catalog given as YAML (JSON is YAML), which must name
// its domain (`domain`). The error joins an *Error per fault.
func Parse(b []byte) (*Catalog, error) { return ParseNamed(b, "") }

// ParseNamed is Parse for a catalog whose name, when it has no `domain`, is
// name (Load passes NameFromPath). An empty name makes `domain` required.
func ParseNamed(b []byte, name string) (*Catalog, error) {
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
		if e := keyError(err, ""); e != nil {
			return nil, e
		}
		return nil, &Error{Reason: err.Error()}
	}
	v := &validator{c: &Catalog{
		Name: f.Domain, Description: f.Description, LocalTimeOffset: f.LocalTimeOffset,
		views: map[string]*datasource.View{}, capViews: map[string]*datasource.View{}, caps: map[string]*abi.DomainCapability{},
		tools: map[string]string{}, synth: map[string]*synthView{}, vars: newCatVars(),
	}}
	v.vars = v.c.vars
	v.file(&f, name)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return v.c, nil
}

// strict decodes b into into, refusing unknown keys: such a refusal is an
// *unknownKey naming where the key is and the accepted key closest to it.
func strict(b []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		if q, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if key, uerr := strconv.Unquote(q); uerr == nil {
				return findUnknownKey(b, reflect.TypeOf(into), key, err)
			}
		}
		return err
	}
	return nil
}

// unknownKey is a key strict refused: Path is the mapping holding it,
// relative to the decoded value ("" for the value itself, "preconditions[0]"),
// Closest the accepted key nearest to it, if any is near.
type unknownKey struct {
	Path, Key, Closest string
	err                error // the decoder's
}

func (u *unknownKey) Error() string {
	s := fmt.Sprintf("unknown key %q", u.Key)
	if u.Closest != "" {
		s += fmt.Sprintf("; did you mean %q?", u.Closest)
	}
	return s
}

func (u *unknownKey) Unwrap() error { return u.err }

// keyError is the *Error of an unknown key that strict refused in the
// value at base (a path in the file's terms, such as
// "capabilities.write_file"), or nil when err is no such refusal.
func keyError(err error, base string) *Error {
	var u *unknownKey
	if !errors.As(err, &u) {
		return nil
	}
	path := base
	switch {
	case u.Path == "":
	case path == "" || strings.HasPrefix(u.Path, "["):
		path += u.Path
	default:
		path += "." + u.Path
	}
	return &Error{Path: path, Reason: u.Error(), keyErr: true}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// findUnknownKey finds where in b, decoded into a value of type t, the key
// the decoder refused is, and the accepted keys there. A type that decodes
// itself (json.Unmarshaler) is not looked into: the key is then placed by
// its first occurrence in b, with no suggestion.
func findUnknownKey(b []byte, t reflect.Type, key string, err error) error {
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return err
	}
	var found *unknownKey
	var walk func(v any, t reflect.Type, path string)
	walk = func(v any, t reflect.Type, path string) {
		for found == nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if found != nil || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		join := func(k string) string {
			if path == "" {
				return k
			}
			return path + "." + k
		}
		switch t.Kind() {
		case reflect.Struct:
			obj, ok := v.(map[string]any)
			if !ok {
				return
			}
			fields := map[string]reflect.Type{}
			for f := range t.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" || !f.IsExported() {
					continue
				}
				fields[cmpOr(name, f.Name)] = f.Type
			}
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				ft, ok := fields[k]
				if !ok && k == key {
					c, _ := editdist.Closest(k, slices.Sorted(maps.Keys(fields)))
					found = &unknownKey{Path: path, Key: k, Closest: c, err: err}
					return
				}
				if ok {
					walk(obj[k], ft, join(k))
				}
			}
		case reflect.Map:
			if obj, ok := v.(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(obj)) {
					walk(obj[k], t.Elem(), join(k))
				}
			}
		case reflect.Slice, reflect.Array:
			if arr, ok := v.([]any); ok {
				for i, e := range arr {
					walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
	}
	walk(doc, t, "")
	if found == nil {
		// In a type that decodes itself: the first mapping holding key.
		if p, ok := pathOfKey(doc, key, ""); ok {
			found = &unknownKey{Path: p, Key: key, err: err}
		} else {
			return err
		}
	}
	return found
}

// pathOfKey is the path of the first mapping in v, keys sorted, that holds
// key.
func pathOfKey(v any, key, path string) (string, bool) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v[key]; ok {
			return path, true
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			if p, ok := pathOfKey(v[k], key, sub); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := pathOfKey(e, key, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]*$`)

type validator struct {
	c     *Catalog
	vars  *catVars
	files map[string]*capFile // capability → its decoded declaration
	errs  []error
}

func (v *validator) add(e *Error) {
	e.Domain = v.c.Name
	v.errs = append(v.errs, e)
}

func (v *validator) file(f *file, fileName string) {
	switch {
	case f.Domain != "":
		if !nameRE.MatchString(f.Domain) {
			v.add(&Error{Field: "domain", Reason: fmt.Sprintf("%q is not a name", f.Domain)})
		}
	case fileName == "":
		v.add(&Error{Field: "domain", Reason: "required when the catalog is not read from a file"})
	case !nameRE.MatchString(fileName):
		v.add(&Error{Field: "domain", Reason: fmt.Sprintf("absent, and the file's name %q is not a name: give the catalog `domain: NAME`", fileName)})
	default:
		f.Domain = fileName
		v.c.Name = fileName
	}
	v.c.Version = 1
	if f.Version != nil {
		v.c.Version = *f.Version
		if *f.Version < 1 || *f.Version > Version {
			v.add(&Error{Field: "version", Reason: fmt.Sprintf("%d is not a supported version (want 1 to %d)", *f.Version, Version)})
		}
	}
	v.declareVars(f.Vars)
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
	v.files = parsed
	for _, name := range names { // first pass: kinds and views, for references
		var cf capFile
		if err := strict(f.Capabilities[name], &cf); err != nil {
			if e := keyError(err, "capabilities."+name); e != nil {
				e.Capability = name
				v.add(e)
				continue
			}
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
					if e := keyError(err, fmt.Sprintf("capabilities.%s.parameters[%d]", name, i)); e != nil {
						e.Capability = name
						v.add(e)
						continue
					}
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
	v.checkVarsUsed()
}

var placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)

func (v *validator) view(name string, raw json.RawMessage) {
	var vw datasource.View
	if err := strict(raw, &vw); err != nil {
		if e := keyError(err, "views."+name); e != nil {
			e.View = name
			v.add(e)
			return
		}
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
				case ph == "item" || strings.HasPrefix(ph, "item.") && len(ph) > 5:
					if !item {
						v.add(&Error{View: name, Field: field, Reason: fmt.Sprintf("{%s}: item placeholders need for_each", ph)})
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
		if e := keyError(err, fmt.Sprintf("capabilities.%s.preconditions[%d]", capName, i)); e != nil {
			e.Capability, e.Precondition = capName, cmpOr(probe.ID, fmt.Sprintf("#%d", i))
			v.add(e)
			return nil
		}
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
	s := &scope{dc: dc, vars: v.vars, bad: bad}
	if p.ForEach != nil {
		s.names = s.forEach("for_each", p.ForEach)
	}
	s.names = append(s.names, v.lets(s, p.Let)...)
	if !v.rowSource(s, p.View, p.Capability, p.Bind) && len(p.Bind) > 0 {
		bad("bind", "a precondition over the call's own parameters (no view or capability) binds nothing")
	}
	switch {
	case (p.DenyWhen == nil) == (p.Require == nil):
		bad("deny_when", "give exactly one of deny_when and require")
	case p.DenyWhen != nil:
		s.condition("deny_when", p.DenyWhen, inCondition, 1)
	case p.Require.Match == nil:
		bad("require.match", "required")
	default:
		s.condition("require.match", p.Require.Match, inCondition, 1)
	}
	return &p
}

// rowSource validates the view or capability (at most one) that gives a
// precondition or an effect its rows, and bind, which must bind exactly
// the view's parameters. It reports whether a view or capability is given.
func (v *validator) rowSource(s *scope, view, capability string, bind map[string]abi.Operand) bool {
	var params []string
	known := false // params are known: bind is checked against them
	switch {
	case view != "" && capability != "":
		s.bad("view", "give view or capability, not both")
	case view != "":
		if vw, ok := v.c.views[view]; ok {
			params, known = vw.Params, true
		} else {
			s.bad("view", "no view named %q", view)
		}
	case capability != "":
		params, known = v.capabilityParams(s, capability)
	default:
		return false
	}
	if known {
		for _, name := range params {
			if _, ok := bind[name]; !ok {
				s.bad("bind."+name, "the view's parameter %s is not bound", name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(bind)) {
		if known && !slices.Contains(params, name) {
			s.bad("bind."+name, "not a parameter of the view (parameters: %v)", params)
		}
		o := bind[name]
		s.operand("bind."+name, &o, inBind, 1)
	}
	return true
}

// capabilityParams resolves a query/get capability read by a precondition
// or an effect: its view's parameters, or, for a view-less capability with
// an entity, its own (the view is made at Prepare). ok is false when the
// parameters are unknown (an error has been reported).
func (v *validator) capabilityParams(s *scope, name string) (params []string, ok bool) {
	qc, found := v.c.caps[name]
	switch {
	case !found:
		s.bad("capability", "no capability named %q", name)
	case qc.Kind != abi.KindQuery && qc.Kind != abi.KindGet:
		s.bad("capability", "%s is a %s capability; rows come from query or get capabilities", name, qc.Kind)
	default:
		if vw, ok := v.c.capViews[name]; ok {
			return vw.Params, true
		}
		cf := v.files[name]
		switch {
		case cf == nil || cf.View != "":
			// Its view is faulty, and reported as such.
		case cf.Entity == "":
			s.bad("capability", "%s has no view to answer it: give %s `view: NAME` (a view whose params are %s's parameters), or an `entity` naming a collection of the data source", name, name, name)
		default:
			v.c.synth[name] = &synthView{capability: name, entity: cf.Entity, params: qc.Parameters}
			return qc.Parameters, true
		}
	}
	return nil, false
}

// Prepare checks, at load time, that src can evaluate every view of c,
// and makes the views of the view-less query/get capabilities that
// preconditions and effects read (DOMAIN.md, "View-less capabilities"):
// each over the first collection of [entity, snake_case(entity),
// snake_case(entity)+"s"] that src has, found through src's Collections
// method when it has one (Collectioner), else by preparing each candidate
// in turn. A catalog prepared against several sources must resolve each
// such view to the same collection in all of them. Every fault is an
// *Error; the error joins them.
func (c *Catalog) Prepare(ctx context.Context, src datasource.DataSource) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.views)) {
		if err := src.Prepare(ctx, c.views[name]); err != nil {
			errs = append(errs, &Error{Domain: c.Name, View: name, Reason: err.Error()})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.synth)) {
		vw, err := c.synth[name].resolve(ctx, src)
		if err != nil {
			errs = append(errs, &Error{Domain: c.Name, Capability: name, Field: "entity", Reason: err.Error()})
			continue
		}
		c.mu.Lock()
		if prev, ok := c.capViews[name]; ok && prev.Document.Collection != vw.Document.Collection {
			errs = append(errs, &Error{Domain: c.Name, Capability: name, Field: "entity", Reason: fmt.Sprintf(
				"resolved to %q for another data source and to %q for this one: give the capability a view: NAME", prev.Document.Collection, vw.Document.Collection)})
		} else if !ok {
			c.capViews[name] = vw
		}
		c.mu.Unlock()
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

// CapabilityView returns the view backing a query or get capability: its
// `view`, or, after Prepare, the view made for a view-less capability with
// an entity that a precondition or effect reads.
func (c *Catalog) CapabilityView(name string) (*datasource.View, bool) {
	if _, ok := c.caps[name]; !ok {
		return nil, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
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
