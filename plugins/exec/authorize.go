// Package exec is the exec gate: it authorizes one tool call right before it
// runs, against the run's pinned catalog snapshot and the agent session's
// tool set (docs/GATES.md#exec, after the Synaps CLI's ExecutionGate).
//
// Authorize applies eight checks in order; the first that fails decides,
// with one stable code:
//
//  1. the wire name resolves exactly (case-sensitive, registered names and
//     aliases only) to one tool → else unknown_tool;
//  2. the tool's id is cataloged → else not_cataloged (a name shaped like a
//     canonical id that the catalog does not hold);
//  3. the session holds a core pin or an exact grant for (session, tool,
//     current schema digest) → else schema_digest_mismatch when a pin or
//     grant exists with another digest, not_activated when none does. The
//     catalog generation is never compared: an unrelated catalog change
//     leaves a live session's calls alone;
//  4. what that pin or grant pinned besides the schema still holds: the
//     provenance pinned with it equals the record's → else
//     source_provenance_mismatch (the coherent imposter: same id, same
//     schema, another source); and its policy digest equals the record's
//     → else tool_drifted (the hints, effect, source or trust changed
//     since the grant, as in an MCP "rug pull"; or the pin predates
//     policy digests, or the host sent none). A pin or grant that matches
//     in full authorizes even when the other one has drifted;
//  5. the record is trusted: unverified provenance or no source →
//     untrusted_source; a provenance whose server, extension or plugin is
//     not the record's source or id namespace → source_provenance_mismatch;
//  6. with principals rules configured, the first rule matching the run's
//     principal (the authenticated caller; none is anonymous) allows the
//     tool → else principal_not_allowed, naming the rule (or saying none
//     matched). Without rules this check passes;
//  7. the confirmation policy (Config) → confirmation_required unless the
//     host attached a confirmation for this very tool;
//  8. authorized, with basis core or exact.
//
// Authorize is a pure function of the call, the catalog and session views
// and the config; it changes nothing. Messages carry metadata only, never
// the call's arguments, and echo the wire name cut to 128 bytes.
package exec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/runecut"
)

// Denial codes, in check order.
const (
	CodeUnknownTool              = "unknown_tool"
	CodeNotCataloged             = "not_cataloged"
	CodeNotActivated             = "not_activated"
	CodeSchemaDigestMismatch     = "schema_digest_mismatch"
	CodeSourceProvenanceMismatch = "source_provenance_mismatch"
	CodeToolDrifted              = "tool_drifted"
	CodeUntrustedSource          = "untrusted_source"
	CodeConfirmationRequired     = abi.CodeConfirmationRequired
	// CodePrincipalNotAllowed (check 6) is in principals.go.
)

// Bases of an authorization.
const (
	BasisCore  = "core"
	BasisExact = "exact"
)

// Effect classes (abi's).
const (
	EffectReadOnly        = abi.EffectReadOnly
	EffectIdempotentWrite = abi.EffectIdempotentWrite
	EffectNonIdempotent   = abi.EffectNonIdempotent
)

// MaxEcho is how much of a wire name a message repeats.
const MaxEcho = 128

// Catalog is the run's pinned catalog snapshot. Get matches name exactly
// against ids, wire names and aliases. An error means the catalog could not
// be read (the gate is then inconclusive).
type Catalog interface {
	Get(name string) (tool abi.Tool, found bool, err error)
}

// Sessions is the run's session as the host reads it. Get answers for one
// canonical tool id.
type Sessions interface {
	Get(tool string) (abi.SessionGetAnswer, error)
}

// Config is the gate's policy. Principals are check 6's rules: none means
// every caller may call every tool (the check passes). The rest is the
// side-effect policy of check 7: a tool needs a confirmation when its
// effect is in ConfirmEffects or its id in ConfirmTools, and its id is not
// in ExemptTools. An effect outside the three classes counts as
// non_idempotent.
type Config struct {
	ConfirmEffects []string        `json:"confirm_effects"`
	ConfirmTools   []string        `json:"confirm_tools"`
	ExemptTools    []string        `json:"exempt_tools"`
	Principals     []PrincipalRule `json:"principals,omitempty"`
}

// DefaultConfig confirms non_idempotent tools: the class a tool gets when
// nothing better is known about it.
func DefaultConfig() Config { return Config{ConfirmEffects: []string{EffectNonIdempotent}} }

// Call is what is being authorized.
type Call struct {
	// Tool is the wire name exactly as the agent sent it.
	Tool string
	// Session is the run's session; "" for none.
	Session string
	// Confirmation is the host's confirmation of this call, if any.
	Confirmation *abi.Confirmation
	// Principal is the authenticated caller; nil is anonymous.
	Principal *abi.Principal
}

// Outcome is Authorize's answer.
type Outcome struct {
	// Allowed is true only when all eight checks passed.
	Allowed bool
	// Check is the number (1-8) of the check that decided; 8 when allowed.
	Check int
	// Code is the denial code; "" when allowed.
	Code string
	// Message explains a denial with metadata only.
	Message string
	// Tool is the resolved record, when check 1 passed.
	Tool *abi.Tool
	// Basis is BasisCore or BasisExact when allowed.
	Basis string
	// GrantGeneration is the catalog generation an exact grant records.
	GrantGeneration uint64
	// Rule labels the principals rule that decided check 6 ("" when no
	// rules are configured, or none matched).
	Rule string
}

// ReadError is Authorize's error: the catalog or the session could not be
// read, so nothing can be decided.
type ReadError struct {
	What string // "catalog" or "session"
	Err  error
}

func (e *ReadError) Error() string { return "exec: " + e.What + ": " + e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }

// Authorize runs the eight checks. It returns an error only when the catalog
// or the session could not be read; a denial is an Outcome.
func Authorize(c Call, cat Catalog, sess Sessions, cfg Config) (Outcome, error) {
	wire := echo(c.Tool)
	deny := func(check int, code, format string, args ...any) (Outcome, error) {
		return Outcome{Check: check, Code: code, Message: fmt.Sprintf(format, args...)}, nil
	}

	// 1. Resolve.
	t, found, err := cat.Get(c.Tool)
	if err != nil {
		return Outcome{}, &ReadError{What: "catalog", Err: err}
	}
	if !found {
		if abi.IsToolIDShaped(c.Tool) {
			return deny(2, CodeNotCataloged, "tool id %q is not in the catalog", wire)
		}
		return deny(1, CodeUnknownTool, "no tool has the exact name %q", wire)
	}
	if t.ID != c.Tool && t.Name != c.Tool && !slices.Contains(t.Aliases, c.Tool) {
		return deny(1, CodeUnknownTool, "the catalog answered %q with a tool that does not carry that name", wire)
	}
	// 2. Cataloged identity.
	if !abi.IsToolIDShaped(t.ID) {
		return deny(2, CodeNotCataloged, "%q resolves to %q, which is not a canonical tool id", wire, echo(t.ID))
	}
	out := Outcome{Tool: &t}
	denyT := func(check int, code, format string, args ...any) (Outcome, error) {
		out.Check, out.Code, out.Message = check, code, fmt.Sprintf(format, args...)
		return out, nil
	}

	// 3. Core pin or exact grant for this session, tool and digest.
	a, err := sess.Get(t.ID)
	if err != nil {
		return Outcome{}, &ReadError{What: "session", Err: err}
	}
	if a.Session != c.Session {
		return Outcome{}, &ReadError{What: "session", Err: fmt.Errorf("the host answered for session %q, the run is in %q", echo(a.Session), echo(c.Session))}
	}
	if c.Session == "" || !a.Known {
		return denyT(3, CodeNotActivated, "%s is not activated: the call belongs to no known session", t.ID)
	}
	// The grant is tried before the core pin; either authorizes when it
	// matches the record in full.
	type pinned struct {
		basis                string
		schema, policy, prov string
		gen                  uint64
	}
	var pins []pinned
	if act := a.Activation; act != nil && act.Grant.Session == c.Session && act.Grant.Tool == t.ID {
		g := act.Grant
		pins = append(pins, pinned{BasisExact, g.SchemaDigest, g.PolicyDigest, act.Provenance, g.CatalogGeneration})
	}
	if p := a.Core; p != nil {
		pins = append(pins, pinned{BasisCore, p.SchemaDigest, p.PolicyDigest, p.Provenance, 0})
	}
	var match, sameSchema *pinned
	for i := range pins {
		p := &pins[i]
		if p.schema != t.SchemaDigest {
			continue
		}
		if sameSchema == nil {
			sameSchema = p
		}
		if p.prov == t.Provenance && p.policy != "" && p.policy == t.PolicyDigest {
			match = p
			break
		}
	}
	switch {
	case match != nil:
	case sameSchema == nil && len(pins) > 0:
		return denyT(3, CodeSchemaDigestMismatch, "%s: the schema digest the session pinned is not the catalog's current one", t.ID)
	case sameSchema == nil:
		return denyT(3, CodeNotActivated, "%s is not activated in this session", t.ID)

	// 4. What the session pinned besides the schema.
	case sameSchema.prov != t.Provenance:
		return denyT(4, CodeSourceProvenanceMismatch, "%s: provenance is %q, the session pinned %q", t.ID, echo(t.Provenance), echo(sameSchema.prov))
	case t.PolicyDigest == "":
		return denyT(4, CodeToolDrifted, "%s: the catalog record carries no policy digest, so nothing shows it is the tool the session granted", t.ID)
	case sameSchema.policy == "":
		return denyT(4, CodeToolDrifted, "%s: the session's %s pin predates policy digests; grant the tool again", t.ID, sameSchema.basis)
	default:
		return denyT(4, CodeToolDrifted, "%s: the tool's hints, effect, source or trust changed since the session pinned it; grant it again", t.ID)
	}
	basis, gen := match.basis, match.gen

	// 5. Source trust.
	kind, origin, _ := abi.ParseProvenance(t.Provenance) // malformed: kind ""
	ns, _, _ := strings.Cut(t.ID, ":")
	switch {
	case kind == abi.ProvenanceUnverified || kind == "":
		return denyT(5, CodeUntrustedSource, "%s: provenance %q is not trusted", t.ID, echo(t.Provenance))
	case kind == abi.ProvenanceBuiltin:
		if ns != abi.NamespaceBuiltin || (t.Source != "" && t.Source != abi.NamespaceBuiltin) {
			return denyT(5, CodeSourceProvenanceMismatch, "%s: builtin_runtime provenance with source %q", t.ID, echo(t.Source))
		}
	case t.Source == "":
		return denyT(5, CodeUntrustedSource, "%s: the record names no source", t.ID)
	case t.Source != origin || ns != abi.ProvenanceNamespace(kind, origin):
		return denyT(5, CodeSourceProvenanceMismatch, "%s: provenance %q does not name source %q", t.ID, echo(t.Provenance), echo(t.Source))
	}

	// 6. Who is calling.
	if len(cfg.Principals) > 0 {
		i, ok, msg := checkPrincipal(cfg.Principals, c.Principal, t)
		if i >= 0 {
			out.Rule = cfg.Principals[i].label(i)
		}
		if !ok {
			return denyT(6, CodePrincipalNotAllowed, "%s", msg)
		}
	}

	// 7. Side-effect policy.
	if needsConfirmation(t, cfg) {
		cf := c.Confirmation
		if cf == nil || cf.Token == "" || cf.Tool != t.ID {
			return denyT(7, CodeConfirmationRequired, "%s (effect %s) needs a person's confirmation of this call", t.ID, effectOf(t))
		}
	}

	// 8. Authorized.
	out.Allowed, out.Check, out.Basis, out.GrantGeneration = true, 8, basis, gen
	return out, nil
}

func effectOf(t abi.Tool) string {
	switch t.Effect {
	case EffectReadOnly, EffectIdempotentWrite, EffectNonIdempotent:
		return t.Effect
	}
	return EffectNonIdempotent
}

func needsConfirmation(t abi.Tool, cfg Config) bool {
	if slices.Contains(cfg.ExemptTools, t.ID) {
		return false
	}
	return slices.Contains(cfg.ConfirmEffects, effectOf(t)) || slices.Contains(cfg.ConfirmTools, t.ID)
}

// echo cuts a name repeated in a message to MaxEcho bytes, at a rune
// boundary, and marks the cut.
func echo(s string) string { return runecut.Cut(s, MaxEcho, "...") }
