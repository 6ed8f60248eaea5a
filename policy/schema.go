package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/resolved"

	"github.com/gatehost/gatehost/abi"
)

// Entity types and action groups of the generated schema (docs/POLICY.md).
const (
	// PrincipalType is the caller's entity type: Caller::"<subject>", or
	// Caller::"" for an anonymous caller.
	PrincipalType = "Caller"
	// ResourceType is the upstream's entity type: Server::"<namespace>",
	// the namespace of the tool's canonical id.
	ResourceType = "Server"
	// ActionType is Cedar's action entity type.
	ActionType = "Action"
	// GroupDestructive holds every tool that is not read-only and whose
	// annotations say destructive.
	GroupDestructive = "destructive"
	// NamespaceGroupSuffix makes the action group of a namespace:
	// Action::"github:*" holds every tool of github.
	NamespaceGroupSuffix = ":*"
)

// EffectGroups are the action groups of the effect classes: each tool is in
// the group of its effect.
var EffectGroups = []string{abi.EffectReadOnly, abi.EffectIdempotentWrite, abi.EffectNonIdempotent}

// ClaimType is the declared Cedar type of a principal claim.
type ClaimType string

// The claim types a schema may declare.
const (
	ClaimString    ClaimType = "String"
	ClaimLong      ClaimType = "Long"
	ClaimBool      ClaimType = "Bool"
	ClaimStringSet ClaimType = "Set<String>"
	ClaimLongSet   ClaimType = "Set<Long>"
)

// ClaimTypes are the valid ClaimType values.
var ClaimTypes = []ClaimType{ClaimString, ClaimLong, ClaimBool, ClaimStringSet, ClaimLongSet}

// DefaultClaims are the claims every schema declares: the SANs of an mTLS
// client certificate (abi.Principal).
var DefaultClaims = map[string]ClaimType{"uris": ClaimStringSet, "dns_names": ClaimStringSet, "emails": ClaimStringSet}

// Options shape the generated schema and the requests built under it.
type Options struct {
	// Claims declares the principal's claims beyond DefaultClaims (which
	// an entry of the same name replaces): the operator's configured OIDC
	// claims. An undeclared claim is not in principal.claims.
	Claims map[string]ClaimType
	// Windows declares the counting windows context.session.window and
	// context.session.principal.window hold ("1h", "24h"; abi.ParseWindow
	// syntax, named by abi.WindowName): the host's counters windows the
	// policies read. A window the host does not count makes a call
	// inconclusive.
	Windows []string
}

// windows returns the declared windows' names, the invalid left out.
func (o Options) windows() []string {
	var out []string
	for _, w := range o.Windows {
		if n, err := windowNames([]string{w}); err == nil && !slices.Contains(out, n[0]) {
			out = append(out, n[0])
		}
	}
	slices.Sort(out)
	return out
}

// ValidateOptions checks o's windows.
func ValidateOptions(o Options) error {
	_, err := windowNames(o.Windows)
	return err
}

// claims returns the declared claims, defaults included.
func (o Options) claims() map[string]ClaimType {
	out := map[string]ClaimType{}
	for k, v := range DefaultClaims {
		out[k] = v
	}
	for k, v := range o.Claims {
		out[k] = v
	}
	return out
}

// ParseClaimType checks a declared claim type.
func ParseClaimType(s string) (ClaimType, error) {
	t := ClaimType(strings.ReplaceAll(s, " ", ""))
	if slices.Contains(ClaimTypes, t) {
		return t, nil
	}
	return "", fmt.Errorf("claim type %q: want one of String, Long, Bool, Set<String>, Set<Long>", s)
}

// ToolSchema is one tool as the schema sees it.
type ToolSchema struct {
	Tool abi.Tool
	// Action is the tool's action id: its canonical id.
	Action string
	// Groups are the action groups it is in.
	Groups    []string
	Arguments Type
	Paths     Type
	// Omitted are its input schema's properties without a Cedar type.
	Omitted []Omitted
}

// Schema is the Cedar schema generated from a catalog.
type Schema struct {
	// Text is the schema in Cedar's schema syntax.
	Text  string
	Tools []ToolSchema
	// Claims are the declared claims, defaults included.
	Claims map[string]ClaimType
	// windows are the declared counting windows' names, sorted.
	windows  []string
	resolved *resolved.Schema
}

// Tool returns the tool whose action id is id.
func (s *Schema) Tool(id string) (ToolSchema, bool) {
	i := slices.IndexFunc(s.Tools, func(t ToolSchema) bool { return t.Action == id })
	if i < 0 {
		return ToolSchema{}, false
	}
	return s.Tools[i], true
}

// SchemaError is a generated schema Cedar refused: a bug, or a catalog
// that names something Cedar cannot hold.
type SchemaError struct{ Err error }

func (e *SchemaError) Error() string { return "policy: generated schema: " + e.Err.Error() }
func (e *SchemaError) Unwrap() error { return e.Err }

// NewToolSchema maps one catalog tool.
func NewToolSchema(t abi.Tool) ToolSchema {
	args, om := FromJSONSchema(t.InputSchema)
	return ToolSchema{Tool: t, Action: t.ID, Groups: groupsOf(t), Arguments: args, Paths: pathsType(args), Omitted: om}
}

// namespaceOf is the part of a tool id before its first ':'.
func namespaceOf(id string) string {
	ns, _, ok := strings.Cut(id, ":")
	if !ok {
		return ""
	}
	return ns
}

// annotations are the tool's behaviour hints; without hints, the ones its
// effect implies (open_world true, the MCP default).
func annotations(t abi.Tool) abi.ToolHints {
	if t.Hints != nil {
		return *t.Hints
	}
	e := effectOf(t)
	return abi.ToolHints{ReadOnly: e == abi.EffectReadOnly, Destructive: e != abi.EffectReadOnly,
		Idempotent: e != abi.EffectNonIdempotent, OpenWorld: true}
}

// effectOf is the tool's effect class; empty is non_idempotent, the least
// trusted.
func effectOf(t abi.Tool) string {
	if t.Effect == "" {
		return abi.EffectNonIdempotent
	}
	return t.Effect
}

func groupsOf(t abi.Tool) []string {
	g := []string{effectOf(t)}
	if h := annotations(t); !h.ReadOnly && h.Destructive {
		g = append(g, GroupDestructive)
	}
	if ns := namespaceOf(t.ID); ns != "" {
		g = append(g, ns+NamespaceGroupSuffix)
	}
	return g
}

// NewSchema generates the Cedar schema of a catalog's tools.
func NewSchema(tools []abi.Tool, o Options) (*Schema, error) {
	s := &Schema{Claims: o.claims(), windows: o.windows()}
	sorted := slices.Clone(tools)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	nsSet := map[string]bool{}
	for _, t := range sorted {
		ts := NewToolSchema(t)
		s.Tools = append(s.Tools, ts)
		if ns := namespaceOf(t.ID); ns != "" {
			nsSet[ns] = true
		}
	}
	var b strings.Builder
	b.WriteString("// Generated by gatehost from the tool catalog (docs/POLICY.md).\n\n")
	b.WriteString("type Annotations = {\n  read_only: Bool,\n  destructive: Bool,\n  idempotent: Bool,\n  open_world: Bool\n};\n\n")
	b.WriteString("type ToolInfo = {\n  id: String,\n  name: String,\n  namespace: String,\n  effect: String,\n  annotations: Annotations\n};\n\n")
	ids := make([]string, len(s.Tools))
	for i, ts := range s.Tools {
		ids[i] = ts.Action
	}
	writeSessionTypes(&b, ids, s.windows)
	claims := Type{Kind: KindRecord}
	for _, n := range sortedKeys(s.Claims) {
		claims.Attrs = append(claims.Attrs, Attr{Name: n, Type: claimType(s.Claims[n])})
	}
	fmt.Fprintf(&b, "entity %s = {\n  authenticated: Bool,\n  method: String,\n  issuer: String,\n  subject: String,\n  claims: ", PrincipalType)
	claims.write(&b, "  ")
	b.WriteString("\n};\n\n")
	fmt.Fprintf(&b, "entity %s = {\n  name: String,\n  source: String,\n  provenance: String\n};\n\n", ResourceType)
	for _, g := range append(slices.Clone(EffectGroups), GroupDestructive) {
		fmt.Fprintf(&b, "action %s;\n", quote(g))
	}
	for _, ns := range sortedKeys(nsSet) {
		fmt.Fprintf(&b, "action %s;\n", quote(ns+NamespaceGroupSuffix))
	}
	for _, ts := range s.Tools {
		b.WriteString("\n")
		for _, o := range ts.Omitted {
			fmt.Fprintf(&b, "// %s: argument %s omitted: %s\n", ts.Action, o.Path, oneLine(o.Reason))
		}
		groups := make([]string, len(ts.Groups))
		for i, g := range ts.Groups {
			groups[i] = quote(g)
		}
		fmt.Fprintf(&b, "action %s in [%s] appliesTo {\n  principal: [%s],\n  resource: [%s],\n  context: {\n    arguments: ",
			quote(ts.Action), strings.Join(groups, ", "), PrincipalType, ResourceType)
		ts.Arguments.write(&b, "    ")
		b.WriteString(",\n    paths: ")
		ts.Paths.write(&b, "    ")
		b.WriteString(",\n    tool: ToolInfo,\n    now: datetime,\n    session: Session\n  }\n};\n")
	}
	s.Text = b.String()
	var cs schema.Schema
	cs.SetFilename("catalog.cedarschema")
	if err := cs.UnmarshalCedar([]byte(s.Text)); err != nil {
		return nil, &SchemaError{Err: err}
	}
	r, err := cs.Resolve()
	if err != nil {
		return nil, &SchemaError{Err: err}
	}
	s.resolved = r
	return s, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func claimType(c ClaimType) Type {
	switch c {
	case ClaimLong:
		return Type{Kind: KindLong}
	case ClaimBool:
		return Type{Kind: KindBool}
	case ClaimStringSet:
		return Type{Kind: KindSet, Elem: &Type{Kind: KindString}}
	case ClaimLongSet:
		return Type{Kind: KindSet, Elem: &Type{Kind: KindLong}}
	}
	return Type{Kind: KindString}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
