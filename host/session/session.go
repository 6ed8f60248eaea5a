// Package session keeps agent sessions' tool sets for the exec gate: the
// tools pinned when a session was built (core) and the exact activation
// grants made since.
//
// A grant covers exactly (session, tool, schema digest, policy digest) and
// records the catalog snapshot it was made on (generation and digest);
// with it the session pins
// the tool's provenance. The policy digest (catalog.PolicyDigestOf) covers
// everything that decides policy about the tool: schema, hints and effect,
// provenance and source. The exec gate lets a call run only when the tool's
// current catalog record still matches what the session pinned: a change of
// the catalog's generation alone, by an unrelated tool, never revokes
// anything, and any change to the tool's policy digest does.
//
// Sets live in a Store (MemStore in memory, FileStore as a JSON file that
// survives restarts). The operations here (Create, Activate, ActivateMany,
// Revoke, Rebuild) are read-modify-write transactions on one store entry;
// gates never change sessions, they read them through the host's session
// capability.
//
// Errors are *Error values wrapping one of the Err* sentinels; Error.Code is
// the stable snake_case code of the exec gate (docs/GATES.md#exec) where one applies.
package session

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/runecut"
)

// MaxIDBytes caps a session id.
const MaxIDBytes = 128

// Pin is what a session pinned of a tool's catalog record. PolicyDigest is
// empty in a pin written before policy digests were recorded: such a pin
// matches no record (DriftUnpinned) until the tool is granted again.
type Pin struct {
	SchemaDigest string `json:"schema_digest"`
	PolicyDigest string `json:"policy_digest,omitempty"`
	Provenance   string `json:"provenance"`
}

// pinOf is what a session pins of t.
func pinOf(t catalog.Tool) Pin {
	return Pin{SchemaDigest: t.SchemaDigest, PolicyDigest: t.PolicyDigest, Provenance: t.Provenance}
}

// Drift kinds: what differs between a pin and a tool's current record.
const (
	DriftSchema     = "schema_digest" // the input schema changed
	DriftProvenance = "provenance"    // the tool comes from elsewhere
	// DriftPolicy: the policy digest changed, so the schema, hints,
	// effect, provenance or source changed.
	DriftPolicy = "policy_digest"
	// DriftUnpinned: the pin predates policy digests, so nothing says the
	// hints, effect or source are what was granted; grant the tool again.
	DriftUnpinned = "policy_unpinned"
)

// Drift lists what differs between the pin and t's current record, in the
// order DriftSchema, DriftProvenance, then DriftPolicy or DriftUnpinned;
// empty when the pin still holds. It is the one comparison Rebuild,
// ActivateMany and `gatehost session show` make; the exec gate makes the
// same one on the pin's wire form (abi.SessionPin, abi.SessionGrant).
func (p Pin) Drift(t catalog.Tool) []string {
	var d []string
	if p.SchemaDigest != t.SchemaDigest {
		d = append(d, DriftSchema)
	}
	if p.Provenance != t.Provenance {
		d = append(d, DriftProvenance)
	}
	switch {
	case p.PolicyDigest == "":
		d = append(d, DriftUnpinned)
	case p.PolicyDigest != t.PolicyDigest:
		d = append(d, DriftPolicy)
	}
	return d
}

// Grant is an exact activation grant. It covers one (Session, Tool,
// SchemaDigest, PolicyDigest); CatalogGeneration and CatalogDigest record
// the catalog snapshot it was made on or last carried forward to by
// Rebuild. The generation is the granting process's own counter; the
// digest (catalog.Snapshot.Digest) names the snapshot's content, the same
// on every replica. Neither decides validity: a grant holds exactly while
// the tool's schema digest, policy digest and provenance do (Pin.Drift),
// so a grant made on one replica holds on another. PolicyDigest is empty
// in a grant written before policy digests were recorded (see Pin), and
// CatalogDigest in one written before snapshots were named.
type Grant struct {
	Session           string `json:"session"`
	Tool              string `json:"tool"`
	CatalogGeneration uint64 `json:"catalog_generation"`
	CatalogDigest     string `json:"catalog_digest,omitempty"`
	SchemaDigest      string `json:"schema_digest"`
	PolicyDigest      string `json:"policy_digest,omitempty"`
}

// Activation is a grant with the provenance pinned when it was made.
type Activation struct {
	Grant      Grant  `json:"grant"`
	Provenance string `json:"provenance"`
}

// Pin returns what the activation pinned, in a Pin's shape.
func (a Activation) Pin() Pin {
	return Pin{SchemaDigest: a.Grant.SchemaDigest, PolicyDigest: a.Grant.PolicyDigest, Provenance: a.Provenance}
}

// Set is one session's tool set. Values handed out by this package and by
// stores are copies: changing one changes nothing stored.
type Set struct {
	// ID is the session id: 1 to MaxIDBytes bytes of [A-Za-z0-9_.:-].
	ID string `json:"id"`
	// Version is 0 when the set is created and rises by exactly 1 with each
	// operation that changes it.
	Version uint64 `json:"version"`
	// Core maps a canonical tool id to its pin.
	Core map[string]Pin `json:"core"`
	// Activated maps a canonical tool id to its activation.
	Activated map[string]Activation `json:"activated"`
}

// Clone returns a deep copy of s.
func (s *Set) Clone() *Set {
	if s == nil {
		return nil
	}
	c := *s
	c.Core = maps.Clone(s.Core)
	c.Activated = maps.Clone(s.Activated)
	if c.Core == nil {
		c.Core = map[string]Pin{}
	}
	if c.Activated == nil {
		c.Activated = map[string]Activation{}
	}
	return &c
}

// Lookup answers the session capability's question about one tool id, in
// the ABI's shape. A nil set is a session the store does not hold.
func (s *Set) Lookup(session, tool string) abi.SessionGetAnswer {
	a := abi.SessionGetAnswer{Session: session}
	if s == nil {
		return a
	}
	a.Known, a.Version = true, s.Version
	if p, ok := s.Core[tool]; ok {
		a.Core = &abi.SessionPin{SchemaDigest: p.SchemaDigest, PolicyDigest: p.PolicyDigest, Provenance: p.Provenance}
	}
	if act, ok := s.Activated[tool]; ok {
		g := act.Grant
		a.Activation = &abi.SessionActivation{
			Grant: abi.SessionGrant{Session: g.Session, Tool: g.Tool, CatalogGeneration: g.CatalogGeneration,
				SchemaDigest: g.SchemaDigest, PolicyDigest: g.PolicyDigest},
			Provenance: act.Provenance,
		}
	}
	return a
}

// Sentinel errors. Each *Error wraps one.
var (
	// ErrInvalidSession: a session id is empty, too long or has a byte
	// outside [A-Za-z0-9_.:-].
	ErrInvalidSession = errors.New("invalid session id")
	// ErrUnknownSession: the store holds no such session.
	ErrUnknownSession = errors.New("unknown session")
	// ErrSessionExists: Create named a session the store already holds.
	ErrSessionExists = errors.New("session exists")
	// ErrUnknownTool (code unknown_tool): a name resolves to no tool of
	// the catalog snapshot, exactly (case-sensitive).
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUntrustedSource (code untrusted_source): the tool's provenance is
	// unverified, so no session may pin it.
	ErrUntrustedSource = errors.New("untrusted source")
	// ErrAlreadyActive (code already_active): the tool is already core, or
	// activated, with a pin that has not drifted (same schema digest,
	// provenance and policy digest).
	ErrAlreadyActive = errors.New("tool already active")
	// ErrDuplicateTool: one request names the same tool twice.
	ErrDuplicateTool = errors.New("tool named twice")
	// ErrNotActivated (code not_activated): Revoke named a tool the
	// session has not activated.
	ErrNotActivated = errors.New("tool not activated")
	// ErrCoreTool (code core_tool): Revoke named a core tool; core pins
	// last for the session's life.
	ErrCoreTool = errors.New("core tool cannot be revoked")
	// ErrVersionOverflow: the set's version is at its maximum.
	ErrVersionOverflow = errors.New("session version overflow")
	// ErrStore: the store could not read or write; wraps the cause.
	ErrStore = errors.New("session store failure")
)

var codes = map[error]string{
	ErrInvalidSession:  "invalid_session",
	ErrUnknownSession:  "unknown_session",
	ErrSessionExists:   "session_exists",
	ErrUnknownTool:     "unknown_tool",
	ErrUntrustedSource: "untrusted_source",
	ErrAlreadyActive:   "already_active",
	ErrDuplicateTool:   "duplicate_tool",
	ErrNotActivated:    "not_activated",
	ErrCoreTool:        "core_tool",
	ErrVersionOverflow: "version_overflow",
	ErrStore:           "store_failure",
}

// Error is an operation that failed. It names tools, never arguments, and
// cuts names to 128 bytes.
type Error struct {
	Op      string // create, activate, revoke, rebuild, load, save
	Session string
	Tool    string // the name as given, cut; "" when not about one tool
	Code    string // stable snake_case code of Err's sentinel
	Err     error
}

func (e *Error) Error() string {
	s := "session " + e.Op
	if e.Session != "" {
		s += fmt.Sprintf(" %q", e.Session)
	}
	if e.Tool != "" {
		s += fmt.Sprintf(": tool %q", e.Tool)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func newErr(op, session, tool string, sentinel error, format string, args ...any) *Error {
	err := sentinel
	if format != "" {
		err = fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
	}
	return &Error{Op: op, Session: cut(session), Tool: cut(tool), Code: codes[sentinel], Err: err}
}

// cut shortens a name echoed in an error to 128 bytes, on a rune boundary.
func cut(s string) string { return runecut.Cut(s, 128, "...") }

// ValidID reports whether id is a valid session id.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// resolve finds the tool a name denotes in snap, exactly, and refuses one
// nobody vouches for.
func resolve(op, session string, snap *catalog.Snapshot, name string) (catalog.Tool, error) {
	t, ok := snap.Get(name)
	if !ok {
		return catalog.Tool{}, newErr(op, session, name, ErrUnknownTool, "no tool of catalog generation %d has this id, wire name or alias", snap.Generation())
	}
	if t.Provenance == catalog.ProvenanceUnverified || t.Provenance == "" {
		return catalog.Tool{}, newErr(op, session, name, ErrUntrustedSource, "provenance %s", t.Provenance)
	}
	return t, nil
}

func bump(op string, s *Set) error {
	if s.Version == math.MaxUint64 {
		return newErr(op, s.ID, "", ErrVersionOverflow, "")
	}
	s.Version++
	return nil
}

// build makes a new set whose core pins the named tools of snap.
func build(id string, snap *catalog.Snapshot, core []string) (*Set, error) {
	s := &Set{ID: id, Core: map[string]Pin{}, Activated: map[string]Activation{}}
	for _, name := range core {
		t, err := resolve("create", id, snap, name)
		if err != nil {
			return nil, err
		}
		if _, dup := s.Core[t.ID]; dup {
			return nil, newErr("create", id, name, ErrDuplicateTool, "resolves to %s, named before", t.ID)
		}
		s.Core[t.ID] = pinOf(t)
	}
	return s, nil
}

// activateMany grants every named tool, or none: on any error s is left as
// it was. Names are resolved in sorted order of their ids, so the first
// error reported does not depend on the order they were given in.
func activateMany(s *Set, snap *catalog.Snapshot, names []string) error {
	const op = "activate"
	tools := make([]catalog.Tool, 0, len(names))
	byID := map[string]string{}
	for _, name := range names {
		t, err := resolve(op, s.ID, snap, name)
		if err != nil {
			return err
		}
		if first, dup := byID[t.ID]; dup {
			return newErr(op, s.ID, name, ErrDuplicateTool, "resolves to %s, as %q does", t.ID, cut(first))
		}
		byID[t.ID] = name
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b catalog.Tool) int { return cmp.Compare(a.ID, b.ID) })
	for _, t := range tools {
		if p, ok := s.Core[t.ID]; ok && len(p.Drift(t)) == 0 {
			return newErr(op, s.ID, byID[t.ID], ErrAlreadyActive, "%s is a core tool", t.ID)
		}
		if a, ok := s.Activated[t.ID]; ok && len(a.Pin().Drift(t)) == 0 {
			return newErr(op, s.ID, byID[t.ID], ErrAlreadyActive, "%s is activated with this schema, policy digest and provenance", t.ID)
		}
	}
	if len(tools) == 0 {
		return nil
	}
	if err := bump(op, s); err != nil {
		return err
	}
	for _, t := range tools {
		s.Activated[t.ID] = Activation{
			Grant: Grant{Session: s.ID, Tool: t.ID, CatalogGeneration: snap.Generation(), CatalogDigest: snap.Digest(),
				SchemaDigest: t.SchemaDigest, PolicyDigest: t.PolicyDigest},
			Provenance: t.Provenance,
		}
	}
	return nil
}

// revoke removes the activation of the tool named by a canonical id or, with
// a snapshot, by a name that resolves in it.
func revoke(s *Set, snap *catalog.Snapshot, name string) error {
	const op = "revoke"
	id := name
	if _, ok := s.Activated[id]; !ok && snap != nil {
		if t, found := snap.Get(name); found {
			id = t.ID
		}
	}
	if _, ok := s.Activated[id]; !ok {
		if _, core := s.Core[id]; core {
			return newErr(op, s.ID, name, ErrCoreTool, "")
		}
		return newErr(op, s.ID, name, ErrNotActivated, "")
	}
	if err := bump(op, s); err != nil {
		return err
	}
	delete(s.Activated, id)
	return nil
}

// Drop reasons of a Report.
const (
	DropRemoved = "removed" // the tool is no longer in the catalog
	DropDrifted = "drifted" // its record differs from the pin (see Pin.Drift)
)

// Dropped is a pin or grant Rebuild dropped.
type Dropped struct {
	Tool   string `json:"tool"`
	Core   bool   `json:"core"`
	Reason string `json:"reason"` // DropRemoved or DropDrifted
	// Drift lists what differs, for DropDrifted (Pin.Drift).
	Drift []string `json:"drift,omitempty"`
}

// Status says whether a pin still holds against snap: "ok" with no drift,
// DropRemoved, or DropDrifted with what differs (Pin.Drift). A pin whose
// status is not "ok" authorizes no call.
func (p Pin) Status(snap *catalog.Snapshot, id string) (string, []string) {
	t, ok := snap.Get(id)
	if !ok || t.ID != id {
		return DropRemoved, nil
	}
	if d := p.Drift(t); len(d) > 0 {
		return DropDrifted, d
	}
	return "ok", nil
}

// Report says what Rebuild did.
type Report struct {
	// Generation is the catalog generation the set was rebuilt against.
	Generation uint64 `json:"generation"`
	// Kept lists the tool ids carried forward, sorted.
	Kept []string `json:"kept"`
	// Dropped lists what was dropped, sorted by tool id.
	Dropped []Dropped `json:"dropped"`
}

// rebuild re-pins s against snap: a pin or grant whose tool is present and
// has not drifted (Pin.Drift) is carried forward (a grant then records
// snap's generation and digest); any other is dropped as removed or
// drifted. A pin
// without a policy digest is dropped, never upgraded: nothing says the
// tool's hints, effect and source are still the ones granted.
func rebuild(s *Set, snap *catalog.Snapshot) (Report, error) {
	r := Report{Generation: snap.Generation(), Kept: []string{}, Dropped: []Dropped{}}
	next := s.Clone()
	for _, id := range slices.Sorted(maps.Keys(s.Core)) {
		if why, drift := s.Core[id].Status(snap, id); why != "ok" {
			delete(next.Core, id)
			r.Dropped = append(r.Dropped, Dropped{Tool: id, Core: true, Reason: why, Drift: drift})
			continue
		}
		r.Kept = append(r.Kept, id)
	}
	for _, id := range slices.Sorted(maps.Keys(s.Activated)) {
		a := s.Activated[id]
		if why, drift := a.Pin().Status(snap, id); why != "ok" {
			delete(next.Activated, id)
			r.Dropped = append(r.Dropped, Dropped{Tool: id, Reason: why, Drift: drift})
			continue
		}
		a.Grant.CatalogGeneration, a.Grant.CatalogDigest = snap.Generation(), snap.Digest()
		next.Activated[id] = a
		r.Kept = append(r.Kept, id)
	}
	slices.Sort(r.Kept)
	slices.SortStableFunc(r.Dropped, func(a, b Dropped) int { return cmp.Compare(a.Tool, b.Tool) })
	if err := bump("rebuild", next); err != nil {
		return Report{}, err
	}
	*s = *next
	return r, nil
}
