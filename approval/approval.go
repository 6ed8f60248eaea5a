// Package approval is a person's approval of one tool call, the one rule
// both front ends apply: `gatehost serve` mints approvals through POST
// /v1/approvals (an approver token) and the agent presents one in
// X-Gatehost-Confirmation; `gatehost mcp` mints one when the person says
// yes to an elicitation and presents it itself. Either way the host
// resolves the presented id with the Confirmer of this package (Approvals),
// against a Store that may be shared: memory (one process), a file (the
// gatehost processes of one machine) or PostgreSQL (a fleet).
//
// The rule (docs/RATIONALE.md "Approvals"):
//
//   - An Approval binds a Binding: the pipeline, the session, the caller
//     (CallerOf the run's principal), the tool's canonical id and schema
//     digest in the run's pinned catalog snapshot, and the SHA-256 of the
//     native subject exactly as the host records it (host.NativeSubject;
//     the decision record's subject_sha256).
//   - It is usable while now < ExpiresAt (Usable): at ExpiresAt it is
//     expired.
//   - It is used at most once, by the first presentation that names it,
//     whatever that presentation is for: a presentation for another call
//     (any Code*Mismatch, or a tool not in the snapshot) burns it. Only an
//     exact match confirms.
//   - Every presentation is recorded (KindUsed or KindRefused, with a Code
//     as the record's reason) under the run's id before the run; a failed
//     record means the run does not happen.
//   - At most Options.MaxOutstanding approvals are held unexpired at once,
//     used or not (ErrFull).
package approval

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// TTLs: how long an approval stays usable. One setting (config
// approvals.ttl) for both front ends.
const (
	// DefaultTTL is long enough for a person to approve and the agent to
	// retry, short enough that a stale approval is gone.
	DefaultTTL = 5 * time.Minute
	// MinTTL and MaxTTL bound a configured TTL (CheckTTL).
	MinTTL = time.Second
	MaxTTL = 24 * time.Hour
)

// DefaultMaxOutstanding caps the approvals a store holds unexpired at
// once, used or not, so that a runaway approver cannot exhaust memory, a
// file or a table.
const DefaultMaxOutstanding = 10000

// Event-log record kinds. Their Data is a Record.
const (
	KindMinted  = "approval_minted"
	KindUsed    = "approval_used"
	KindRefused = "approval_refused"
)

// Codes: the reason of an approval_refused record, stable and
// snake_case. The first group is why a presented approval confirms
// nothing; the second why a person's request for approval gave none
// (gatehost mcp's elicitation).
const (
	CodeUnknown              = "approval_unknown" // never minted, malformed, or gone
	CodeExpired              = "approval_expired"
	CodeUsed                 = "approval_used"
	CodePipelineMismatch     = "approval_pipeline_mismatch"
	CodeSessionMismatch      = "approval_session_mismatch"
	CodeCallerMismatch       = "approval_caller_mismatch"
	CodeSubjectMismatch      = "approval_subject_mismatch"
	CodeToolMismatch         = "approval_tool_mismatch"
	CodeSchemaDigestMismatch = "approval_schema_digest_mismatch"
	CodeToolNotInCatalog     = "approval_tool_not_in_catalog"

	CodeDeclined    = "approval_declined"     // the person said no
	CodeCancelled   = "approval_cancelled"    // the person dismissed the request
	CodeTimeout     = "approval_timeout"      // no answer within the TTL
	CodeNotAnswered = "approval_not_answered" // the client failed to answer
	CodeNotShown    = "approval_not_shown"    // the call could not be shown whole
)

// Errors.
var (
	// ErrFull: MaxOutstanding approvals are held; none was minted.
	ErrFull = errors.New("approval: too many approvals outstanding")
	// ErrStore: the store failed (unreachable, unreadable, invalid); what
	// was asked did not happen, or a take's outcome is unknown and the
	// run must not happen.
	ErrStore = errors.New("approval: store")
	// ErrNotRecorded: the event log refused a record; a mint made no
	// usable approval, a presentation confirms no run.
	ErrNotRecorded = errors.New("approval: not recorded")
)

// Binding is the one call an approval is for.
type Binding struct {
	Pipeline string `json:"pipeline"`
	Session  string `json:"session,omitempty"`
	// CallerKey is who makes the call (CallerOf its principal):
	// principals sharing a session never take each other's approvals.
	// Empty in what an earlier version stored: such a binding matches no
	// call.
	CallerKey string `json:"caller_key,omitempty"`
	// Tool is the tool's canonical catalog id, SchemaDigest its schema
	// digest in the catalog snapshot.
	Tool         string `json:"tool"`
	SchemaDigest string `json:"schema_digest"`
	// SubjectSHA256 is the lowercase hex SHA-256 of the native subject
	// as the host records it (host.ConfirmationRequest.SubjectSHA256).
	SubjectSHA256 string `json:"subject_sha256"`
}

// Mismatch returns the code of the first field in which b, presented,
// differs from the approved a, or "" when it is the same call.
func (a Binding) Mismatch(b Binding) string {
	switch {
	case a.Pipeline != b.Pipeline:
		return CodePipelineMismatch
	case a.Session != b.Session:
		return CodeSessionMismatch
	case a.CallerKey == "" || a.CallerKey != b.CallerKey:
		return CodeCallerMismatch
	case a.SubjectSHA256 != b.SubjectSHA256:
		return CodeSubjectMismatch
	case a.Tool != b.Tool:
		return CodeToolMismatch
	case a.SchemaDigest != b.SchemaDigest:
		return CodeSchemaDigestMismatch
	}
	return ""
}

// CallerOf is the Binding.CallerKey of a call principal p makes: its method,
// issuer and subject as a JSON array, unambiguous whatever they hold, or
// "anonymous" for a caller the front end could not name (no auth).
func CallerOf(p *abi.Principal) string {
	if p == nil {
		return "anonymous"
	}
	b, _ := json.Marshal([]string{p.Method, p.Issuer, p.Subject}) // strings always marshal
	return string(b)
}

// Approval is a person's yes to one call, as minted.
type Approval struct {
	ID string `json:"approval_id"`
	Binding
	ExpiresAt time.Time `json:"expires_at"`
	// Approver is who approved: the approver token's name (serve), or
	// ApproverMCPClient (the MCP gateway's elicitation).
	Approver string `json:"approver,omitempty"`
	// ApprovedBy is the approver's principal, when an approver signed in
	// to decide (Desk.Decide); Request the request they decided.
	ApprovedBy *abi.Principal `json:"approved_by,omitempty"`
	Request    string         `json:"request_id,omitempty"`
}

// ApproverMCPClient is the Approver of an approval given through the MCP
// client's elicitation: the person at the client, whom the gateway cannot
// name.
const ApproverMCPClient = "mcp-client"

// Usable reports whether a is unexpired at now: now < ExpiresAt. At its
// expiry an approval is no longer usable, so a TTL of d means "usable for
// less than d", never a moment more, on every store and front end.
func (a Approval) Usable(now time.Time) bool { return now.Before(a.ExpiresAt) }

// Check validates an approval before it is stored.
func (a Approval) Check() error {
	switch {
	case !ValidID(a.ID):
		return fmt.Errorf("approval: id %q: want ap- and 32 lowercase hex digits", a.ID)
	case a.Pipeline == "":
		return errors.New("approval: no pipeline")
	case a.Tool == "":
		return errors.New("approval: no tool")
	case !validSHA256(a.SubjectSHA256):
		return fmt.Errorf("approval: subject_sha256 %q: want 64 lowercase hex digits", a.SubjectSHA256)
	case a.ExpiresAt.IsZero():
		return errors.New("approval: no expiry")
	}
	return nil
}

var (
	idRE     = regexp.MustCompile(`^ap-[0-9a-f]{32}$`)
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidID reports whether s has the form of an approval id (NewID). A
// presented token of another form is no approval: it is refused as
// CodeUnknown without a store lookup, and never copied into a record.
func ValidID(s string) bool { return idRE.MatchString(s) }

func validSHA256(s string) bool { return sha256RE.MatchString(s) }

// NewID returns a new random approval id: "ap-" and 128 random bits in
// hex. Knowing it is what lets a caller present the approval.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ap-" + hex.EncodeToString(b[:])
}

// CheckTTL checks a configured TTL: MinTTL to MaxTTL.
func CheckTTL(d time.Duration) error {
	if d < MinTTL || d > MaxTTL {
		return fmt.Errorf("%s: want %s to %s", d, MinTTL, MaxTTL)
	}
	return nil
}
