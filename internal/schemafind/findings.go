package schemafind

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/jsonptr"
)

// validate checks v against s and returns the leaf violations sorted by
// pointer, keyword and message, without duplicates. An error (ErrValidator)
// means the validator itself failed (an infinite $ref loop, say), not that
// the value is invalid.
func validate(s *jsonschema.Schema, v any) (out []abi.SchemaFinding, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %v", ErrValidator, r)
		}
	}()
	err = s.Validate(v)
	if err == nil {
		return nil, nil
	}
	vs, err := Violations(v, err)
	if err != nil {
		return nil, err
	}
	out = make([]abi.SchemaFinding, len(vs))
	for i, x := range vs {
		out[i] = x.SchemaFinding
	}
	return slices.Compact(out), nil
}

// Violation is one violation of a validation error: the finding
// schema.validate reports for it, and where it lies.
type Violation struct {
	abi.SchemaFinding
	// Instance is the location of the offending value: Pointer's reference
	// tokens, unescaped.
	Instance []string
	// SchemaURL is the absolute location of the schema whose keyword
	// failed (for additionalProperties, the schema holding it).
	SchemaURL string
}

// Violations turns err, the error of validating value, into its leaf
// violations sorted by pointer, keyword and message. The alternatives of
// anyOf and oneOf, and the per-item misses under contains, are reported
// as one violation of the combinator: each branch's own errors are not
// each something the caller must fix. An err that is not a
// *jsonschema.ValidationError, or one the validator could not complete
// (a reference cycle), is returned wrapped in ErrValidator.
func Violations(value any, err error) ([]Violation, error) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("%w: %w", ErrValidator, err)
	}
	w := walker{value: value}
	w.walk(ve, nil, "", "")
	if w.err != nil {
		return nil, w.err
	}
	slices.SortFunc(w.out, func(a, b Violation) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		if c := strings.Compare(a.Keyword, b.Keyword); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return w.out, nil
}

// ValidationError is a value that does not match its schema. The
// validator's own error type stays out of the chain: it is no part of the
// API of the packages that report one.
type ValidationError struct {
	// Schema is the schema's location.
	Schema string
	// Violations are the value's violations in Violations' order: at
	// least one.
	Violations []Violation
}

// Error is one line: the first violation, and how many more there are.
func (e *ValidationError) Error() string {
	v := e.Violations[0]
	s := fmt.Sprintf("does not match schema %s: at %s: %s: %s", e.Schema, strconv.Quote(v.Pointer), v.Keyword, v.Message)
	if n := len(e.Violations) - 1; n > 0 {
		s += fmt.Sprintf(" (and %d more)", n)
	}
	return s
}

// Explain returns err, the error of validating value against the schema at
// location schema, as a *ValidationError; an error the validator could not
// complete, or one without a violation, wraps ErrValidator.
func Explain(schema string, value any, err error) error {
	vs, err := Violations(value, err)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return fmt.Errorf("%w: an error without a violation", ErrValidator)
	}
	return &ValidationError{Schema: strings.TrimSuffix(schema, "#"), Violations: vs}
}

// maxViolationPointerBytes bounds the pointers of one error's violations
// together, before they are sorted and cut: every violation's pointer
// repeats the member names on its path, so a value with one long name over
// many failing elements would otherwise cost the product of the two. Past
// it the violations are not built and the error wraps ErrValidator: the
// value is not known valid, and no answer is made of it.
const maxViolationPointerBytes = 1 << 20

type walker struct {
	value any
	out   []Violation
	err   error
	bytes int // the pointers in out before escaping (at most half their length after)
}

// walk appends the violations below ve. prefix is the instance location
// that ve's own is relative to: empty, but under propertyNames, whose
// errors are about a member's name, the member. base and kwLoc follow the
// keyword location as the validator's detailed output does (base is the
// schema ve's parent was about, kwLoc the keyword path to it through
// references); only a false schema, whose error names no keyword, needs it.
func (w *walker) walk(ve *jsonschema.ValidationError, prefix []string, base, kwLoc string) {
	if base != "" {
		if rest, ok := strings.CutPrefix(ve.SchemaURL, base); ok {
			kwLoc += rest
		} else {
			_, kwLoc, _ = strings.Cut(ve.SchemaURL, "#")
		}
	}
	base = ve.SchemaURL
	inst := append(slices.Clip(prefix), ve.InstanceLocation...)
	switch k := ve.ErrorKind.(type) {
	case *kind.Reference:
		kwLoc += "/" + jsonptr.Escape(k.Keyword)
		base = k.URL
	case *kind.PropertyNames:
		// The name's errors are located at the member.
		prefix = append(slices.Clip(inst), k.Property)
	case *kind.AnyOf, *kind.OneOf, *kind.Contains, *kind.MinContains, *kind.ContentSchema:
		w.leaf(ve, inst, kwLoc)
		return
	}
	if len(ve.Causes) == 0 {
		w.leaf(ve, inst, kwLoc)
		return
	}
	for _, c := range ve.Causes {
		w.walk(c, prefix, base, kwLoc)
	}
}

// leaf appends the violation (or, for a dependency, the violations) of ve,
// located at inst.
func (w *walker) leaf(ve *jsonschema.ValidationError, inst []string, kwLoc string) {
	if w.err != nil {
		return
	}
	add := func(keyword, message string) {
		for _, t := range inst { // len only: linear in the path's depth
			w.bytes += len(t) + 1
		}
		if w.bytes > maxViolationPointerBytes {
			w.err = fmt.Errorf("%w: the violations' locations pass %d bytes together", ErrValidator, maxViolationPointerBytes)
			return
		}
		w.out = append(w.out, Violation{
			SchemaFinding: abi.SchemaFinding{Pointer: jsonptr.Join(inst...), Keyword: keyword, Message: message},
			Instance:      inst,
			SchemaURL:     ve.SchemaURL,
		})
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.RefCycle:
		w.err = fmt.Errorf("%w: reference cycle: %s and %s resolve to %s", ErrValidator, k.KeywordLocation1, k.KeywordLocation2, k.URL)
	case *kind.InvalidJsonValue:
		w.err = fmt.Errorf("%w: a %T is not a JSON value", ErrValidator, k.Value)
	case *kind.Dependency:
		// One violation per missing member, as for dependentRequired.
		for _, m := range k.Missing {
			add("dependencies", dependencyMessage(m, k.Prop))
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			add("dependentRequired", dependencyMessage(m, k.Prop))
		}
	case *kind.AdditionalItems:
		// The array's length is the value's, which the kind does not hold.
		a, ok := Lookup(w.value, inst).([]any)
		if !ok || len(a) < k.Count {
			add("additionalItems", fmt.Sprintf("%d additional items not allowed", k.Count))
			break
		}
		add("additionalItems", fmt.Sprintf("only %d items are allowed, but found %d items", len(a)-k.Count, len(a)))
	default:
		kw := keywordOfKind(ve.ErrorKind, kwLoc)
		add(kw, message(ve.ErrorKind, kw))
	}
}

// keywordOfKind is the keyword a leaf of kind k reports: the kind's own,
// but for a false schema (the applicator holding it, from the keyword
// location) and the two kinds whose keyword path is not the schema's
// keyword.
func keywordOfKind(k jsonschema.ErrorKind, kwLoc string) string {
	switch k.(type) {
	case *kind.FalseSchema:
		return keywordOf(kwLoc)
	case *kind.Not:
		return "not"
	case *kind.Contains:
		// A failed contains is a failed minContains of 1, the default
		// (JSON Schema 2020-12 §10.3.1.3), and reported so.
		return "minContains"
	}
	if p := k.KeywordPath(); len(p) > 0 {
		return p[0]
	}
	return keywordOf(kwLoc)
}

// message words a leaf of kind k, whose keyword is kw. It never includes the
// offending value: only the schema's bounds and names, counts, and the
// names of the value's members.
func message(k jsonschema.ErrorKind, kw string) string {
	switch k := k.(type) {
	case *kind.FalseSchema:
		return "value not allowed here (false schema under " + kw + ")"
	case *kind.Type:
		return fmt.Sprintf("expected %s, but got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Const:
		if !primitive(k.Want) {
			return "const failed"
		}
		return "value must be " + display(k.Want)
	case *kind.Enum:
		if !slices.ContainsFunc(k.Want, func(v any) bool { return !primitive(v) }) {
			if len(k.Want) == 1 {
				return "value must be " + display(k.Want[0])
			}
			want := make([]string, len(k.Want))
			for i, v := range k.Want {
				want[i] = display(v)
			}
			return "value must be one of " + strings.Join(want, ", ")
		}
		return "enum failed"
	case *kind.Format:
		return "value is not a valid " + quote(k.Want)
	case *kind.Minimum:
		return "value must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "value must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "value must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "value must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "value is not a multiple of " + ratString(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("length must be >= %d, but got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("length must be <= %d, but got %d", k.Want, k.Got)
	case *kind.Pattern:
		return "does not match pattern " + quote(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("minimum %d items required, but found %d items", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("maximum %d items required, but found %d items", k.Want, k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("items at index %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "too few items match the contains schema: valid must be >= 1, but got 0"
	case *kind.MinContains:
		return fmt.Sprintf("too few items match the contains schema: valid must be >= %d, but got %d", k.Want, len(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf("valid must be <= %d, but got %d", k.Want, len(k.Got))
	case *kind.MinProperties:
		return fmt.Sprintf("minimum %d properties allowed, but found %d properties", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("maximum %d properties allowed, but found %d properties", k.Want, k.Got)
	case *kind.Required:
		return "missing properties: " + joinQuoted(k.Missing)
	case *kind.AdditionalProperties:
		// The names come from map iteration: sorted, for a stable message.
		return "properties not allowed: " + joinQuoted(slices.Sorted(slices.Values(k.Properties)))
	case *kind.Not:
		return "not failed"
	case *kind.AnyOf:
		return "value matches none of the anyOf alternatives"
	case *kind.OneOf:
		if len(k.Subschemas) >= 2 {
			return fmt.Sprintf("valid against schemas at indexes %d and %d", k.Subschemas[0], k.Subschemas[1])
		}
		return "value matches none of the oneOf alternatives"
	case *kind.ContentEncoding:
		return "value is not " + k.Want + " encoded"
	case *kind.ContentMediaType:
		return "value is not of mediatype " + quote(k.Want)
	case *kind.ContentSchema:
		return "decoded content does not match the contentSchema"
	}
	return "value does not satisfy " + kw
}

func dependencyMessage(missing, prop string) string {
	return fmt.Sprintf("property %s is required, if %s property exists", quote(missing), quote(prop))
}

// quote quotes a name or a schema's string in single quotes, Go escapes
// for what is not printable.
func quote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// primitive reports whether a schema value (const, an enum member) is
// shown in a message: objects and arrays are not.
func primitive(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// display shows a primitive schema value: a string Go-quoted, a number as
// written in the schema, null as null.
func display(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	}
	return fmt.Sprint(v)
}

// ratString shows a schema's numeric bound as the nearest float64.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

// Lookup returns the value at the reference tokens toks below v, a decoded
// JSON document, or nil when there is none.
func Lookup(v any, toks []string) any {
	for _, t := range toks {
		switch n := v.(type) {
		case map[string]any:
			v = n[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			v = n[i]
		default:
			return nil
		}
	}
	return v
}

// Schema keywords whose next location segment is a user-chosen name or an
// array index rather than a keyword.
var (
	namedChildren = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
	}
	indexedChildren = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true,
	}
)

// keywordOf returns the keyword a keyword location ends in. It walks the
// location from the root because a property may be named like a keyword:
// in /properties/type/enum, "type" is a name and "enum" the keyword. When
// the location ends on a subschema (a false schema failed) the keyword is
// the applicator that holds it, such as "properties" or "items".
func keywordOf(loc string) string {
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	kw := ""
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if s == "" {
			continue
		}
		kw = s
		switch {
		case namedChildren[s]:
			i++ // skip the name
			if (s == "dependentRequired" || s == "dependencies") && i+1 < len(segs) && isIndex(segs[i+1]) {
				i++ // and the index into the list of required names
			}
		case indexedChildren[s], s == "items" && i+1 < len(segs) && isIndex(segs[i+1]):
			i++ // skip the index
		}
	}
	return kw
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
