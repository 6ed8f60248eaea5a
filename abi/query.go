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
}

// Require is the RFC's require: {match: Condition}.
type Require struct {
	Match *Condition `json:"match"`
}

// Condition is a predicate over one row. A leaf names Field (a dotted path;
// "*" maps over an array, "#" is an array's length) and exactly one
// operator; a composite has exactly one of AllOf, AnyOf, Not.
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

	AllOf []Condition `json:"all_of,omitempty"`
	AnyOf []Condition `json:"any_of,omitempty"`
	Not   *Condition  `json:"not,omitempty"`
}

// Operand kinds.
const (
	OperandLiteral = "literal"
	OperandParam   = "param"
	OperandNow     = "now"
)

// Operand is a value in a bind or a condition: {kind: literal, value},
// {kind: param, name} (name is a dotted path whose first segment is a call
// parameter), or {kind: now, offset?} (the request's Context.Now plus a Go
// duration such as "-24h"). In JSON a bare value — any value that is not an
// object with a "kind" member — is a literal.
type Operand struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`
	Value  any    `json:"value,omitempty"`
	Offset string `json:"offset,omitempty"`
}

// UnmarshalJSON reads the object form or a bare literal.
func (o *Operand) UnmarshalJSON(b []byte) error {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(t, &probe); err != nil {
			return err
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
// capability backed by a view) with Params, which must bind every parameter
// of the view and nothing else.
type QueryRowsRequest struct {
	Domain     string         `json:"domain"`
	View       string         `json:"view,omitempty"`
	Capability string         `json:"capability,omitempty"`
	Params     map[string]any `json:"params"`
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
