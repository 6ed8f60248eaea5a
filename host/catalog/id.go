package catalog

import (
	"strings"
	"unicode/utf8"
)

// MaxNameBytes caps a wire name, alias or raw tool name. Real tool names are
// far shorter (MCP suggests at most 128 characters, OpenAI allows 64); the
// cap bounds ids and map keys built from untrusted names.
const MaxNameBytes = 256

// Namespaces. A namespace is one of NamespaceBuiltin, NamespaceUnknown, or
// "mcp.<server>", "ext.<id>", "plugin.<id>" where the suffix is a non-empty
// string of [a-z0-9_.-].
const (
	NamespaceBuiltin = "builtin"
	NamespaceUnknown = "unknown"
)

// MakeID returns the canonical id "namespace:name" of the tool called
// rawName.
//
// The name segment encodes rawName byte by byte: bytes in [a-z0-9_-] stand
// for themselves, and every other byte, '.' included, becomes '.' followed
// by its value in two lowercase hex digits. So "get_me" stays "get_me",
// "Get.Me" becomes ".47et.2e.4de", and "a:b" becomes "a.3ab". The encoding
// is injective: '.' only ever starts an escape, so DecodeName recovers
// rawName exactly, and two different raw names never share an id. The
// result uses only [a-z0-9_.-], as a segment must.
//
// Errors: ErrInvalidID for a malformed namespace, ErrInvalidName for a
// rawName that is empty, longer than MaxNameBytes or not UTF-8.
func MakeID(namespace, rawName string) (string, error) {
	if !validNamespace(namespace) {
		return "", &Error{Index: -1, Err: wrap(ErrInvalidID, "namespace %q is not builtin, unknown, mcp.<server>, ext.<id> or plugin.<id> with [a-z0-9_.-]", cut(namespace))}
	}
	if err := checkRawName(rawName); err != nil {
		return "", &Error{Index: -1, Tool: cut(rawName), Err: err}
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

// ParseID splits a canonical id into its namespace and decoded raw name. It
// accepts exactly the strings MakeID returns. Errors wrap ErrInvalidID.
func ParseID(id string) (namespace, rawName string, err error) {
	ns, name, ok := strings.Cut(id, ":")
	if !ok || !validNamespace(ns) {
		return "", "", &Error{Index: -1, Err: wrap(ErrInvalidID, "%q is not namespace:name with a known namespace", cut(id))}
	}
	raw, err := DecodeName(name)
	if err != nil {
		return "", "", err
	}
	return ns, raw, nil
}

// DecodeName inverts the name encoding of MakeID. It accepts only the
// canonical encoding (lowercase hex, no escape of a byte that stands for
// itself), so DecodeName and the encoding are exact inverses. Errors wrap
// ErrInvalidID.
func DecodeName(name string) (string, error) {
	bad := func(why string) (string, error) {
		return "", &Error{Index: -1, Err: wrap(ErrInvalidID, "name segment %q: %s", cut(name), why)}
	}
	if name == "" {
		return bad("empty")
	}
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case plainByte(c):
			out = append(out, c)
		case c == '.':
			if i+2 >= len(name) {
				return bad("truncated escape")
			}
			hi, ok1 := lowerHex(name[i+1])
			lo, ok2 := lowerHex(name[i+2])
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
	if err := checkRawName(raw); err != nil {
		return bad("decodes to a name MakeID refuses: " + err.Error())
	}
	return raw, nil
}

// checkRawName applies the rules shared by raw names, wire names and
// aliases. UTF-8 is required because a name that is not would change when
// encoded to JSON and stop matching itself.
func checkRawName(s string) error {
	switch {
	case s == "":
		return wrap(ErrInvalidName, "empty")
	case len(s) > MaxNameBytes:
		return wrap(ErrInvalidName, "%d bytes, more than %d", len(s), MaxNameBytes)
	case !utf8.ValidString(s):
		return wrap(ErrInvalidName, "not valid UTF-8")
	}
	return nil
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

// validSegment reports whether s is a non-empty string of [a-z0-9_.-].
func validSegment(s string) bool {
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

func validNamespace(ns string) bool {
	if ns == NamespaceBuiltin || ns == NamespaceUnknown {
		return true
	}
	for _, p := range [...]string{"mcp.", "ext.", "plugin."} {
		if rest, ok := strings.CutPrefix(ns, p); ok {
			return validSegment(rest)
		}
	}
	return false
}

// validProvenance reports whether p is one of the documented forms.
func validProvenance(p string) bool {
	if p == ProvenanceBuiltin || p == ProvenanceUnverified {
		return true
	}
	for _, k := range [...]string{"mcp_config{", "extension_manifest{", "plugin_config{"} {
		if rest, ok := strings.CutPrefix(p, k); ok {
			id, ok := strings.CutSuffix(rest, "}")
			return ok && validSegment(id)
		}
	}
	return false
}
