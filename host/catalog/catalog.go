// Package catalog is the host's tool catalog: the registered tools with
// their canonical ids, wire names, aliases, input schemas, schema digests,
// provenance, behaviour hints, effect classes and policy digests.
//
// A Store publishes immutable Snapshots. Every successful Store.Update
// publishes a new snapshot whose generation is exactly one more than the
// previous one; a pipeline run pins one snapshot so every gate sees the same
// catalog while it changes. A generation is one store's counter; a
// snapshot's Digest names its content, the same in every process that
// holds the same tools. Load and Parse import the tool formats agents
// already use (MCP, OpenAI, Anthropic) and a native format, which
// Snapshot.MarshalNative writes with every field of every record.
//
// Errors are *Error values that wrap one of the Err* sentinels, so callers
// can branch with errors.Is and read the file, position and tool with
// errors.As.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/runecut"
	"github.com/gatehost/gatehost/internal/safefile"
)

// Effect is a tool's side-effect class. The classes are ordered by the care
// a call needs: read_only < idempotent_write < non_idempotent.
type Effect string

const (
	// EffectReadOnly: the tool does not modify its environment.
	EffectReadOnly Effect = abi.EffectReadOnly
	// EffectIdempotentWrite: the tool writes, only additively (it destroys
	// nothing), and repeating a call with the same arguments has no further
	// effect.
	EffectIdempotentWrite Effect = abi.EffectIdempotentWrite
	// EffectNonIdempotent: the tool writes, and repeats may compound or the
	// write may destroy. It is the default whenever nothing better is
	// known, and the class of every destructive tool, idempotent or not.
	EffectNonIdempotent Effect = abi.EffectNonIdempotent
)

func (e Effect) valid() bool {
	return e == EffectReadOnly || e == EffectIdempotentWrite || e == EffectNonIdempotent
}

// rank orders the classes by the care a call needs; an unknown class ranks
// with non_idempotent.
func (e Effect) rank() int {
	switch e {
	case EffectReadOnly:
		return 0
	case EffectIdempotentWrite:
		return 1
	}
	return 2
}

// Hints are a tool's MCP behaviour annotations (MCP specification
// 2025-06-18, ToolAnnotations) with the specification's defaults applied
// and its "meaningful only when" rules resolved, so that two declarations
// that mean the same thing are equal:
//
//   - readOnlyHint, default false;
//   - destructiveHint, default true, meaningful only when readOnlyHint is
//     false: a read-only tool has Destructive false;
//   - idempotentHint, default false, meaningful only when readOnlyHint is
//     false: a read-only tool has Idempotent true (reading again changes
//     nothing);
//   - openWorldHint, default true.
//
// The annotation title is display text, like the description: it is not a
// hint and is not kept.
type Hints struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

// DefaultHints are the hints of an MCP tool that declares none: a
// destructive, non-idempotent, open-world write.
func DefaultHints() Hints { return Hints{Destructive: true, OpenWorld: true} }

// normalized resolves the "meaningful only when readOnlyHint is false"
// rules.
func (h Hints) normalized() Hints {
	if h.ReadOnly {
		h.Destructive, h.Idempotent = false, true
	}
	return h
}

// Effect is the side-effect class the hints give: read_only when ReadOnly;
// idempotent_write when the tool says it is neither destructive nor
// repeat-sensitive (Destructive false, Idempotent true); otherwise
// non_idempotent. openWorldHint bears on a tool's reach, not on its side
// effects, and does not change the class.
func (h Hints) Effect() Effect {
	switch {
	case h.ReadOnly:
		return EffectReadOnly
	case !h.Destructive && h.Idempotent:
		return EffectIdempotentWrite
	}
	return EffectNonIdempotent
}

func (h *Hints) abi() *abi.ToolHints {
	if h == nil {
		return nil
	}
	return &abi.ToolHints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}
}

// Provenance values without an identifier. The other forms are
// "mcp_config{<server>}", "extension_manifest{<id>}" and
// "plugin_config{<id>}", where the identifier is a non-empty string of
// [a-z0-9_.-].
const (
	ProvenanceBuiltin    = abi.ProvenanceBuiltin
	ProvenanceUnverified = abi.ProvenanceUnverified
)

// Tool is one catalog record.
//
// Store (through Builder.Add and Builder.Replace) normalises a Tool before
// it is published: an empty InputSchema becomes {"type":"object"}, the
// schema is stored compacted (key order kept), SchemaDigest is computed,
// Hints are normalised, an empty Effect becomes the one Hints give
// (EffectNonIdempotent without hints), an empty Provenance becomes
// ProvenanceUnverified, and PolicyDigest is computed last. The defaults are
// the least trusted choice.
type Tool struct {
	// ID is the canonical id "namespace:name" (see MakeID).
	ID string
	// Name is the wire name agents call the tool by: non-empty, valid
	// UTF-8, at most MaxNameBytes bytes.
	Name string
	// Aliases are further wire names of the tool, with the same rules as
	// Name. A name, alias or id resolves to at most one tool.
	Aliases []string
	// Description is free text for people and models.
	Description string
	// InputSchema is the JSON Schema of the tool's arguments; it must be a
	// JSON object.
	InputSchema json.RawMessage
	// SchemaDigest is the lowercase hex SHA-256 of CanonicalJSON(InputSchema).
	// It is computed by the store; a non-empty value that differs from the
	// computed one is an error (ErrInvalidTool), which lets a catalog file
	// pin its schemas.
	SchemaDigest string
	// Provenance says where the record came from: ProvenanceBuiltin,
	// ProvenanceUnverified, or one of the bracketed forms documented with
	// them.
	Provenance string
	// Source names the server, extension or plugin that serves the tool.
	Source string
	// Hints are the tool's MCP annotations, normalised (see Hints); nil
	// for a tool whose format has none (OpenAI, Anthropic, native).
	Hints *Hints
	// Effect is the side-effect class. For imported MCP tools it is
	// Hints.Effect(): the server's hints, so trust it no more than
	// Provenance. With Hints, an explicit Effect may be more cautious than
	// the hints give, never less (ErrInvalidTool).
	Effect Effect
	// PolicyDigest is the lowercase hex SHA-256 of everything that decides
	// policy about the tool: its id, SchemaDigest, Effect, Hints,
	// Provenance and Source (see PolicyDigestOf). The store computes it;
	// a value given to Add or Replace is replaced. A session grant pins
	// it, so any change to those fields is drift.
	PolicyDigest string
}

// ABI returns the record in its wire form. The result shares no memory with t.
func (t Tool) ABI() abi.Tool {
	return abi.Tool{
		ID:           t.ID,
		Name:         t.Name,
		Aliases:      cloneStrings(t.Aliases),
		Description:  t.Description,
		InputSchema:  cloneBytes(t.InputSchema),
		SchemaDigest: t.SchemaDigest,
		Provenance:   t.Provenance,
		Source:       t.Source,
		Effect:       string(t.Effect),
		Hints:        t.Hints.abi(),
		PolicyDigest: t.PolicyDigest,
	}
}

// clone returns a deep copy, so that a snapshot's records cannot be changed
// through a value handed to a caller.
func (t Tool) clone() Tool {
	t.Aliases = cloneStrings(t.Aliases)
	t.InputSchema = cloneBytes(t.InputSchema)
	if t.Hints != nil {
		h := *t.Hints
		t.Hints = &h
	}
	return t
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// Sentinel errors. Every error of this package wraps exactly one of them,
// except Load's I/O errors, which wrap the os error (fs.ErrNotExist, ...).
var (
	// ErrInvalidJSON: input is not strict JSON (see CanonicalJSON).
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrInvalidID: a tool id, namespace or server name is malformed.
	// It is abi.ErrToolID.
	ErrInvalidID = abi.ErrToolID
	// ErrInvalidName: a wire name or alias is empty, too long or not UTF-8.
	// It is abi.ErrToolName.
	ErrInvalidName = abi.ErrToolName
	// ErrInvalidSchema: an input schema is not a JSON object.
	ErrInvalidSchema = errors.New("invalid input schema")
	// ErrInvalidTool: any other malformed record field (effect,
	// provenance, digest mismatch, a repeated alias, a wrongly typed field).
	ErrInvalidTool = errors.New("invalid tool record")
	// ErrDuplicateID: a tool with this id is already in the catalog.
	ErrDuplicateID = errors.New("duplicate tool id")
	// ErrNameTaken: an id, wire name or alias already resolves to another
	// tool.
	ErrNameTaken = errors.New("name already taken")
	// ErrNotFound: Remove or Replace named a tool that is not there.
	ErrNotFound = errors.New("tool not found")
	// ErrGenerationOverflow: the generation counter is at its maximum.
	ErrGenerationOverflow = errors.New("generation overflow")
	// ErrFormat: the input is no supported catalog format, or not the
	// format that was asked for.
	ErrFormat = errors.New("unsupported or mismatched format")
	// ErrTooLarge: a file exceeds MaxFileBytes. It is host.ErrFileTooLarge,
	// the error of every capped file the host reads.
	ErrTooLarge = safefile.ErrTooLarge
	// ErrNotRegular: a path names a named pipe, device, socket or (where a
	// file is expected) directory. It is host.ErrNotRegular.
	ErrNotRegular = safefile.ErrNotRegular
)

// Error is the error type of this package. Err wraps one of the sentinels
// with the reason.
type Error struct {
	// File is the file being imported; empty outside Load.
	File string
	// Index is the tool's position in its file's tool list, or -1 when the
	// error is not about one list entry.
	Index int
	// Tool is the tool's id or wire name (cut to 128 bytes), or empty when
	// the error is not about one tool.
	Tool string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("catalog: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, "tools[%d]: ", e.Index)
	}
	if e.Tool != "" {
		fmt.Fprintf(&b, "tool %q: ", e.Tool)
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// toolErr builds an *Error about one tool outside any file.
func toolErr(tool string, sentinel error, format string, args ...any) *Error {
	return &Error{Index: -1, Tool: cut(tool), Err: wrap(sentinel, format, args...)}
}

// wrap returns "sentinel: reason", wrapping sentinel.
func wrap(sentinel error, format string, args ...any) error {
	if format == "" {
		return sentinel
	}
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// cut shortens a name echoed in an error to 128 bytes, on a rune boundary,
// so a hostile name cannot flood logs.
func cut(s string) string { return runecut.Cut(s, 128, "...") }
