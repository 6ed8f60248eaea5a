package abi

import "embed"

// Schemas holds the JSON Schemas (draft 2020-12) of the ABI messages:
// schema/request.schema.json, schema/response.schema.json,
// schema/descriptor.schema.json, schema/proposal.schema.json,
// schema/toolcall.schema.json and schema/merge.schema.json. Their $id
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
)
