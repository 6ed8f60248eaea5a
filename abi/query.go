package abi

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Capability operations of the query capability (SPEC.md §7.12): a stage reads
// the domain catalog's declarations and the rows of its views, which the host
// evaluates through its data sources.
const (
	// OpQueryCapability: request QueryCapabilityRequest, answer
	// QueryCapabilityAnswer. Looks a domain capability up by name or tool
	// alias.
	OpQueryCapability = "query.capability"
	// OpQueryRows: request QueryRowsRequest, answer QueryRowsAnswer. Runs a
	// view, or the view behind a query/get capability, with bound params.
	OpQueryRows = "query.rows"
)

// Capability kinds of a domain catalog. The write kinds are Action, Create,
// Update and Delete; only they may declare preconditions.
const (
	KindQuery  = "query"
	KindGet    = "get"
	KindAction = "action"
	KindCreate = "create"
	KindUpdate = "update"
	KindDelete = "delete"
)

// IsWriteKind reports whether a capability of kind k writes.
func IsWriteKind(k string) bool {
	return k == KindAction || k == KindCreate || k == KindUpdate || k == KindDelete
}

// DomainCapability is one capability of a domain catalog as query.capability
// answers it.
type DomainCapability struct {
	// Domain is the domain catalog's name, such as "retail".
	Domain string `json:"domain"`
	// Name is the capability's name; Tools are the tool names (wire names,
	// aliases or catalog ids) that call it, Name first.
	Name  string   `json:"name"`
	Tools []string `json:"tools"`
	// Kind is one of query, get, action, create, update, delete.
	Kind string `json:"kind"`
	// Parameters names the call's parameters, when declared.
	Parameters []string `json:"parameters,omitempty"`
	// Preconditions are evaluated in order before a write.
	Preconditions []DomainPrecondition `json:"preconditions,omitempty"`
	// Effects (minor 4) are the changes an admitted call of this write
	// makes to the domain's data, as the catalog declares them. A dry
	// (proposal) check applies the effects of each admitted write, in plan
	// order, to a copy-on-write overlay that later writes of the same plan
	// are checked against (QueryRowsRequest.Overlay).
	Effects []DomainEffect `json:"effects,omitempty"`
	// LocalTimeOffset ("-05:00") is the zone of timestamps in the data that
	// carry none; empty means such timestamps are not comparable as times.
	LocalTimeOffset string `json:"local_time_offset,omitempty"`
}

// DomainPrecondition is one write guard: rows from View or Capability,
// scoped by Bind, tested by DenyWhen or Require. With neither View nor
// Capability the single row is the call's parameters (an extension of the
// RFC v1 shape).
type DomainPrecondition struct {
	ID         string             `json:"id"`
	View       string             `json:"view,omitempty"`
	Capability string             `json:"capability,omitempty"`
	Bind       map[string]Operand `json:"bind,omitempty"`
	// DenyWhen denies when a row satisfies it (no row at all cannot be
	// evaluated). Require denies unless a row satisfies Require.Match.
	DenyWhen *Condition `json:"deny_when,omitempty"`
	Require  *Require   `json:"require,omitempty"`
	Message  string     `json:"message"`
	// ForEach (minor 4) runs the precondition once per element of an
	// array parameter (or per position of several, paired), binding each
	// element as a parameter named by ForEach.As.
	ForEach *ForEach `json:"for_each,omitempty"`
	// Let (minor 5) names values computed before Bind and the condition,
	// each then usable as a param operand {kind: param, name: NAME}. With
	// ForEach the lets are computed once per element, the element bound.
	Let map[string]Let `json:"let,omitempty"`
}

// Let is a named value of a precondition or an effect (minor 5): Value,
// evaluated over the call's parameters (and the enclosing for_each's
// elements) and, when View or Capability is given, over the single row the
// query answers with Bind (no row or several make it unknown). With ForEach
// it is an array: one Value per element, each with its own query, the
// element bound under ForEach.As, so that an aggregate over the param
// (sum, count, min, max) combines rows looked up element by element. A let
// reads the call's parameters and for_each names, not other lets. A value
// that is unknown, for any element, makes the precondition unevaluable and
// the effect unresolvable. Its queries count toward MaxQueriesPerCall and
// its ForEach toward MaxForEachElements.
type Let struct {
	ForEach    *ForEach           `json:"for_each,omitempty"`
	View       string             `json:"view,omitempty"`
	Capability string             `json:"capability,omitempty"`
	Bind       map[string]Operand `json:"bind,omitempty"`
	Value      Operand            `json:"value"`
}

// ForEach iterates a precondition or an effect over the elements of array
// parameters (minor 4). Exactly one of Param and Zip is set. Param is a
// param path yielding an array; its element is bound as As[0]. Zip is two or
// more param paths yielding arrays of one length, paired by position; the
// i-th elements are bound as As[0], As[1], …. The bound names are then
// usable as {kind: param, name: NAME[.path]} operands. An iteration yields
// one outcome per element; a failing element is reported with its index.
// A path that is not an array, arrays of different lengths, or more than
// MaxForEachElements elements make the precondition unevaluable.
type ForEach struct {
	Param string   `json:"param,omitempty"`
	Zip   []string `json:"zip,omitempty"`
	// As names the bound elements: one name for Param, one per Zip path.
	As []string `json:"as"`
}

// MaxForEachElements caps the elements one for_each iterates.
const MaxForEachElements = 64

// MaxQueriesPerCall caps the query.rows a gate may make to check one call
// (every precondition and for_each element counted); past it the call is
// unevaluable and denied.
const MaxQueriesPerCall = 256

// DomainEffect is a declared change a write makes to one document of the
// domain's data (minor 4). Collection and ID name the document (ID an
// operand, usually {kind: param}, resolving to a string or a number, which
// is written shortest); Set (non-empty) maps a dotted path within the
// document to the value it takes. A Set path may hold {NAME} placeholders,
// each a call parameter or a ForEach name whose value is a string or a
// number. With ForEach the effect resolves to one Effect per element. When View or Capability is given the precondition rules for rows
// apply: the query is run with Bind and must answer exactly one row, which
// {kind: field} operands in Set read (the state before the write).
//
// Let (minor 5) names values computed first (per element with ForEach),
// usable as params in Bind, ID, Set and When and as {NAME} placeholders of
// Set paths. When (minor 5) is a condition over the effect's row and
// params: the effect (the element's, with ForEach) applies only when it
// holds; false applies nothing, unknown makes the effect unresolvable.
type DomainEffect struct {
	Collection string             `json:"collection"`
	ID         Operand            `json:"id"`
	View       string             `json:"view,omitempty"`
	Capability string             `json:"capability,omitempty"`
	Bind       map[string]Operand `json:"bind,omitempty"`
	ForEach    *ForEach           `json:"for_each,omitempty"`
	Let        map[string]Let     `json:"let,omitempty"`
	When       *Condition         `json:"when,omitempty"`
	Set        map[string]Operand `json:"set"`
}

// Effect is one resolved change on an overlay (minor 4): the document ID
// of Collection with each dotted path of Set given its value. A path's
// numeric segment indexes an array; a missing object member (or a missing
// document) is created. Paths are applied in sorted order.
type Effect struct {
	Collection string         `json:"collection"`
	ID         string         `json:"id"`
	Set        map[string]any `json:"set"`
}

// MaxOverlayEffects caps the effects one query.rows request may carry.
const MaxOverlayEffects = 256

// Require is the RFC's require: {match: Condition}.
type Require struct {
	Match *Condition `json:"match"`
}

// Condition is a predicate over one row. A leaf has exactly one left-hand
// side, Field (a dotted path; "*" maps over an array, "#" is an array's
// length, "@" alone is the row itself, and from minor 5 a segment -N is an
// array's N-th element from its end: "flights.-1" is the last) or Value (minor 4), and exactly one
// operator; a composite has exactly one of AllOf, AnyOf, Not. Inside an
// aggregate's Where the row is the element.
type Condition struct {
	Field     string   `json:"field,omitempty"`
	Equals    *Operand `json:"equals,omitempty"`
	NotEquals *Operand `json:"not_equals,omitempty"`
	In        *Operand `json:"in,omitempty"`
	NotIn     *Operand `json:"not_in,omitempty"`
	Exists    *bool    `json:"exists,omitempty"`
	Gt        *Operand `json:"gt,omitempty"`
	Gte       *Operand `json:"gte,omitempty"`
	Lt        *Operand `json:"lt,omitempty"`
	Lte       *Operand `json:"lte,omitempty"`
	// Contains is substring for a string field, element membership for an
	// array field.
	Contains *Operand `json:"contains,omitempty"`
	// StartsWith (minor 4) is a string prefix test.
	StartsWith *Operand `json:"starts_with,omitempty"`
	// Under (minor 7) is a lexical path test (PathUnder): the left side is
	// a path that, cleaned, equals or lies below the right side, an
	// absolute path.
	Under *Operand `json:"under,omitempty"`
	// Value (minor 4), instead of Field, is the left-hand side as an
	// operand (an aggregate, arithmetic, a param): {value: {kind: count,
	// …}, gt: 1}. A leaf has exactly one of Field and Value.
	Value *Operand `json:"value,omitempty"`

	AllOf []Condition `json:"all_of,omitempty"`
	AnyOf []Condition `json:"any_of,omitempty"`
	Not   *Condition  `json:"not,omitempty"`
}

// Operand kinds. Literal, param and now are minor 0; the rest are minor 4.
const (
	OperandLiteral = "literal"
	OperandParam   = "param"
	OperandNow     = "now"
	// OperandField is Name, a dotted path in the current row (the row a
	// condition tests; in an aggregate's Where, the element).
	OperandField = "field"
	// Arithmetic over Args, on numbers, computed as exact decimals: add and
	// mul take two or more, sub and div exactly two (div by zero is
	// unknown), min and max one or more.
	OperandAdd = "add"
	OperandSub = "sub"
	OperandMul = "mul"
	OperandDiv = "div"
	OperandMin = "min"
	OperandMax = "max"
	// Aggregates over Over, an operand yielding an array (a param, a row
	// field, or rows): count is the number of elements satisfying Where (all
	// when Where is nil); sum adds the number at path Of of each such
	// element (the element itself when Of is empty).
	OperandCount = "count"
	OperandSum   = "sum"
	// OperandRows is every row the precondition's query answered, as an
	// array, for an aggregate over a view's rows.
	OperandRows = "rows"
	// OperandVar is a catalog's variable (Name), set by the operator in the
	// host's config, optionally with Join, a relative slash-separated path
	// joined to its value. It exists only in catalog files: the host
	// replaces it by the literal value before sending a capability, and a
	// capability whose variables are not all set is not sent at all.
	OperandVar = "var"
)

// MaxExpressionDepth caps the nesting of operands and conditions in a
// catalog, every operand and condition on a path counted (a deny_when leaf
// comparing to a literal is 2). Catalogs deeper are refused at load; an
// evaluator treats deeper as unknown.
const MaxExpressionDepth = 16

// Operand is a value in a bind, a condition or an effect: {kind: literal,
// value}, {kind: param, name} (name is a dotted path whose first segment is
// a call parameter or a ForEach name), {kind: now, offset?} (the request's
// Context.Now plus a Go duration such as "-24h"), and from minor 4 {kind:
// field, name}, {kind: add|sub|mul|div|min|max, args}, {kind: count, over,
// where?}, {kind: sum, over, of?, where?} and {kind: rows}. The host always
// sends the object form. In JSON a bare value — any value that is neither
// an object with a "kind" member nor a one-member shorthand object such as
// {"param": "order_id"} — is a literal. Bind takes only literal, param and
// arithmetic over those; now is not allowed in bind.
type Operand struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`
	Value  any    `json:"value,omitempty"`
	Offset string `json:"offset,omitempty"`
	// Args are the operands of add, sub, mul, div, min and max.
	Args []Operand `json:"args,omitempty"`
	// Over, Where and Of are the members of count and sum.
	Over  *Operand   `json:"over,omitempty"`
	Where *Condition `json:"where,omitempty"`
	Of    string     `json:"of,omitempty"`
	// Join is a var operand's path below its value (OperandVar).
	Join string `json:"join,omitempty"`
}

// UnmarshalJSON reads the object form or a bare literal.
func (o *Operand) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(t, &probe); err != nil {
			return err
		}
		if len(probe) == 1 {
			for k, v := range probe {
				if isShorthand(k) {
					return o.shorthand(k, v)
				}
			}
		}
		if _, ok := probe[OperandVar]; ok && len(probe) == 2 {
			if _, ok := probe["join"]; ok {
				return o.varShorthand(t)
			}
		}
		if _, ok := probe["kind"]; ok {
			type plain Operand
			dec := json.NewDecoder(bytes.NewReader(t))
			dec.DisallowUnknownFields()
			var p plain
			if err := dec.Decode(&p); err != nil {
				return fmt.Errorf("operand: %w", err)
			}
			*o = Operand(p)
			if o.Kind == OperandLiteral {
				if _, ok := probe["value"]; !ok {
					return fmt.Errorf("operand: literal needs value")
				}
			}
			return nil
		}
	}
	var v any
	if err := json.Unmarshal(t, &v); err != nil {
		return err
	}
	*o = Operand{Kind: OperandLiteral, Value: v}
	return nil
}

// isShorthand reports whether k, the only member of an object without
// "kind", makes the object an operand shorthand (minor 4) rather than an
// object literal.
func isShorthand(k string) bool {
	switch k {
	case OperandField, OperandParam, OperandNow, OperandAdd, OperandSub, OperandMul, OperandDiv,
		OperandMin, OperandMax, OperandCount, OperandSum, OperandRows, OperandVar:
		return true
	}
	return false
}

// shorthand decodes the catalog shorthands of minor 4: {field: PATH},
// {param: PATH}, {now: OFFSET} ("" for none), {add|sub|mul|div|min|max:
// [OPERAND, …]}, {count|sum: {over, where?, of?}} and {rows: true}; and the
// catalog-only {var: NAME} (OperandVar).
func (o *Operand) shorthand(k string, v json.RawMessage) error {
	strictInto := func(into any) error {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return fmt.Errorf("operand %s: %w", k, err)
		}
		return nil
	}
	*o = Operand{Kind: k}
	switch k {
	case OperandField, OperandParam, OperandVar:
		return strictInto(&o.Name)
	case OperandNow:
		return strictInto(&o.Offset)
	case OperandRows:
		var b bool
		if err := strictInto(&b); err != nil || !b {
			return fmt.Errorf("operand rows: want {rows: true}")
		}
		return nil
	case OperandCount, OperandSum:
		var agg struct {
			Over  *Operand   `json:"over"`
			Where *Condition `json:"where,omitempty"`
			Of    string     `json:"of,omitempty"`
		}
		if err := strictInto(&agg); err != nil {
			return err
		}
		o.Over, o.Where, o.Of = agg.Over, agg.Where, agg.Of
		return nil
	}
	return strictInto(&o.Args)
}

// varShorthand decodes the catalog shorthand {var: NAME, join: PATH}.
func (o *Operand) varShorthand(b []byte) error {
	var v struct {
		Var  string `json:"var"`
		Join string `json:"join"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("operand var: %w", err)
	}
	*o = Operand{Kind: OperandVar, Name: v.Var, Join: v.Join}
	return nil
}

// MarshalJSON writes the object form; a literal keeps "value" even when it is
// null or false.
func (o Operand) MarshalJSON() ([]byte, error) {
	if o.Kind == OperandLiteral {
		return json.Marshal(struct {
			Kind  string `json:"kind"`
			Value any    `json:"value"`
		}{o.Kind, o.Value})
	}
	type plain Operand
	return json.Marshal(plain(o))
}

// QueryCapabilityRequest asks for a domain capability by name or tool name.
type QueryCapabilityRequest struct {
	Domain string `json:"domain"`
	Name   string `json:"name"`
}

// QueryCapabilityAnswer: Found is false when the domain has no capability
// called Name. An unknown domain is an error (bad_request).
type QueryCapabilityAnswer struct {
	Found      bool              `json:"found"`
	Capability *DomainCapability `json:"capability,omitempty"`
}

// QueryRowsRequest runs exactly one of View and Capability (a query/get
// capability backed by a view: its own, or the one made from its entity for
// a view-less capability that a precondition or effect reads) with Params,
// which must bind every parameter of the view and nothing else.
type QueryRowsRequest struct {
	Domain     string         `json:"domain"`
	View       string         `json:"view,omitempty"`
	Capability string         `json:"capability,omitempty"`
	Params     map[string]any `json:"params"`
	// Overlay (minor 4) are effects applied, in order, to a copy-on-write
	// view of the data before the query runs; the source is never
	// changed. A source that cannot apply them, or an effect that cannot
	// be applied, answers unavailable; more than MaxOverlayEffects, or a
	// set path deeper than 32 segments, answers bad_request.
	Overlay []Effect `json:"overlay,omitempty"`
}

// QueryRowsAnswer holds the view's rows, in the source's order. A row is a
// JSON object; a field the source has no value for (SQL NULL included) is
// absent.
type QueryRowsAnswer struct {
	Rows []map[string]any `json:"rows"`
}

// MaxQueryRows caps the rows of one query.rows answer. A view with more rows
// answers the error unavailable rather than a partial list, which a
// require.match could misread.
const MaxQueryRows = 1000

// UnmarshalJSON reads a ForEach strictly; As may be a single name ("as:
// item") as well as an array of names.
func (f *ForEach) UnmarshalJSON(b []byte) error {
	var raw struct {
		Param string          `json:"param,omitempty"`
		Zip   []string        `json:"zip,omitempty"`
		As    json.RawMessage `json:"as"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("for_each: %w", err)
	}
	*f = ForEach{Param: raw.Param, Zip: raw.Zip}
	if len(raw.As) == 0 || string(raw.As) == "null" {
		return nil
	}
	var one string
	if err := json.Unmarshal(raw.As, &one); err == nil {
		f.As = []string{one}
		return nil
	}
	if err := json.Unmarshal(raw.As, &f.As); err != nil {
		return fmt.Errorf("for_each.as: want a name or an array of names: %w", err)
	}
	return nil
}
