package abi

import "encoding/json"

// Verdict is a gate's answer about one subject.
type Verdict string

const (
	// Accepted: the gate has positive evidence that the subject may proceed.
	// It must carry non-empty evidence and no blocking finding.
	Accepted Verdict = "accepted"
	// Rejected: the subject must not proceed. It must carry at least one
	// blocking finding.
	Rejected Verdict = "rejected"
	// Inconclusive: the gate could not tell. The host treats it like a
	// rejection for enforcement; it is never an acceptance.
	Inconclusive Verdict = "inconclusive"
)

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool { return v == Accepted || v == Rejected || v == Inconclusive }

// Severity says whether a finding decides.
type Severity string

const (
	// Blocking findings reject the subject.
	Blocking Severity = "blocking"
	// Advisory findings are reported and never reject.
	Advisory Severity = "advisory"
)

// Tier says how a finding was reached.
type Tier string

const (
	// DecisionProcedure marks an exact check: it cannot be wrong about the
	// subject it was given.
	DecisionProcedure Tier = "decision_procedure"
	// Heuristic marks a guess that may be a false alarm.
	Heuristic Tier = "heuristic"
)

// SubjectKind names what a pipeline checks.
type SubjectKind string

const (
	// SubjectProposal is a whole multi-action plan, checked before its first
	// dispatch. Its JSON shape is Proposal.
	SubjectProposal SubjectKind = "proposal"
	// SubjectToolCall is one tool call, checked right before it executes.
	SubjectToolCall SubjectKind = "tool_call"
	// SubjectMerge is a worktree's file changes, checked before integration.
	SubjectMerge SubjectKind = "merge"
)

// Valid reports whether k is a known subject kind.
func (k SubjectKind) Valid() bool {
	return k == SubjectProposal || k == SubjectToolCall || k == SubjectMerge
}

// Descriptor is what gate_describe returns: who the gate is and what it needs.
type Descriptor struct {
	// ABIVersion is the major the module speaks; it must equal the
	// gate_abi_version export.
	ABIVersion int `json:"abi_version"`
	// Name is the gate's name, [a-z0-9][a-z0-9_.-]*.
	Name string `json:"name"`
	// Version is the gate's own version, free-form (semver recommended).
	Version string `json:"version"`
	// Description is one sentence for operators.
	Description string `json:"description,omitempty"`
	// SubjectKinds lists the subject kinds the gate evaluates; a pipeline
	// may only use the gate for one of them.
	SubjectKinds []SubjectKind `json:"subject_kinds"`
	// Capabilities lists the capabilities the gate may call. The operator
	// grants them per stage; a gate must cope with a denied call.
	Capabilities []string `json:"capabilities,omitempty"`
	// ConfigSchema is the JSON Schema (draft 2020-12) of the stage config.
	// Absent means the gate takes no config and a non-empty one is refused.
	ConfigSchema json.RawMessage `json:"config_schema,omitempty"`
	// ConfigCache says the gate keeps the last ConfigCacheSize distinct
	// configs it received, by config_digest, so that the host may leave
	// config out of a request to the same instance (SPEC.md §5.3). Added
	// in minor 9; the Go SDK sets it.
	ConfigCache bool `json:"config_cache,omitempty"`
}

// Request is the envelope gate_evaluate receives.
type Request struct {
	// ABIVersion is the host's major; MinorVersion its minor.
	ABIVersion   int `json:"abi_version"`
	MinorVersion int `json:"abi_minor"`
	// RunID identifies the pipeline run; Pipeline and Stage name the
	// pipeline and the stage within it.
	RunID    string `json:"run_id"`
	Pipeline string `json:"pipeline"`
	Stage    string `json:"stage"`
	// SubjectKind says how to read Subject.
	SubjectKind SubjectKind `json:"subject_kind"`
	// Subject is the thing to check, in the native shape of its kind.
	Subject json.RawMessage `json:"subject"`
	// Config is the stage config, already valid against the descriptor's
	// ConfigSchema. Absent when the stage has none.
	// Left out, with ConfigDigest sent, when the gate declares
	// config_cache and this instance received it before (minor 9).
	Config json.RawMessage `json:"config,omitempty"`
	// ConfigDigest is ConfigDigestPrefix and the SHA-256 of Config's bytes
	// as sent, whenever the stage has a config. Added in minor 9.
	ConfigDigest string `json:"config_digest,omitempty"`
	// Context is what the host knows about the run.
	Context Context `json:"context"`
}

// Context is the run's context as the host sees it.
type Context struct {
	// CatalogGeneration is the generation of the catalog snapshot pinned
	// for the whole run; every catalog call answers from that snapshot.
	CatalogGeneration uint64 `json:"catalog_generation"`
	// Session is the agent session the subject belongs to, if known.
	Session string `json:"session,omitempty"`
	// SessionDigest names the content of the run's session set, as the
	// host read it when the run started: SessionDigestPrefix and a
	// SHA-256 in lowercase hex. Sent to a stage granted the session
	// capability when the host holds the session; absent otherwise.
	// session.get answers are a function of it and the tool asked about,
	// so a gate may keep them by it (SPEC.md §7.9). Added in minor 10.
	SessionDigest string `json:"session_digest,omitempty"`
	// QueryDigest names the content of the domain catalogs the host
	// answers query.capability from: QueryDigestPrefix and a SHA-256 in
	// lowercase hex. Sent to a stage granted the query capability when
	// the host has domains; absent otherwise. query.capability answers
	// are a function of it, the domain and the name asked about, so a
	// gate may keep them by it (SPEC.md §7.12). Added in minor 11.
	QueryDigest string `json:"query_digest,omitempty"`
	// Now is the run's clock, RFC 3339 with nanoseconds, in UTC. Gates use
	// it instead of the guest clock, which is not real time.
	Now string `json:"now"`
	// Capabilities are the capabilities granted to this stage.
	Capabilities []string `json:"capabilities,omitempty"`
	// Confirmation is a person's confirmation of the tool call being
	// checked, attached by the host; absent when there is none.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// Principal is who asked for the check, as the host's front end
	// authenticated the caller; absent when the caller is anonymous (no
	// authentication configured, or a library caller that set none).
	// Added in minor 6.
	Principal *Principal `json:"principal,omitempty"`
}

// Principal methods: how a caller was authenticated.
const (
	// MethodOIDC: an OpenID Connect / JWT bearer token, verified against
	// the issuer's published keys.
	MethodOIDC = "oidc"
	// MethodMTLS: a TLS client certificate, verified against the
	// operator's CA bundle.
	MethodMTLS = "mtls"
	// MethodToken: one of the operator's static bearer tokens.
	MethodToken = "token"
)

// MaxPrincipalBytes caps a Principal's JSON encoding: the host refuses a
// larger one, and authenticators refuse a credential whose principal would
// exceed it.
const MaxPrincipalBytes = 4096

// Principal is an authenticated caller (SPEC §5.3).
type Principal struct {
	// Issuer names who vouches for the caller: the token issuer's URL
	// (oidc), the certificate's issuer DN (mtls) or the token source's
	// configured name (token).
	Issuer string `json:"issuer,omitempty"`
	// Subject is the caller within Issuer: the token's sub claim (oidc),
	// the certificate's subject DN (mtls) or the token line's name
	// (token). Never empty.
	Subject string `json:"subject"`
	// Method is MethodOIDC, MethodMTLS or MethodToken.
	Method string `json:"method"`
	// Claims are the operator's configured subset of the caller's claims
	// (oidc), or the certificate's SANs (mtls: "uris", "dns_names",
	// "emails", each an array of strings); absent when none.
	Claims map[string]any `json:"claims,omitempty"`
}

// Response is what gate_evaluate returns.
type Response struct {
	Verdict Verdict `json:"verdict"`
	// Basis names the ground of an acceptance, such as "verified" or
	// "waived"; free-form snake_case.
	Basis string `json:"basis,omitempty"`
	// Reason is a snake_case code saying why a verdict is inconclusive.
	Reason string `json:"reason,omitempty"`
	// Findings are all findings, blocking and advisory, in a stable order.
	Findings []Finding `json:"findings,omitempty"`
	// Evidence records what the gate checked. Required, non-empty, for
	// Accepted: acceptance needs positive evidence.
	Evidence map[string]any `json:"evidence,omitempty"`
}

// Finding is one observation a gate reports.
type Finding struct {
	// Code is a stable snake_case identifier, such as "unknown_tool".
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Tier     Tier     `json:"tier,omitempty"`
	// Message is for people; it never echoes secret tool input.
	Message string `json:"message"`
	// ActionIndex and ActionID name the action of a proposal the finding
	// is about.
	ActionIndex *int   `json:"action_index,omitempty"`
	ActionID    string `json:"action_id,omitempty"`
	// Path is a JSON Pointer (RFC 6901) into the action's parameters.
	Path string `json:"path,omitempty"`
	// Keyword is the JSON Schema keyword that failed, for schema findings.
	Keyword string `json:"keyword,omitempty"`
	// Suggestion is a likely intended value, such as the closest tool name.
	Suggestion string `json:"suggestion,omitempty"`
	// Details holds gate-specific structured data.
	Details map[string]any `json:"details,omitempty"`
}

// Index returns a pointer to i, for Finding.ActionIndex.
func Index(i int) *int { return &i }
