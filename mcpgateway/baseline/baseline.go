// Package baseline keeps the MCP gateway's tool trust baseline: for each
// tool of each upstream, the definition an operator approved (or the first
// listing, when the configuration says so), pinned by the SHA-256 of its
// canonical JSON. A tool whose current definition differs from its entry in
// any model-visible field is denied for every session until an operator
// approves it again. An upstream's instructions (the text of its
// initialize result, which MCP clients give the model) are pinned the same
// way, as the entry of the reserved tool name InstructionsTool.
//
// Three stores implement Store: NewMemory (one process), OpenFile (a JSON
// lock file an operator can review and commit, shared by processes on one
// machine through flock) and the PostgreSQL store of store/postgres (shared
// by the replicas of a fleet). Every store checks entries when they are
// written and again when they are read: a stored definition that does not
// hash to its digest is an error naming the entry, never a silently dropped
// entry, so a tampered baseline fails closed.
//
// The package depends on the standard library and host/catalog (for the
// canonical JSON) only, so the stores of other packages can import it.
package baseline

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/runecut"
)

var (
	// ErrStore wraps every failure to read or write the storage: I/O, a
	// lock not taken in time, the database unavailable, a context done.
	ErrStore = errors.New("baseline: store failure")
	// ErrInvalid wraps every refusal of malformed content: an entry to
	// write, or a stored file, row or entry (a digest that does not match
	// its definition, a file that is not a baseline document, one too
	// large). The message names the entry or the place.
	ErrInvalid = errors.New("baseline: invalid")
)

// ApprovedByFirstListing is Entry.ApprovedBy of an entry taken from the
// first listing of a tool rather than approved by an operator.
const ApprovedByFirstListing = "first_listing"

// Bounds on an entry.
const (
	// MaxNameBytes bounds Upstream, Tool and ApprovedBy.
	MaxNameBytes = 1024
	// MaxDefinitionBytes bounds one Definition.
	MaxDefinitionBytes = 4 << 20
)

// InstructionsTool is the Tool of the entry that pins an upstream's
// instructions. No exposed tool has this name: "@" is not a character of
// an MCP tool name, and the gateway exposes no tool so named. Its
// Definition is {"instructions": TEXT} (InstructionsDefinition), TEXT
// non-empty and at most MaxInstructionsBytes.
const InstructionsTool = "@instructions"

// MaxInstructionsBytes bounds the instructions text an entry pins.
const MaxInstructionsBytes = 64 << 10

// InstructionsDefinition is the Definition pinning an upstream's
// instructions text.
func InstructionsDefinition(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Instructions string `json:"instructions"`
	}{text}) // a string always encodes
	return b
}

// Instructions returns the text e pins when it is an upstream's
// instructions entry (Tool InstructionsTool), and whether it is one.
func (e Entry) Instructions() (string, bool) {
	if e.Tool != InstructionsTool {
		return "", false
	}
	text, _ := instructionsText(e.Definition) // entries are checked when stored and read
	return text, true
}

// instructionsText reads an instructions entry's definition: exactly one
// member, "instructions", a non-empty string of at most
// MaxInstructionsBytes.
func instructionsText(def json.RawMessage) (string, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(def, &members); err != nil {
		return "", fmt.Errorf("definition: %v", err)
	}
	raw, ok := members["instructions"]
	if !ok || len(members) != 1 {
		return "", errors.New(`definition: an instructions entry holds the member "instructions" and no other`)
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", errors.New("definition: instructions is not a string")
	}
	switch {
	case text == "":
		return "", errors.New("definition: instructions is empty")
	case len(text) > MaxInstructionsBytes:
		return "", fmt.Errorf("definition: instructions of %d bytes, more than %d", len(text), MaxInstructionsBytes)
	}
	return text, nil
}

// Key names one tool of one upstream: the upstream's configured name and the tool's name at that upstream.
type Key struct{ Upstream, Tool string }

// String reads `upstream "u", tool "t"`, for messages.
func (k Key) String() string {
	return fmt.Sprintf("upstream %q, tool %q", cut(k.Upstream), cut(k.Tool))
}

func compareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Upstream, b.Upstream), strings.Compare(a.Tool, b.Tool))
}

// Entry is one approved definition.
type Entry struct {
	Upstream   string          `json:"upstream"`
	Tool       string          `json:"tool"`
	Digest     string          `json:"digest"`      // lowercase hex SHA-256 of the canonical JSON of Definition (Digest func)
	Definition json.RawMessage `json:"definition"`  // the tool object exactly as the upstream listed it
	ApprovedBy string          `json:"approved_by"` // "first_listing" or the operator's identity
	ApprovedAt time.Time       `json:"approved_at"`
}

// Key returns the entry's key.
func (e Entry) Key() Key { return Key{e.Upstream, e.Tool} }

// clone returns e with a Definition of its own.
func (e Entry) clone() Entry {
	e.Definition = bytes.Clone(e.Definition)
	return e
}

// NewEntry returns the entry approving def as tool of upstream, by whom at
// when, with its digest computed. Errors are those of Validate.
func NewEntry(upstream, tool string, def json.RawMessage, by string, at time.Time) (Entry, error) {
	d, _ := Digest(def) // an invalid definition is reported by Validate
	e := Entry{Upstream: upstream, Tool: tool, Digest: d, Definition: bytes.Clone(def), ApprovedBy: by, ApprovedAt: at}
	if err := e.Validate(); err != nil {
		return Entry{}, err
	}
	return e.normal(), nil
}

// Digest returns the digest of a tool definition: SHA-256 (hex) of its
// canonical JSON (catalog.CanonicalJSON: key order, whitespace, escapes and
// number spelling do not matter; every value does). Errors wrap ErrInvalid:
// invalid JSON, or JSON that is not an object.
func Digest(def json.RawMessage) (string, error) {
	c, err := canonical(def)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// canonical returns the canonical JSON of def, which must be an object.
func canonical(def json.RawMessage) ([]byte, error) {
	if len(def) > MaxDefinitionBytes {
		return nil, fmt.Errorf("definition of %d bytes, more than %d", len(def), MaxDefinitionBytes)
	}
	c, err := catalog.CanonicalJSON(def)
	if err != nil {
		return nil, fmt.Errorf("definition: %w", err)
	}
	if len(c) == 0 || c[0] != '{' {
		return nil, errors.New("definition is not a JSON object")
	}
	return c, nil
}

// Validate checks e as every store does on write and on read: Upstream,
// Tool and ApprovedBy are non-empty text of at most MaxNameBytes (valid
// UTF-8, no control characters); Definition is a JSON object of at most
// MaxDefinitionBytes whose "name" member, if any, is Tool (for
// InstructionsTool: {"instructions": TEXT}, TEXT non-empty and at most
// MaxInstructionsBytes); Digest is its
// digest; ApprovedAt is set and within years 1 to 9999 (UTC). Errors wrap
// ErrInvalid and name the entry and the field.
func (e Entry) Validate() error {
	if err := e.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// check is Validate without the sentinel.
func (e Entry) check() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", e.Key(), fmt.Sprintf(format, args...))
	}
	for _, f := range []struct{ name, v string }{{"upstream", e.Upstream}, {"tool", e.Tool}, {"approved_by", e.ApprovedBy}} {
		if err := checkName(f.v); err != nil {
			return fail("%s: %v", f.name, err)
		}
	}
	c, err := canonical(e.Definition)
	if err != nil {
		return fail("%v", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(c, &members); err != nil {
		return fail("definition: %v", err)
	}
	if raw, ok := members["name"]; ok {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return fail("definition: name is not a string")
		}
		if name != e.Tool {
			return fail("definition: name %q is not the tool's", cut(name))
		}
	}
	if e.Tool == InstructionsTool {
		if _, err := instructionsText(c); err != nil {
			return fail("%v", err)
		}
	}
	sum := sha256.Sum256(c)
	if want := hex.EncodeToString(sum[:]); e.Digest != want {
		if !isDigest(e.Digest) {
			return fail("digest %q: want 64 lowercase hex digits", cut(e.Digest))
		}
		return fail("digest %s does not match the definition (whose digest is %s)", e.Digest, want)
	}
	if e.ApprovedAt.IsZero() {
		return fail("approved_at: missing")
	}
	if y := e.ApprovedAt.UTC().Year(); y < 1 || y > 9999 {
		return fail("approved_at: year %d out of range", y)
	}
	return nil
}

// normal returns e as stores keep it: ApprovedAt in UTC to the
// microsecond (what PostgreSQL keeps), so every store returns the same.
func (e Entry) normal() Entry {
	e.ApprovedAt = e.ApprovedAt.UTC().Truncate(time.Microsecond)
	return e
}

func checkName(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > MaxNameBytes:
		return fmt.Errorf("%d bytes, more than %d", len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return errors.New("not valid UTF-8")
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%q holds a control character", cut(s))
	}
	return nil
}

func isDigest(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s) == 64 && strings.ToLower(s) == s
}

// cut shortens untrusted text for a message.
func cut(s string) string { return runecut.Cut(s, 80, "…") }

// Set is an immutable view of the baseline. A nil *Set is empty.
type Set struct {
	byKey   map[Key]int // index in entries
	entries []Entry     // sorted by key
}

// empty is the Set of no entries.
var empty = &Set{byKey: map[Key]int{}}

// NewSet returns the set of entries, each checked (Entry.Validate); a key
// given twice is an error wrapping ErrInvalid.
func NewSet(entries []Entry) (*Set, error) {
	s := &Set{byKey: make(map[Key]int, len(entries)), entries: make([]Entry, 0, len(entries))}
	for i, e := range entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalid, i, err)
		}
		if _, dup := s.byKey[e.Key()]; dup {
			return nil, fmt.Errorf("%w: entry %d: %s given twice", ErrInvalid, i, e.Key())
		}
		s.byKey[e.Key()] = i
		s.entries = append(s.entries, e.normal().clone())
	}
	s.sort()
	return s, nil
}

func (s *Set) sort() {
	slices.SortFunc(s.entries, func(a, b Entry) int { return compareKeys(a.Key(), b.Key()) })
	for i, e := range s.entries {
		s.byKey[e.Key()] = i
	}
}

// Get returns the entry of k.
func (s *Set) Get(k Key) (Entry, bool) {
	if s == nil {
		return Entry{}, false
	}
	i, ok := s.byKey[k]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i].clone(), true
}

// Entries returns the entries sorted by upstream, then tool.
func (s *Set) Entries() []Entry {
	if s == nil {
		return []Entry{}
	}
	out := make([]Entry, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.clone()
	}
	return out
}

// Len returns the number of entries.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Equal reports whether s and o hold the same entries (same keys, digests,
// approvers and times; definitions by digest).
func (s *Set) Equal(o *Set) bool {
	if s.Len() != o.Len() {
		return false
	}
	for i := range s.Len() {
		a, b := s.entries[i], o.entries[i]
		if a.Key() != b.Key() || a.Digest != b.Digest || a.ApprovedBy != b.ApprovedBy || !a.ApprovedAt.Equal(b.ApprovedAt) {
			return false
		}
	}
	return true
}

// with returns a new set: s with the entries of add whose key it lacks
// (replace false) or all of add (replace true), without the keys of
// remove. It returns s itself when nothing changes. add must be checked
// (checkWrite).
func (s *Set) with(add []Entry, replace bool, remove []Key) *Set {
	changed := false
	next := &Set{byKey: make(map[Key]int, s.Len()+len(add)), entries: make([]Entry, 0, s.Len()+len(add))}
	gone := make(map[Key]bool, len(remove))
	for _, k := range remove {
		gone[k] = true
	}
	for _, e := range s.Entries() {
		if gone[e.Key()] {
			changed = true
			continue
		}
		next.byKey[e.Key()] = len(next.entries)
		next.entries = append(next.entries, e)
	}
	for _, e := range add {
		i, ok := next.byKey[e.Key()]
		switch {
		case !ok:
			next.byKey[e.Key()] = len(next.entries)
			next.entries = append(next.entries, e.clone())
			changed = true
		case replace:
			old := next.entries[i]
			if old.Digest != e.Digest || old.ApprovedBy != e.ApprovedBy || !old.ApprovedAt.Equal(e.ApprovedAt) || !bytes.Equal(old.Definition, e.Definition) {
				next.entries[i] = e.clone()
				changed = true
			}
		}
	}
	if !changed {
		return s
	}
	next.sort()
	return next
}

// checkWrite checks the entries of a write and returns them normalised:
// each valid, no key twice.
func checkWrite(entries []Entry) ([]Entry, error) {
	out := make([]Entry, len(entries))
	seen := make(map[Key]bool, len(entries))
	for i, e := range entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalid, i, err)
		}
		if seen[e.Key()] {
			return nil, fmt.Errorf("%w: entry %d: %s given twice", ErrInvalid, i, e.Key())
		}
		seen[e.Key()] = true
		out[i] = e.normal().clone()
	}
	return out, nil
}

// checkKeys checks the keys of a Remove.
func checkKeys(keys []Key) error {
	for i, k := range keys {
		for _, f := range []struct{ name, v string }{{"upstream", k.Upstream}, {"tool", k.Tool}} {
			if err := checkName(f.v); err != nil {
				return fmt.Errorf("%w: key %d: %s: %v", ErrInvalid, i, f.name, err)
			}
		}
	}
	return nil
}

// Store keeps the baseline. Implementations are safe for concurrent use.
type Store interface {
	// Load returns the current baseline (never nil on success).
	Load(ctx context.Context) (*Set, error)
	// AddIfAbsent adds the entries whose key has no entry yet, atomically with respect to every other writer (other processes and replicas included), and returns the baseline after. Used for approving a first listing: two gateways listing different definitions at once end with exactly one of them.
	AddIfAbsent(ctx context.Context, entries []Entry) (*Set, error)
	// Approve adds or replaces the entries (an operator's (re-)approval), atomically.
	Approve(ctx context.Context, entries []Entry) (*Set, error)
	// Remove deletes the keys' entries; an absent key is not an error.
	Remove(ctx context.Context, keys []Key) (*Set, error)
}

// CheckEntries checks the entries of an AddIfAbsent or Approve as every
// store does (Entry.Validate, no key twice) and returns them normalised
// (ApprovedAt in UTC to the microsecond, definitions copied). For stores
// outside this package.
func CheckEntries(entries []Entry) ([]Entry, error) { return checkWrite(entries) }

// CheckKeys checks the keys of a Remove as every store does. For stores
// outside this package.
func CheckKeys(keys []Key) error { return checkKeys(keys) }

// ctxErr returns ctx's error wrapped in ErrStore, or nil.
func ctxErr(ctx context.Context) error {
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}
