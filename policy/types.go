package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
)

// Kind is the Cedar type an argument maps to.
type Kind int

// The Cedar types a JSON Schema maps to (docs/POLICY.md, "Schema mapping").
const (
	KindString  Kind = iota + 1 // String
	KindLong                    // Long: JSON Schema integer
	KindDecimal                 // decimal: JSON Schema number
	KindBool                    // Bool
	KindRecord                  // a record of the declared properties
	KindSet                     // Set<T>: JSON Schema array
)

// Type is the Cedar type of one argument, or of a tool's whole arguments
// (a record).
type Type struct {
	Kind Kind
	// Attrs are a record's attributes, sorted by name.
	Attrs []Attr
	// Elem is a set's element type.
	Elem *Type
}

// Attr is one attribute of a record type.
type Attr struct {
	Name     string
	Type     Type
	Required bool
	// Nullable: the input schema allows null (["T","null"], or an anyOf
	// or oneOf with a null branch), which is then an absent attribute.
	// A null the schema does not allow is an error.
	Nullable bool
}

// Omitted is a property of an input schema that has no Cedar type: it is
// left out of the context, so a policy naming it is refused by validation.
type Omitted struct {
	// Path is the property's place in the arguments, dotted
	// ("edits[].oldText" for an array's items).
	Path   string
	Reason string
}

// maxDepth bounds how deeply an input schema is followed.
const maxDepth = 16

// FromJSONSchema maps a tool's JSON Schema input schema to the record type
// of context.arguments. It never fails: what has no Cedar type is listed in
// the second result and left out.
func FromJSONSchema(raw json.RawMessage) (Type, []Omitted) {
	var s any
	if len(bytes.TrimSpace(raw)) == 0 {
		return Type{Kind: KindRecord}, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Type{Kind: KindRecord}, []Omitted{{Path: "", Reason: "the input schema is not JSON"}}
	}
	var om []Omitted
	m, _ := s.(map[string]any)
	t := recordOf(m, "", 0, &om)
	return t, om
}

func recordOf(m map[string]any, path string, depth int, om *[]Omitted) Type {
	t := Type{Kind: KindRecord}
	props, _ := m["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, n := range r {
			if s, ok := n.(string); ok {
				req[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := join(path, n)
		sub, _ := props[n].(map[string]any)
		if sub == nil {
			*om = append(*om, Omitted{Path: p, Reason: "the property's schema is not an object"})
			continue
		}
		at, nullable, why := typeOf(sub, p, depth+1, om)
		if why != "" {
			*om = append(*om, Omitted{Path: p, Reason: why})
			continue
		}
		t.Attrs = append(t.Attrs, Attr{Name: n, Type: at, Required: req[n] && !nullable, Nullable: nullable})
	}
	return t
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// typeOf maps one schema; why is non-empty when it has no Cedar type.
// nullable reports a ["T","null"] union, whose null is an absent attribute.
func typeOf(m map[string]any, path string, depth int, om *[]Omitted) (t Type, nullable bool, why string) {
	if depth > maxDepth {
		return Type{}, false, "nested deeper than 16 levels"
	}
	if _, ok := m["$ref"]; ok {
		return Type{}, false, "a $ref is not followed"
	}
	if inner, ok := nullableBranch(m); ok { // pydantic's Optional[T]
		t, _, why := typeOf(inner, path, depth, om)
		if why != "" {
			return Type{}, false, why
		}
		return t, true, ""
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "if"} {
		if _, ok := m[k]; ok {
			return Type{}, false, "a union or combination (" + k + ") has no single Cedar type"
		}
	}
	var name string
	switch ty := m["type"].(type) {
	case string:
		name = ty
	case []any:
		var rest []string
		for _, x := range ty {
			s, _ := x.(string)
			if s == "null" {
				nullable = true
				continue
			}
			rest = append(rest, s)
		}
		if len(rest) != 1 {
			return Type{}, false, fmt.Sprintf("the type union %v has no single Cedar type", ty)
		}
		name = rest[0]
	case nil:
		switch {
		case allStrings(m["enum"]) || isString(m["const"]):
			name = "string"
		case m["properties"] != nil:
			name = "object"
		default:
			return Type{}, false, "no type"
		}
	default:
		return Type{}, false, "type is not a string"
	}
	switch name {
	case "string":
		return Type{Kind: KindString}, nullable, ""
	case "integer":
		return Type{Kind: KindLong}, nullable, ""
	case "number":
		return Type{Kind: KindDecimal}, nullable, ""
	case "boolean":
		return Type{Kind: KindBool}, nullable, ""
	case "object":
		return recordOf(m, path, depth, om), nullable, ""
	case "array":
		items, _ := m["items"].(map[string]any)
		if items == nil {
			return Type{}, false, "an array without one items schema"
		}
		et, _, w := typeOf(items, path+"[]", depth+1, om)
		if w != "" {
			return Type{}, false, "its items: " + w
		}
		return Type{Kind: KindSet, Elem: &et}, nullable, ""
	}
	return Type{}, false, fmt.Sprintf("type %q has no Cedar type", name)
}

// nullableBranch recognises {"anyOf": [T, {"type": "null"}]} (or oneOf, in
// either order), the form pydantic and other generators give an optional
// argument, and returns T: it maps as ["T", "null"] does. Keys beside the
// union (description, default, title) are annotations; a schema with
// "type" or another combination next to it is not this form.
func nullableBranch(m map[string]any) (map[string]any, bool) {
	var list []any
	for _, k := range []string{"anyOf", "oneOf"} {
		if l, ok := m[k].([]any); ok {
			if list != nil {
				return nil, false
			}
			list = l
		}
	}
	if len(list) != 2 {
		return nil, false
	}
	for _, k := range []string{"type", "allOf", "not", "if", "$ref"} {
		if _, ok := m[k]; ok {
			return nil, false
		}
	}
	for i := range 2 {
		null, _ := list[i].(map[string]any)
		other, _ := list[1-i].(map[string]any)
		if null == nil || other == nil || null["type"] != "null" {
			continue
		}
		return other, true
	}
	return nil, false
}

func allStrings(v any) bool {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	for _, x := range a {
		if !isString(x) {
			return false
		}
	}
	return true
}

func isString(v any) bool { _, ok := v.(string); return ok }

// Cedar renders t in Cedar schema syntax.
func (t Type) Cedar() string {
	var b strings.Builder
	t.write(&b, "")
	return b.String()
}

func (t Type) write(b *strings.Builder, indent string) {
	switch t.Kind {
	case KindString:
		b.WriteString("String")
	case KindLong:
		b.WriteString("Long")
	case KindDecimal:
		b.WriteString("decimal")
	case KindBool:
		b.WriteString("Bool")
	case KindSet:
		b.WriteString("Set<")
		t.Elem.write(b, indent)
		b.WriteString(">")
	case KindRecord:
		if len(t.Attrs) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, a := range t.Attrs {
			b.WriteString(indent + "  " + quote(a.Name))
			if !a.Required {
				b.WriteString("?")
			}
			b.WriteString(": ")
			a.Type.write(b, indent+"  ")
			if i < len(t.Attrs)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	}
}

// quote writes a Cedar string literal.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string: cannot fail
	return string(b)
}

// ArgumentError is an argument of a call whose value the declared Cedar
// type cannot hold: a string where the schema says integer, a number with
// more than four decimal places, an integer beyond 64 bits. The call is
// not evaluated (fail-closed).
type ArgumentError struct {
	Path   string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("argument %s: %s", e.Path, e.Reason)
}

// Value converts a decoded JSON value (numbers as json.Number) to the
// Cedar value of type t. Properties the type does not declare are dropped;
// a null is an absent attribute.
func (t Type) Value(v any, path string) (types.Value, error) {
	bad := func(want string) error {
		return &ArgumentError{Path: orTop(path), Reason: fmt.Sprintf("want %s, have %s", want, jsonKind(v))}
	}
	switch t.Kind {
	case KindString:
		s, ok := v.(string)
		if !ok {
			return nil, bad("a string")
		}
		return types.String(s), nil
	case KindBool:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("a boolean")
		}
		return types.Boolean(b), nil
	case KindLong:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("an integer")
		}
		i, err := toLong(n)
		if err != nil {
			return nil, &ArgumentError{Path: orTop(path), Reason: err.Error()}
		}
		return types.Long(i), nil
	case KindDecimal:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("a number")
		}
		d, err := toDecimal(n)
		if err != nil {
			return nil, &ArgumentError{Path: orTop(path), Reason: err.Error()}
		}
		return d, nil
	case KindSet:
		a, ok := v.([]any)
		if !ok {
			return nil, bad("an array")
		}
		out := make([]types.Value, 0, len(a))
		for i, x := range a {
			ev, err := t.Elem.Value(x, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return types.NewSet(out...), nil
	case KindRecord:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, bad("an object")
		}
		rm := types.RecordMap{}
		for _, a := range t.Attrs {
			x, ok := m[a.Name]
			switch {
			case !ok, x == nil && a.Nullable:
				continue
			case x == nil:
				// A server may read a null its schema does not allow as
				// "no limit"; the policy cannot tell it from absent.
				return nil, &ArgumentError{Path: join(path, a.Name), Reason: "null, which its schema does not allow"}
			}
			av, err := a.Type.Value(x, join(path, a.Name))
			if err != nil {
				return nil, err
			}
			rm[types.String(a.Name)] = av
		}
		return types.NewRecord(rm), nil
	}
	return nil, &ArgumentError{Path: orTop(path), Reason: "no Cedar type"}
}

func orTop(p string) string {
	if p == "" {
		return "(the arguments)"
	}
	return p
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// toLong accepts an integral JSON number within 64 bits (2 and 2.0 alike).
func toLong(n json.Number) (int64, error) {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, fmt.Errorf("%s is not an integer of at most 64 bits", cut(string(n)))
	}
	return r.Num().Int64(), nil
}

// toDecimal accepts a JSON number Cedar's decimal holds exactly: at most
// four decimal places, within ±922337203685477.5807.
func toDecimal(n json.Number) (types.Decimal, error) {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return types.Decimal{}, fmt.Errorf("%s is not a number", cut(string(n)))
	}
	r.Mul(r, big.NewRat(10000, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return types.Decimal{}, fmt.Errorf("%s does not fit Cedar's decimal (four decimal places, ±922337203685477.5807)", cut(string(n)))
	}
	d, err := types.NewDecimal(r.Num().Int64(), -4)
	if err != nil {
		return types.Decimal{}, fmt.Errorf("%s: %w", cut(string(n)), err)
	}
	return d, nil
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// names lists a record's attribute names.
func (t Type) names() []string {
	out := make([]string, len(t.Attrs))
	for i, a := range t.Attrs {
		out[i] = a.Name
	}
	return slices.Clip(out)
}
