package abi

import (
	"encoding/json"
	"errors"
)

// Proposal is the native shape of a SubjectProposal: a whole plan of actions,
// checked before its first dispatch. Only Actions is required.
type Proposal struct {
	ID      string         `json:"id,omitempty"`
	Source  string         `json:"source,omitempty"`
	Actions []Action       `json:"actions"`
	Context map[string]any `json:"context,omitempty"`
}

// Action types.
const (
	ActionToolCall   = "tool_call"
	ActionStateWrite = "state_write"
	ActionStateRead  = "state_read"
	ActionAssertion  = "assertion"
)

// Action is one step of a Proposal.
type Action struct {
	ID string `json:"id,omitempty"`
	// Type is tool_call, state_write, state_read or assertion; empty means
	// tool_call.
	Type string `json:"type,omitempty"`
	// Tool is the tool's wire name or catalog id; required for tool_call.
	Tool string `json:"tool,omitempty"`
	// Parameters are the call's arguments; absent means {}.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// ParseError is set by the host when the agent's arguments could not
	// be decoded (for example an OpenAI arguments string that is not JSON).
	// Parameters is then absent, and the action must not be dispatched.
	ParseError string `json:"parse_error,omitempty"`

	Preconditions     []Precondition  `json:"preconditions,omitempty"`
	ExpectedEffects   map[string]any  `json:"expected_effects,omitempty"`
	StateDependencies []string        `json:"state_dependencies,omitempty"`
	DependsOn         []int           `json:"depends_on,omitempty"`
	Idempotent        *bool           `json:"idempotent,omitempty"`
	MaxRetries        *int            `json:"max_retries,omitempty"`
	FailureBehavior   string          `json:"failure_behavior,omitempty"`
	TimeoutMS         *int64          `json:"timeout_ms,omitempty"`
	Reversibility     string          `json:"reversibility,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"`
}

// Precondition is a state predicate an action expects to hold before it runs.
// Operator is one of eq (default), neq, exists, not_exists, contains, gt, lt,
// gte, lte.
type Precondition struct {
	Key         string `json:"key"`
	Operator    string `json:"operator,omitempty"`
	Value       any    `json:"value,omitempty"`
	Description string `json:"description,omitempty"`
}

// Tool is a catalog record as the catalog capability returns it.
type Tool struct {
	// ID is the canonical id, namespace:name.
	ID string `json:"id"`
	// Name is the wire name agents call the tool by.
	Name        string   `json:"name"`
	Aliases     []string `json:"aliases,omitempty"`
	Description string   `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the tool's parameters.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// SchemaDigest is the lowercase hex SHA-256 of the canonical encoding of
	// InputSchema (see SPEC.md, "Schema digest").
	SchemaDigest string `json:"schema_digest"`
	// Provenance says where the record came from, such as
	// "mcp_config{github}".
	Provenance string `json:"provenance,omitempty"`
	// Source names the server, extension or plugin that serves the tool.
	Source string `json:"source,omitempty"`
	// Effect is read_only, idempotent_write or non_idempotent.
	Effect string `json:"effect,omitempty"`
	// Hints are the tool's MCP behaviour annotations with the MCP
	// defaults applied (minor 2); absent for a tool whose format has none.
	Hints *ToolHints `json:"hints,omitempty"`
	// PolicyDigest is the lowercase hex SHA-256 over everything that
	// decides policy about the tool: id, schema digest, effect, hints,
	// provenance and source (SPEC.md §8.1; minor 2). A session pin or
	// grant records it; any difference is drift. Compare it as an opaque
	// string.
	PolicyDigest string `json:"policy_digest,omitempty"`
}

// ToolHints are a tool's MCP ToolAnnotations (MCP specification
// 2025-06-18) as the host normalised them: every hint present, with the
// specification's default where the server gave none (readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true), and
// Destructive false, Idempotent true for a read-only tool.
type ToolHints struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

// Capability operations of the catalog capability.
const (
	// OpCatalogGet: request {"name": string}, answer {"found": bool,
	// "tool"?: Tool}. name is matched exactly (case-sensitive) against ids,
	// wire names and aliases.
	OpCatalogGet = "catalog.get"
	// OpCatalogList: request {}, answer {"generation": uint64,
	// "tools": [{"id","name","aliases"?}]}.
	OpCatalogList = "catalog.list"
)

// CapabilityOf returns the capability an operation belongs to: the part of op
// before its first dot.
func CapabilityOf(op string) string {
	for i := 0; i < len(op); i++ {
		if op[i] == '.' {
			return op[:i]
		}
	}
	return op
}

// CatalogGetRequest and CatalogGetAnswer are the messages of OpCatalogGet.
type CatalogGetRequest struct {
	Name string `json:"name"`
	// KnownSchemaDigest (ABI 1.x, optional) is the schema digest of the
	// input schema the gate already holds for this name. When the tool's
	// schema_digest equals it, the host leaves input_schema out of the
	// answer and sets schema_omitted.
	KnownSchemaDigest string `json:"known_schema_digest,omitempty"`
}

type CatalogGetAnswer struct {
	Found bool  `json:"found"`
	Tool  *Tool `json:"tool,omitempty"`
	// SchemaOmitted (optional) says Tool.InputSchema was left out because
	// its digest is the request's known_schema_digest.
	SchemaOmitted bool `json:"schema_omitted,omitempty"`
}

// CatalogListAnswer is the answer of OpCatalogList.
type CatalogListAnswer struct {
	Generation uint64      `json:"generation"`
	Tools      []ToolEntry `json:"tools"`
}

// ToolEntry is the short form of a Tool.
type ToolEntry struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
}

// CallError is the answer of a capability call that failed:
// {"error": {"code": ..., "message": ...}}. Every answer of call is either the
// operation's answer wrapped as {"result": ...} or a CallError.
type CallError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes of a CallError.
const (
	ErrCodeCapabilityDenied = "capability_denied"
	ErrCodeUnknownOperation = "unknown_operation"
	ErrCodeBadRequest       = "bad_request"
	ErrCodeUnavailable      = "unavailable"
)

// CallAnswer is the envelope of every answer of call.
type CallAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CallError      `json:"error,omitempty"`
}

func (e *CallError) Error() string { return e.Code + ": " + e.Message }

// EncodeCallResult returns the envelope {"result": v} of a call that
// succeeded, v encoded by encoding/json; when v does not encode, the
// envelope of an ErrCodeUnavailable CallError saying why. It is how the
// host, and the SDK's test harness standing in for it, write an answer.
func EncodeCallResult(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return EncodeCallError(ErrCodeUnavailable, err.Error())
	}
	return EncodeCallResultJSON(b)
}

// EncodeCallResultJSON returns the envelope {"result": b} of a result
// already encoded as json.Marshal encodes it (one compact JSON value, HTML
// characters escaped): the bytes json.Marshal(CallAnswer{Result: b}) gives,
// without compacting b a second time.
func EncodeCallResultJSON(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(`{"result":}`))
	out = append(out, `{"result":`...)
	out = append(out, b...)
	return append(out, '}')
}

// EncodeCallAnswer returns the envelope of an operation's outcome: the
// result when err is nil (EncodeCallResult); a *CallError in err's chain as
// it is; any other error as ErrCodeUnavailable with its text.
func EncodeCallAnswer(v any, err error) []byte {
	if err == nil {
		return EncodeCallResult(v)
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return EncodeCallError(ce.Code, ce.Message)
	}
	return EncodeCallError(ErrCodeUnavailable, err.Error())
}

// EncodeCallError returns the envelope {"error": {"code": code, "message":
// msg}} of a call that failed; code is one of the ErrCode constants.
func EncodeCallError(code, msg string) []byte {
	out, _ := json.Marshal(CallAnswer{Error: &CallError{Code: code, Message: msg}}) // strings only: cannot fail
	return out
}

// ToolCall is the native shape of a SubjectToolCall: one tool call, checked
// right before it executes. The session it belongs to is in the request's
// Context.Session.
type ToolCall struct {
	// ID is the agent's id for the call, if any.
	ID string `json:"id,omitempty"`
	// Tool is the name the agent called the tool by: a wire name, an
	// alias or a catalog id, exactly as sent (never normalized).
	Tool string `json:"tool"`
	// Parameters are the call's arguments; absent means {}.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// ParseError is set by the host when the agent's arguments could not
	// be decoded; Parameters is then absent and the call must not run.
	ParseError string `json:"parse_error,omitempty"`
}
