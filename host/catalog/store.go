package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gatehost/gatehost/abi"
)

// defaultSchema is the schema of a tool that declares none: any object.
var defaultSchema = json.RawMessage(`{"type":"object"}`)

// Snapshot is an immutable catalog at one generation. It is safe for
// concurrent use, and nothing a caller does to values it returns changes it.
type Snapshot struct {
	gen    uint64
	digest string         // snapshotDigest(tools); "" is the empty catalog's
	tools  []Tool         // sorted by ID
	index  map[string]int // id, wire name or alias -> position in tools
}

// Generation returns the snapshot's generation: 0 for the snapshot NewStore
// publishes, one more for each successful Update since. A generation is
// local to one Store: two processes count their own.
func (s *Snapshot) Generation() uint64 { return s.gen }

// Digest names the snapshot by its content: 64 lowercase hex digits, the
// SHA-256 of the canonical JSON of every record (id, wire name, aliases,
// description, schema digest, provenance, source, effect, hints, policy
// digest), sorted by id. Two stores holding the same tools, whatever
// order they were added in and whatever their generations, have the same
// digest; any change to any record changes it. It is computed once, when
// the snapshot is published.
func (s *Snapshot) Digest() string {
	if s.digest == "" {
		return emptyDigest
	}
	return s.digest
}

// Len returns the number of tools.
func (s *Snapshot) Len() int { return len(s.tools) }

// Get returns the tool whose id, wire name or alias is exactly name
// (case-sensitive; no other normalisation). The Tool is a deep copy.
func (s *Snapshot) Get(name string) (Tool, bool) {
	i, ok := s.index[name]
	if !ok {
		return Tool{}, false
	}
	return s.tools[i].clone(), true
}

// SchemaDigest returns the schema digest of the tool whose id, wire name
// or alias is exactly name, as Get finds it, without copying the record.
func (s *Snapshot) SchemaDigest(name string) (string, bool) {
	i, ok := s.index[name]
	if !ok {
		return "", false
	}
	return s.tools[i].SchemaDigest, true
}

// InputSchema returns a copy of the input schema whose digest is digest,
// if a tool of the snapshot has it.
func (s *Snapshot) InputSchema(digest string) (json.RawMessage, bool) {
	for i := range s.tools {
		if s.tools[i].SchemaDigest == digest {
			return cloneBytes(s.tools[i].InputSchema), true
		}
	}
	return nil, false
}

// List returns every tool, deep-copied, sorted by id.
func (s *Snapshot) List() []Tool {
	out := make([]Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.clone()
	}
	return out
}

// Entries returns the short form of every tool, sorted by id, as the
// catalog.list capability answers it. Unlike List it copies no schema.
func (s *Snapshot) Entries() []abi.ToolEntry {
	out := make([]abi.ToolEntry, len(s.tools))
	for i, t := range s.tools {
		out[i] = abi.ToolEntry{ID: t.ID, Name: t.Name, Aliases: cloneStrings(t.Aliases)}
	}
	return out
}

// Store holds the current catalog snapshot and publishes new ones. It is
// safe for concurrent use: readers never block, and writers are serialised.
// The zero Store is an empty catalog at generation 0, like NewStore().
type Store struct {
	cur atomic.Pointer[Snapshot]
	mu  sync.Mutex // serialises Update
}

// NewStore returns a store whose first snapshot, generation 0, holds tools.
// The tools are validated and normalised as Builder.Add does; the first
// error is returned and no store is created.
func NewStore(tools ...Tool) (*Store, error) {
	b := newBuilder(&Snapshot{})
	for _, t := range tools {
		if err := b.Add(t); err != nil {
			return nil, err
		}
	}
	snap, err := b.build(0)
	if err != nil {
		return nil, err
	}
	s := &Store{}
	s.cur.Store(snap)
	return s, nil
}

// NewStoreAt is NewStore with the first snapshot at generation gen rather
// than 0. A process that replaces its catalog wholesale (a server reloading
// its config) uses it to keep generations rising across stores, so that a
// generation never names two different catalogs.
func NewStoreAt(gen uint64, tools ...Tool) (*Store, error) {
	s, err := NewStore(tools...)
	if err != nil {
		return nil, err
	}
	snap := *s.cur.Load()
	snap.gen = gen
	s.cur.Store(&snap)
	return s, nil
}

// emptySnapshot is the zero Store's catalog. It is never modified.
var emptySnapshot = &Snapshot{}

// Snapshot returns the current snapshot: one atomic load, no lock.
func (s *Store) Snapshot() *Snapshot {
	if p := s.cur.Load(); p != nil {
		return p
	}
	return emptySnapshot
}

// Update applies fn to a copy of the current catalog and, if fn returns nil,
// publishes the result as the new current snapshot, with the generation
// exactly one higher, and returns it. Every successful Update publishes,
// even one that changed nothing, so the generation counts Updates.
//
// If fn returns an error (or panics), nothing is published and that error
// is returned unchanged. Updates are serialised; fn runs under the store's
// write lock, so it must not call Update itself. fn must not be nil, and b
// must not be used after fn returns.
// At generation math.MaxUint64 Update fails with ErrGenerationOverflow
// without calling fn.
func (s *Store) Update(fn func(b *Builder) error) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.Snapshot()
	if cur.gen == math.MaxUint64 {
		return nil, &Error{Index: -1, Err: wrap(ErrGenerationOverflow, "generation %d cannot be raised", cur.gen)}
	}
	b := newBuilder(cur)
	if err := fn(b); err != nil {
		return nil, err
	}
	next, err := b.build(cur.gen + 1)
	if err != nil {
		return nil, err
	}
	s.cur.Store(next)
	return next, nil
}

// Builder is a mutable copy of a catalog, handed to the function given to
// Store.Update. Its methods keep it consistent: a method that fails leaves
// it as it was.
type Builder struct {
	tools map[string]Tool   // by id
	names map[string]string // id, wire name or alias -> id
}

func newBuilder(s *Snapshot) *Builder {
	b := &Builder{
		tools: make(map[string]Tool, len(s.tools)+1),
		names: make(map[string]string, len(s.index)+1),
	}
	for _, t := range s.tools {
		b.tools[t.ID] = t
	}
	for k, i := range s.index {
		b.names[k] = s.tools[i].ID
	}
	return b
}

// Get returns the tool whose id, wire name or alias is exactly name, as the
// builder holds it now. The Tool is a deep copy.
func (b *Builder) Get(name string) (Tool, bool) {
	id, ok := b.names[name]
	if !ok {
		return Tool{}, false
	}
	return b.tools[id].clone(), true
}

// Add validates t, normalises it (see Tool) and adds it.
//
// Errors, as *Error naming the tool: ErrInvalidID, ErrInvalidName,
// ErrInvalidSchema (not strict JSON, or not an object) or ErrInvalidTool
// for a malformed record; ErrDuplicateID if a tool with
// t.ID is present; ErrNameTaken if t's id, wire name or an alias already
// resolves to another tool.
func (b *Builder) Add(t Tool) error {
	t, err := normalize(t)
	if err != nil {
		return err
	}
	if _, dup := b.tools[t.ID]; dup {
		return toolErr(t.ID, ErrDuplicateID, "")
	}
	for _, k := range keys(t) {
		if other, taken := b.names[k]; taken {
			return toolErr(t.ID, ErrNameTaken, "%q already resolves to %q", cut(k), other)
		}
	}
	b.tools[t.ID] = t
	for _, k := range keys(t) {
		b.names[k] = t.ID
	}
	return nil
}

// Remove removes the tool with the given id. Errors: ErrNotFound.
func (b *Builder) Remove(id string) error {
	t, ok := b.tools[id]
	if !ok {
		return toolErr(id, ErrNotFound, "")
	}
	delete(b.tools, id)
	for _, k := range keys(t) {
		delete(b.names, k)
	}
	return nil
}

// Replace replaces the tool with id t.ID by t. Its old names are released
// first, so t may rename the tool or move an alias. Errors: ErrNotFound, and
// those of Add.
func (b *Builder) Replace(t Tool) error {
	old, ok := b.tools[t.ID]
	if !ok {
		return toolErr(t.ID, ErrNotFound, "")
	}
	_ = b.Remove(old.ID)
	if err := b.Add(t); err != nil {
		b.tools[old.ID] = old
		for _, k := range keys(old) {
			b.names[k] = old.ID
		}
		return err
	}
	return nil
}

// build freezes the builder into a snapshot and names it (Digest). The
// snapshot shares the tools' slices with the builder, which never changes a
// Tool in place.
func (b *Builder) build(gen uint64) (*Snapshot, error) {
	s := &Snapshot{gen: gen, tools: make([]Tool, 0, len(b.tools)), index: make(map[string]int, len(b.names))}
	for _, t := range b.tools {
		s.tools = append(s.tools, t)
	}
	slices.SortFunc(s.tools, func(x, y Tool) int { return cmp.Compare(x.ID, y.ID) })
	for i, t := range s.tools {
		for _, k := range keys(t) {
			s.index[k] = i
		}
	}
	var err error
	if s.digest, err = snapshotDigest(s.tools); err != nil {
		return nil, err
	}
	return s, nil
}

// keys returns every string that resolves to t. A tool's id may equal its
// own wire name; the duplicate is harmless.
func keys(t Tool) []string {
	return append([]string{t.ID, t.Name}, t.Aliases...)
}

// normalize validates t and returns the copy the catalog keeps.
func normalize(t Tool) (Tool, error) {
	name := t.Name
	if name == "" {
		name = t.ID
	}
	bad := func(sentinel error, format string, args ...any) (Tool, error) {
		return Tool{}, toolErr(name, sentinel, format, args...)
	}
	if _, _, err := ParseID(t.ID); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Tool{}, &Error{Index: -1, Tool: cut(name), Err: e.Err}
		}
		return Tool{}, err
	}
	if err := checkRawName(t.Name); err != nil {
		return bad(err, "")
	}
	if len(t.Aliases) > 0 {
		seen := map[string]bool{t.Name: true}
		aliases := make([]string, len(t.Aliases))
		for i, a := range t.Aliases {
			if err := checkRawName(a); err != nil {
				return Tool{}, &Error{Index: -1, Tool: cut(name), Err: fmt.Errorf("alias %d: %w", i, err)}
			}
			if seen[a] {
				return bad(ErrInvalidTool, "alias %q repeats the tool's name or another alias", cut(a))
			}
			seen[a] = true
			aliases[i] = a
		}
		t.Aliases = aliases
	} else {
		t.Aliases = nil
	}
	schema := t.InputSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = defaultSchema
	}
	digest, err := Digest(schema)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return bad(ErrInvalidSchema, "%v", e.Err)
		}
		return bad(ErrInvalidSchema, "%v", err)
	}
	if first := bytes.TrimLeft(schema, " \t\r\n"); first[0] != '{' {
		return bad(ErrInvalidSchema, "schema is %s, not a JSON object", jsonKind(first[0]))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return bad(ErrInvalidSchema, "%v", err)
	}
	t.InputSchema = compact.Bytes()
	if t.SchemaDigest != "" && t.SchemaDigest != digest {
		return bad(ErrInvalidTool, "schema_digest %q does not match the schema's digest %s", cut(t.SchemaDigest), digest)
	}
	t.SchemaDigest = digest
	derived := EffectNonIdempotent
	if t.Hints != nil {
		h := t.Hints.normalized()
		t.Hints, derived = &h, h.Effect()
	}
	switch {
	case t.Effect == "":
		t.Effect = derived
	case !t.Effect.valid():
		return bad(ErrInvalidTool, "effect %q is not read_only, idempotent_write or non_idempotent", cut(string(t.Effect)))
	case t.Hints != nil && t.Effect.rank() < derived.rank():
		// An override may only add caution: a record must never be
		// classed safer than its own hints say.
		return bad(ErrInvalidTool, "effect %s is less cautious than the %s its hints give", t.Effect, derived)
	}
	if t.Provenance == "" {
		t.Provenance = ProvenanceUnverified
	} else if !validProvenance(t.Provenance) {
		return bad(ErrInvalidTool, "provenance %q is not one of builtin_runtime, unverified, mcp_config{server}, extension_manifest{id}, plugin_config{id}", cut(t.Provenance))
	}
	if !utf8.ValidString(t.Source) {
		return bad(ErrInvalidTool, "source is not valid UTF-8")
	}
	// Encoding would replace bad bytes: two descriptions would share a
	// snapshot digest, and a shipped catalog would differ from its source.
	if !utf8.ValidString(t.Description) {
		return bad(ErrInvalidTool, "description is not valid UTF-8")
	}
	// Last, over the normalised fields.
	if t.PolicyDigest, err = PolicyDigestOf(t); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return Tool{}, &Error{Index: -1, Tool: cut(name), Err: e.Err}
		}
		return Tool{}, err
	}
	return t, nil
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
