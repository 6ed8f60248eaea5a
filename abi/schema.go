package abi

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
)

// Schemas holds the JSON Schemas (draft 2020-12) of the ABI messages:
// schema/request.schema.json, schema/response.schema.json,
// schema/descriptor.schema.json, schema/proposal.schema.json,
// schema/toolcall.schema.json, schema/merge.schema.json and (minor 8)
// schema/counters.schema.json, the counters.get answer. Their $id
// values are stable URIs under https://gatehost.dev/abi/v1/; they are
// identifiers, not fetched.
//
//go:embed schema/*.json
var Schemas embed.FS

// Schema file names within Schemas.
const (
	SchemaRequest    = "schema/request.schema.json"
	SchemaResponse   = "schema/response.schema.json"
	SchemaDescriptor = "schema/descriptor.schema.json"
	SchemaProposal   = "schema/proposal.schema.json"
	SchemaToolCall   = "schema/toolcall.schema.json"
	SchemaMerge      = "schema/merge.schema.json"
	SchemaCounters   = "schema/counters.schema.json"
)

// OpSchemaValidate is the operation of the schema capability (SPEC.md
// §7.13): request SchemaValidateRequest, answer SchemaValidateAnswer. The
// host validates a value against a tool's input schema from the run's
// pinned catalog snapshot, compiled once per schema digest in the host.
const OpSchemaValidate = "schema.validate"

// OpSchemaValidateMany is the schema capability's batch operation (SPEC.md
// §7.13, minor 12): request SchemaValidateManyRequest, answer
// SchemaValidateManyAnswer. It validates up to MaxSchemaItems values in one
// call, each as OpSchemaValidate would, so a gate checking every action of
// a proposal crosses into the host once instead of once per action.
const OpSchemaValidateMany = "schema.validate_many"

// MaxSchemaItems bounds the items of one schema.validate_many request.
const MaxSchemaItems = 256

// MaxSchemaFindings bounds the findings of one schema.validate answer; an
// answer cut there says so with Truncated.
const MaxSchemaFindings = 100

// MaxSchemaPointerBytes bounds the JSON Pointers of one schema.validate
// answer's findings together: the findings stop where their pointers pass
// it (the first is always sent), and the answer says so with Truncated. A
// pointer repeats the member names on its path, so without the bound one
// long name over many offending elements would make findings the size of
// the product of the two.
const MaxSchemaPointerBytes = 64 << 10

// SchemaValidateRequest names one input schema of the run's pinned catalog
// snapshot, by exactly one of Tool and SchemaDigest, and the value to
// validate against it. The whole request is bounded by MaxHostRequestBytes.
type SchemaValidateRequest struct {
	// Tool is a tool's id, wire name or alias, as catalog.get takes it.
	Tool string `json:"tool,omitempty"`
	// SchemaDigest is the lowercase hex SHA-256 of a schema in the
	// snapshot (SPEC.md §8), as a tool record's schema_digest gives it.
	SchemaDigest string `json:"schema_digest,omitempty"`
	// Value is the JSON value to validate, such as a tool call's
	// arguments. Required; JSON null is a value.
	Value json.RawMessage `json:"value"`
}

// Check reports a request the host refuses as bad_request: neither or both
// of Tool and SchemaDigest, a SchemaDigest that is not 64 lowercase hex
// digits, or no Value. The error names the member.
func (r *SchemaValidateRequest) Check() error {
	switch {
	case r.Tool == "" && r.SchemaDigest == "":
		return errors.New("one of tool and schema_digest is required")
	case r.Tool != "" && r.SchemaDigest != "":
		return errors.New("tool and schema_digest are exclusive: name the schema one way")
	case r.SchemaDigest != "" && !IsSchemaDigest(r.SchemaDigest):
		return errors.New("schema_digest: not 64 lowercase hex digits")
	case len(r.Value) == 0:
		return errors.New("value: required")
	}
	return nil
}

// SchemaValidateManyRequest is a schema.validate_many request: 1 to
// MaxSchemaItems requests, each of the form schema.validate takes. The
// whole request is bounded by MaxHostRequestBytes.
type SchemaValidateManyRequest struct {
	Items []SchemaValidateRequest `json:"items"`
}

// Check reports a request the host refuses as bad_request: no items, more
// than MaxSchemaItems, or an item SchemaValidateRequest.Check refuses. The
// error names the item by index (items[3].value: required).
func (r *SchemaValidateManyRequest) Check() error {
	switch {
	case len(r.Items) == 0:
		return errors.New("items: at least one is required")
	case len(r.Items) > MaxSchemaItems:
		return fmt.Errorf("items: %d, more than %d", len(r.Items), MaxSchemaItems)
	}
	for i := range r.Items {
		if err := r.Items[i].Check(); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}

// SchemaValidateManyAnswer is the answer of OpSchemaValidateMany: one
// SchemaValidateAnswer per request item, in the items' order.
type SchemaValidateManyAnswer struct {
	Items []SchemaValidateAnswer `json:"items"`
}

// SchemaValidateAnswer is the answer of OpSchemaValidate.
type SchemaValidateAnswer struct {
	// Found is false when the snapshot has no such tool or schema; the
	// other members are then zero.
	Found bool `json:"found"`
	// SchemaDigest is the digest of the schema validated against.
	SchemaDigest string `json:"schema_digest,omitempty"`
	// Valid is true when Value satisfies the schema (always, for a tool
	// registered without an input schema). A valid answer has no findings;
	// an invalid one has at least one.
	Valid bool `json:"valid"`
	// Findings are the violations, sorted by pointer, then keyword, then
	// message, without duplicates, at most MaxSchemaFindings of them.
	Findings []SchemaFinding `json:"findings,omitempty"`
	// Truncated: there were more findings than MaxSchemaFindings, or than
	// fit under MaxSchemaPointerBytes.
	Truncated bool `json:"truncated,omitempty"`
}

// SchemaFinding is one violation of a schema by a value.
type SchemaFinding struct {
	// Pointer is an RFC 6901 JSON Pointer into the value; "" is the
	// value itself.
	Pointer string `json:"pointer"`
	// Keyword is the JSON Schema keyword that failed, such as "type" or
	// "required"; "json" for a number no tool can receive (outside IEEE
	// 754 double range, or longer than 100 characters).
	Keyword string `json:"keyword"`
	// Message says what is wrong for people. It never repeats the
	// offending value.
	Message string `json:"message"`
}

// IsSchemaDigest reports whether d has the form of a schema digest: 64
// lowercase hex digits (SPEC.md §8).
func IsSchemaDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
