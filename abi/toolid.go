package abi

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Effect classes of a tool (Tool.Effect; SPEC.md §7.7), ordered by
// the care a call needs. A value outside the three counts as
// EffectNonIdempotent wherever policy is decided.
const (
	// EffectReadOnly: the tool does not modify its environment.
	EffectReadOnly = "read_only"
	// EffectIdempotentWrite: the tool writes, only additively; repeating a
	// call with the same arguments changes nothing more.
	EffectIdempotentWrite = "idempotent_write"
	// EffectNonIdempotent: the tool writes, and repeats may compound or the
	// write may destroy. The class of a tool nothing better is known of.
	EffectNonIdempotent = "non_idempotent"
)

// Tool-id namespaces (SPEC.md §7.7). A namespace is
// NamespaceBuiltin, NamespaceUnknown, or one of the prefixes followed by a
// segment (see ValidSegment).
const (
	NamespaceBuiltin = "builtin"
	NamespaceUnknown = "unknown"
	// NamespaceMCP, NamespaceExt and NamespacePlugin are prefixes:
	// "mcp.<server>", "ext.<id>", "plugin.<id>".
	NamespaceMCP    = "mcp."
	NamespaceExt    = "ext."
	NamespacePlugin = "plugin."
)

// Provenance values (Tool.Provenance; SPEC.md §7.7): the two
// bare values, and the kinds written "kind{origin}" with a segment as the
// origin.
const (
	ProvenanceBuiltin           = "builtin_runtime"
	ProvenanceUnverified        = "unverified"
	ProvenanceMCPConfig         = "mcp_config"
	ProvenanceExtensionManifest = "extension_manifest"
	ProvenancePluginConfig      = "plugin_config"
)

// provenanceNamespace maps a provenance kind with an origin to the
// namespace prefix of the tools it vouches for.
var provenanceNamespace = map[string]string{
	ProvenanceMCPConfig:         NamespaceMCP,
	ProvenanceExtensionManifest: NamespaceExt,
	ProvenancePluginConfig:      NamespacePlugin,
}

// MaxToolNameBytes caps a raw tool name, wire name or alias. Real names are
// far shorter (MCP suggests at most 128 characters, OpenAI allows 64); the
// cap bounds ids and map keys built from untrusted names.
const MaxToolNameBytes = 256

// Errors of the tool-id and provenance grammar. Every *ToolIDError wraps
// one of them.
var (
	// ErrToolID: a tool id, namespace, name segment or provenance is not
	// in the grammar.
	ErrToolID = errors.New("invalid tool id")
	// ErrToolName: a raw tool name is empty, longer than MaxToolNameBytes
	// or not UTF-8.
	ErrToolName = errors.New("invalid tool name")
)

// ToolIDError is a string that breaks the tool-id grammar. It does not
// repeat the string (which may be hostile and long); the caller knows it.
type ToolIDError struct {
	// Kind is ErrToolID or ErrToolName, for errors.Is.
	Kind error
	// Part is what was wrong: "id", "namespace", "name segment", "name"
	// or "provenance".
	Part string
	// Reason says how.
	Reason string
}

func (e *ToolIDError) Error() string { return e.Part + ": " + e.Reason }

func (e *ToolIDError) Unwrap() error { return e.Kind }

// MakeToolID returns the canonical id "namespace:name" of the tool called
// rawName.
//
// The name segment encodes rawName byte by byte: bytes in [a-z0-9_-] stand
// for themselves, and every other byte, '.' included, becomes '.' followed
// by its value in two lowercase hex digits. So "get_me" stays "get_me",
// "Get.Me" becomes ".47et.2e.4de", and "a:b" becomes "a.3ab". The encoding
// is injective: '.' only ever starts an escape, so ParseToolID recovers
// rawName exactly, and two different raw names never share an id.
//
// Errors: a *ToolIDError wrapping ErrToolID for a malformed namespace,
// ErrToolName for a rawName that is empty, longer than MaxToolNameBytes or
// not UTF-8.
func MakeToolID(namespace, rawName string) (string, error) {
	if !ValidNamespace(namespace) {
		return "", &ToolIDError{ErrToolID, "namespace", "not builtin, unknown, mcp.<server>, ext.<id> or plugin.<id> with [a-z0-9_.-]"}
	}
	if err := CheckToolName(rawName); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(namespace) + 1 + len(rawName))
	b.WriteString(namespace)
	b.WriteByte(':')
	for i := 0; i < len(rawName); i++ {
		c := rawName[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789abcdef"
		b.WriteByte('.')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String(), nil
}

// ParseToolID splits a canonical tool id into its namespace and decoded raw
// name. It accepts exactly the strings MakeToolID returns; anything else,
// including a non-canonical escape, is a *ToolIDError wrapping ErrToolID.
func ParseToolID(id string) (namespace, rawName string, err error) {
	ns, name, ok := strings.Cut(id, ":")
	if !ok || !ValidNamespace(ns) {
		return "", "", &ToolIDError{ErrToolID, "id", "not namespace:name with a known namespace"}
	}
	raw, err := DecodeToolName(name)
	if err != nil {
		return "", "", err
	}
	return ns, raw, nil
}

// IsToolIDShaped reports whether s has the shape of a tool id: a known
// namespace, ':', and a segment. It is the grammar without the name's
// decoding, for telling a name meant as an id from a wire name.
func IsToolIDShaped(s string) bool {
	ns, name, ok := strings.Cut(s, ":")
	return ok && ValidSegment(name) && ValidNamespace(ns)
}

// DecodeToolName inverts the name encoding of MakeToolID. It accepts only
// the canonical encoding (lowercase hex, no escape of a byte that stands for
// itself), so the two are exact inverses. Errors are *ToolIDError wrapping
// ErrToolID.
func DecodeToolName(segment string) (string, error) {
	bad := func(why string) (string, error) {
		return "", &ToolIDError{ErrToolID, "name segment", why}
	}
	if segment == "" {
		return bad("empty")
	}
	out := make([]byte, 0, len(segment))
	for i := 0; i < len(segment); i++ {
		c := segment[i]
		switch {
		case plainByte(c):
			out = append(out, c)
		case c == '.':
			if i+2 >= len(segment) {
				return bad("truncated escape")
			}
			hi, ok1 := lowerHex(segment[i+1])
			lo, ok2 := lowerHex(segment[i+2])
			if !ok1 || !ok2 {
				return bad("escape is not two lowercase hex digits")
			}
			v := hi<<4 | lo
			if plainByte(v) {
				return bad("escape of a byte that stands for itself")
			}
			out = append(out, v)
			i += 2
		default:
			return bad("byte outside [a-z0-9_.-]")
		}
	}
	raw := string(out)
	if err := CheckToolName(raw); err != nil {
		return bad("decodes to a name MakeToolID refuses: " + err.Error())
	}
	return raw, nil
}

// CheckToolName applies the rules shared by raw names, wire names and
// aliases: non-empty, at most MaxToolNameBytes, UTF-8 (a name that is not
// would change when encoded to JSON and stop matching itself). The error is
// a *ToolIDError wrapping ErrToolName.
func CheckToolName(s string) error {
	switch {
	case s == "":
		return &ToolIDError{ErrToolName, "name", "empty"}
	case len(s) > MaxToolNameBytes:
		return &ToolIDError{ErrToolName, "name", strconv.Itoa(len(s)) + " bytes, more than " + strconv.Itoa(MaxToolNameBytes)}
	case !utf8.ValidString(s):
		return &ToolIDError{ErrToolName, "name", "not valid UTF-8"}
	}
	return nil
}

// ValidSegment reports whether s is a non-empty string of [a-z0-9_.-]: a
// tool id's name segment, a namespace's suffix, a provenance's origin.
func ValidSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
}

// ValidNamespace reports whether ns is a tool-id namespace.
func ValidNamespace(ns string) bool {
	if ns == NamespaceBuiltin || ns == NamespaceUnknown {
		return true
	}
	for _, p := range [...]string{NamespaceMCP, NamespaceExt, NamespacePlugin} {
		if rest, ok := strings.CutPrefix(ns, p); ok {
			return ValidSegment(rest)
		}
	}
	return false
}

// ParseProvenance splits a provenance into its kind and origin: a bare
// ProvenanceBuiltin or ProvenanceUnverified has origin "", the other kinds
// are "kind{origin}". Anything else is a *ToolIDError wrapping ErrToolID.
func ParseProvenance(p string) (kind, origin string, err error) {
	if p == ProvenanceBuiltin || p == ProvenanceUnverified {
		return p, "", nil
	}
	k, rest, ok := strings.Cut(p, "{")
	o, ok2 := strings.CutSuffix(rest, "}")
	if _, known := provenanceNamespace[k]; !ok || !ok2 || !known || !ValidSegment(o) {
		return "", "", &ToolIDError{ErrToolID, "provenance", "not builtin_runtime, unverified, or mcp_config, extension_manifest or plugin_config{<[a-z0-9_.-]>}"}
	}
	return k, o, nil
}

// ProvenanceNamespace is the namespace of the tools a provenance of this
// kind and origin vouches for ("mcp_config", "github" → "mcp.github"), or
// "" for a kind without an origin.
func ProvenanceNamespace(kind, origin string) string {
	p, ok := provenanceNamespace[kind]
	if !ok {
		return ""
	}
	return p + origin
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
