package host

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// Tool references: config values that name tools (abi/SPEC.md §6.1,
// "Tool references"). A gate marks them in its config_schema with the
// annotation keyword RefKeyword on a string schema; the host collects every
// such value of every stage config at load (Host.ToolReferences), and
// CheckToolReferences resolves them against a catalog snapshot, so that a
// name that matches no tool refuses to start instead of silently switching
// a protection off.

// RefKeyword is the config-schema annotation that marks a string value as
// a reference; its value is a RefKind. JSON Schema ignores unknown
// keywords, so the validator accepts it as an annotation.
const RefKeyword = "x-gatehost-ref"

// WildcardKeyword, beside RefKeyword, names the one value that stands for
// every tool (such as "*"). Without it no value is a wildcard: a "*" in
// such a field is a name like any other, and matches no tool.
const WildcardKeyword = "x-gatehost-wildcard"

// RefKind says how the consumer of a reference resolves it.
type RefKind string

const (
	// RefToolID is a canonical tool id ("namespace:name"), matched
	// exactly against the catalog's ids only (not wire names).
	RefToolID RefKind = "tool-id"
	// RefTool is a canonical id, wire name or alias, matched exactly as
	// the catalog resolves a call's tool name (catalog.Snapshot.Get).
	RefTool RefKind = "tool"
	// RefDomain is the name of a configured domain (Config.Domains): the
	// host adds every capability of that domain as a RefTool reference,
	// since a call is matched to a capability by its tool name.
	RefDomain RefKind = "domain"
)

var refKinds = []RefKind{RefTool, RefToolID, RefDomain}

// ToolReference is one config value that names a tool.
type ToolReference struct {
	// Field is where the operator wrote the name, as a key path:
	// pipelines.P.stages[i].config.confirm_tools[1], or, for a domain
	// capability, domains.D.capabilities.C.
	Field string
	// Name is the name as written.
	Name string
	// Kind is RefToolID or RefTool.
	Kind RefKind
	// Wildcard is true when Name is the value the gate's schema declares
	// as standing for every tool: it matches whatever the catalog holds.
	Wildcard bool
	// Alternatives are further names under which the same reference
	// counts as matched: a domain capability's tools.
	Alternatives []string
	// Via is, for a domain capability, the stage config key that names
	// the domain; File is the domain's catalog file, when known.
	Via, File string
}

// ToolReferences returns the tool references of a loaded pipeline's stage
// configs, in stage order, then those of the domains its stages name,
// sorted by field. It returns nil for a pipeline that is not loaded (with
// Config.OnlyPipeline, only that one is).
//
// Only what a gate's config_schema annotates is collected, following
// properties, additionalProperties, items, prefixItems, allOf and local
// $ref ("#/..."); patternProperties, anyOf, oneOf, if/then/else and
// references to other documents are not followed (and a descriptor that
// annotates below one of them is refused at load).
func (h *Host) ToolReferences(pipeline string) []ToolReference {
	p, ok := h.pipelines[pipeline]
	if !ok {
		return nil
	}
	var out []ToolReference
	domains := map[string]ToolReference{}
	for _, s := range p.stages {
		for _, r := range s.refs {
			if r.Kind != RefDomain {
				out = append(out, r)
				continue
			}
			d, ok := h.cfg.Domains[r.Name]
			if !ok || d.Catalog == nil {
				continue
			}
			for _, c := range d.Catalog.Capabilities() {
				field := "domains." + r.Name + ".capabilities." + c
				if _, dup := domains[field]; dup {
					continue
				}
				ref := ToolReference{Field: field, Name: c, Kind: RefTool, Via: r.Field, File: d.File}
				if dc, ok := d.Catalog.Capability(c); ok {
					for _, t := range dc.Tools {
						if t != c {
							ref.Alternatives = append(ref.Alternatives, t)
						}
					}
				}
				domains[field] = ref
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(domains)) {
		out = append(out, domains[f])
	}
	return out
}

// ReadsCatalog reports whether a stage of the loaded pipeline is granted
// the catalog or schema capability: whether its decisions depend on the
// host's catalog, so that its tool references are meant to resolve in it.
// A pipeline whose gates never read the catalog (a preconditions stage
// alone) matches calls by the tool name the agent sends, whatever the
// catalog holds.
func (h *Host) ReadsCatalog(pipeline string) bool {
	p, ok := h.pipelines[pipeline]
	if !ok {
		return false
	}
	for _, s := range p.stages {
		for _, c := range impliedGrants(s.cfg.Capabilities, s.plugin.descriptor.Capabilities) {
			if c == abi.CapabilityCatalog || c == abi.CapabilitySchema {
				return true
			}
		}
	}
	return false
}

// ListReferences makes the references of a list of names that a host
// embedder takes from its own config, such as the MCP gateway's
// mcp.sessions.core: field[i] for each name. wildcard, when not "", is
// the value that stands for every tool.
func ListReferences(field string, names []string, kind RefKind, wildcard string) []ToolReference {
	out := make([]ToolReference, 0, len(names))
	for i, n := range names {
		out = append(out, ToolReference{Field: fmt.Sprintf("%s[%d]", field, i), Name: n, Kind: kind,
			Wildcard: wildcard != "" && n == wildcard})
	}
	return out
}

// ConfigToolReferences returns the references a stage config holds under
// a gate's config schema, as the host collects them at load (without
// expanding domain references): for gate authors' tests. field prefixes
// every Field. The schema's annotations are checked as at load; the config
// is not validated against the schema.
func ConfigToolReferences(field string, schema, config json.RawMessage) ([]ToolReference, error) {
	var s any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	if err := checkRefAnnotations(s); err != nil {
		return nil, err
	}
	doc, err := abischema.Decode(config)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return collectRefs(field, s, doc), nil
}

// collectRefs walks a stage config doc (decoded by abischema.Decode)
// alongside its gate's decoded config schema and returns every string the
// schema annotates with RefKeyword; field is the config's key path. The
// config has been validated against the schema.
func collectRefs(field string, schema, doc any) []ToolReference {
	w := refWalker{root: schema, seen: map[string]bool{}}
	w.walk(field, schema, doc, 0)
	return w.out
}

// maxRefDepth bounds the walk through $ref chains and nesting.
const maxRefDepth = 64

type refWalker struct {
	root any
	out  []ToolReference
	seen map[string]bool // fields already collected (allOf may reach one twice)
}

func (w *refWalker) walk(field string, schema, doc any, depth int) {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxRefDepth {
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		if ptr, local := strings.CutPrefix(ref, "#"); local {
			w.walk(field, schemaAt(w.root, ptr), doc, depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			w.walk(field, sub, doc, depth+1)
		}
	}
	if kind, ok := s[RefKeyword].(string); ok {
		if name, isStr := doc.(string); isStr && !w.seen[field] {
			w.seen[field] = true
			wc, _ := s[WildcardKeyword].(string)
			w.out = append(w.out, ToolReference{Field: field, Name: name, Kind: RefKind(kind), Wildcard: wc != "" && name == wc})
		}
	}
	switch d := doc.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if sub, ok := props[k]; ok {
				w.walk(field+"."+k, sub, d[k], depth+1)
			} else if sub, ok := s["additionalProperties"].(map[string]any); ok {
				w.walk(field+"."+k, sub, d[k], depth+1)
			}
		}
	case []any:
		prefix, _ := s["prefixItems"].([]any)
		for i, v := range d {
			f := field + "[" + strconv.Itoa(i) + "]"
			if i < len(prefix) {
				w.walk(f, prefix[i], v, depth+1)
			} else if items, ok := s["items"].(map[string]any); ok {
				w.walk(f, items, v, depth+1)
			}
		}
	}
}

// checkRefAnnotations refuses a config schema whose RefKeyword or
// WildcardKeyword is malformed, or sits where collectRefs does not look
// (so that it would never apply). The schema is the module's: its walks
// build no JSON Pointer but the one an error names, so a long member name
// over many nodes costs time linear in the document, not their product.
func checkRefAnnotations(schema any) error {
	reach := map[uintptr]bool{}
	markReachable(schema, schema, reach, 0)
	var err error
	findAnnotations(schema, nil, func(path []string, s map[string]any) {
		if err != nil {
			return
		}
		at := func() string {
			if len(path) == 0 {
				return "/"
			}
			return jsonptr.Join(path...)
		}
		kind, isStr := s[RefKeyword].(string)
		_, hasRef := s[RefKeyword]
		wc, hasWC := s[WildcardKeyword]
		switch {
		case hasRef && (!isStr || !slices.Contains(refKinds, RefKind(kind))):
			err = fmt.Errorf("config_schema %s: %s must be one of %q", at(), RefKeyword, refKinds)
		case hasWC && !hasRef:
			err = fmt.Errorf("config_schema %s: %s without %s", at(), WildcardKeyword, RefKeyword)
		case hasWC && (!isString(wc) || wc == ""):
			err = fmt.Errorf("config_schema %s: %s must be a non-empty string", at(), WildcardKeyword)
		case hasWC && RefKind(kind) == RefDomain:
			err = fmt.Errorf("config_schema %s: a domain reference takes no %s", at(), WildcardKeyword)
		case !reach[identity(s)]:
			err = fmt.Errorf("config_schema %s: %s is below a keyword the host does not follow (it follows properties, additionalProperties, items, prefixItems, allOf and local $ref)", at(), RefKeyword)
		}
	})
	return err
}

// identity names a decoded schema object: each object of a decoded
// document is a map of its own.
func identity(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

func isString(v any) bool { _, ok := v.(string); return ok }

// markReachable records the subschemas collectRefs can reach from s, by
// identity.
func markReachable(root, s any, reach map[uintptr]bool, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > maxRefDepth || reach[identity(m)] {
		return
	}
	reach[identity(m)] = true
	if ref, ok := m["$ref"].(string); ok {
		if p, local := strings.CutPrefix(ref, "#"); local {
			markReachable(root, schemaAt(root, p), reach, depth+1)
		}
	}
	for _, k := range []string{"allOf", "prefixItems"} {
		if list, ok := m[k].([]any); ok {
			for _, sub := range list {
				markReachable(root, sub, reach, depth+1)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, sub := range props {
			markReachable(root, sub, reach, depth+1)
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		markReachable(root, m[k], reach, depth+1)
	}
}

// findAnnotations calls fn for every object of the schema document that
// holds RefKeyword or WildcardKeyword, with the reference tokens of its
// JSON pointer (valid during the call only).
func findAnnotations(v any, path []string, fn func([]string, map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		_, a := t[RefKeyword]
		_, b := t[WildcardKeyword]
		if a || b {
			fn(path, t)
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			findAnnotations(t[k], append(path, k), fn)
		}
	case []any:
		for i, e := range t {
			findAnnotations(e, append(path, strconv.Itoa(i)), fn)
		}
	}
}

// StageInfo is one stage of a loaded pipeline: its name, its plugin's
// name in the config, its gate's name (the descriptor's) and its
// validated config (nil for none).
type StageInfo struct {
	Name   string
	Plugin string
	Gate   string
	Config json.RawMessage
}

// Stages describes the stages of a loaded pipeline, in order; nil for a
// pipeline the host does not have. A front end that learns the catalog at
// run time (the MCP gateway) checks the stages' configs against it.
func (h *Host) Stages(pipeline string) []StageInfo {
	p, ok := h.pipelines[pipeline]
	if !ok {
		return nil
	}
	out := make([]StageInfo, 0, len(p.stages))
	for _, s := range p.stages {
		out = append(out, StageInfo{Name: s.cfg.Name, Plugin: s.cfg.Plugin, Gate: s.plugin.descriptor.Name, Config: slices.Clone(s.config)})
	}
	return out
}
