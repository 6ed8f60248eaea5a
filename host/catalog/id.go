package catalog

import (
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
)

// MaxNameBytes caps a wire name, alias or raw tool name
// (abi.MaxToolNameBytes).
const MaxNameBytes = abi.MaxToolNameBytes

// Namespaces. A namespace is one of NamespaceBuiltin, NamespaceUnknown, or
// "mcp.<server>", "ext.<id>", "plugin.<id>" where the suffix is a non-empty
// string of [a-z0-9_.-] (abi.ValidNamespace).
const (
	NamespaceBuiltin = abi.NamespaceBuiltin
	NamespaceUnknown = abi.NamespaceUnknown
)

// MakeID returns the canonical id "namespace:name" of the tool called
// rawName: abi.MakeToolID, whose docstring gives the encoding ("Get.Me"
// becomes ".47et.2e.4de").
//
// Errors: an *Error wrapping ErrInvalidID for a malformed namespace,
// ErrInvalidName for a rawName that is empty, longer than MaxNameBytes or
// not UTF-8.
func MakeID(namespace, rawName string) (string, error) {
	id, err := abi.MakeToolID(namespace, rawName)
	if err != nil {
		if errors.Is(err, ErrInvalidName) {
			return "", &Error{Index: -1, Tool: cut(rawName), Err: idErr(err, "")}
		}
		return "", &Error{Index: -1, Err: idErr(err, namespace)}
	}
	return id, nil
}

// ParseID splits a canonical id into its namespace and decoded raw name
// (abi.ParseToolID). It accepts exactly the strings MakeID returns. Errors
// are *Error wrapping ErrInvalidID.
func ParseID(id string) (namespace, rawName string, err error) {
	ns, raw, err := abi.ParseToolID(id)
	if err != nil {
		return "", "", &Error{Index: -1, Err: idErr(err, id)}
	}
	return ns, raw, nil
}

// DecodeName inverts the name encoding of MakeID (abi.DecodeToolName). It
// accepts only the canonical encoding. Errors are *Error wrapping
// ErrInvalidID.
func DecodeName(name string) (string, error) {
	raw, err := abi.DecodeToolName(name)
	if err != nil {
		return "", &Error{Index: -1, Err: idErr(err, name)}
	}
	return raw, nil
}

// idErr restates an abi grammar error in this package's words, echoing
// the offending string s cut (abi does not repeat it); s is "" when the
// caller names it elsewhere. The result wraps ErrInvalidID or
// ErrInvalidName, which are abi's.
func idErr(err error, s string) error {
	var te *abi.ToolIDError
	if !errors.As(err, &te) {
		return fmt.Errorf("%w: %w", ErrInvalidID, err)
	}
	if s == "" {
		return fmt.Errorf("%w: %s", te.Kind, te.Reason)
	}
	return fmt.Errorf("%w: %s %q: %s", te.Kind, te.Part, cut(s), te.Reason)
}

// checkRawName applies the rules shared by raw names, wire names and
// aliases (abi.CheckToolName); the error wraps ErrInvalidName.
func checkRawName(s string) error {
	if err := abi.CheckToolName(s); err != nil {
		return idErr(err, "")
	}
	return nil
}

// validSegment reports whether s is a non-empty string of [a-z0-9_.-].
func validSegment(s string) bool { return abi.ValidSegment(s) }

// validProvenance reports whether p is one of the documented forms.
func validProvenance(p string) bool {
	_, _, err := abi.ParseProvenance(p)
	return err == nil
}
