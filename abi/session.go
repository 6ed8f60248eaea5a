package abi

// Capability operations of the session capability (SPEC.md §7.9). A session
// is an agent session: the host keeps, per session, the tools pinned when the
// session was built (core) and the tools activated since (exact grants).
// Gates only read sessions; the host alone changes them.
const (
	// OpSessionGet: request {"tool": string}, a canonical tool id; answer
	// SessionGetAnswer about the run's own session (Context.Session). A
	// gate can read no other session.
	OpSessionGet = "session.get"
)

// SessionGetRequest is the request of OpSessionGet.
type SessionGetRequest struct {
	// Tool is the canonical id (namespace:name) to look up.
	Tool string `json:"tool"`
}

// SessionGetAnswer is the answer of OpSessionGet: what the run's session
// holds for one tool, as read once for the whole run.
type SessionGetAnswer struct {
	// Session is the run's session id; "" when the run has none.
	Session string `json:"session"`
	// Known is false when the run has no session or the host's session
	// store does not hold it; Core and Activation are then absent.
	Known bool `json:"known"`
	// Version counts the changes made to the session's tool set.
	Version uint64 `json:"version"`
	// Core is the tool's pin when the tool belongs to the session's core
	// set.
	Core *SessionPin `json:"core,omitempty"`
	// Activation is the tool's exact activation grant, when it has one.
	Activation *SessionActivation `json:"activation,omitempty"`
}

// SessionPin is what a session pinned of a tool's catalog record: the schema
// digest, the policy digest and the provenance it trusted. PolicyDigest
// (minor 2) is absent from a pin made before the host recorded it; a gate
// must then treat the pin as drifted (SPEC.md §7.9).
type SessionPin struct {
	SchemaDigest string `json:"schema_digest"`
	PolicyDigest string `json:"policy_digest,omitempty"`
	Provenance   string `json:"provenance"`
}

// SessionActivation is an exact activation grant and the provenance pinned
// with it.
type SessionActivation struct {
	Grant      SessionGrant `json:"grant"`
	Provenance string       `json:"provenance"`
}

// SessionGrant covers exactly one (session, tool, schema digest, policy
// digest). The catalog generation records when it was granted; it is not
// part of what the grant covers. PolicyDigest (minor 2) is absent from a
// grant made before the host recorded it; a gate must then treat the grant
// as drifted (SPEC.md §7.9).
type SessionGrant struct {
	Session           string `json:"session"`
	Tool              string `json:"tool"`
	CatalogGeneration uint64 `json:"catalog_generation"`
	SchemaDigest      string `json:"schema_digest"`
	PolicyDigest      string `json:"policy_digest,omitempty"`
}

// Confirmation is a person's confirmation of one tool call, attached by the
// host (never taken from the agent's call) in Context.Confirmation.
type Confirmation struct {
	// Tool is the canonical id of the tool the confirmation is for.
	Tool string `json:"tool"`
	// Token is an opaque, non-empty token naming the confirmation.
	Token string `json:"token"`
}
