package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/subject"
)

// Errors of Bind: the call cannot be approved.
var (
	// ErrUnparsable: the call's arguments could not be decoded; such a
	// call never runs, so there is nothing to approve.
	ErrUnparsable = errors.New("approval: the call's arguments could not be decoded")
	// ErrNotInCatalog: the tool is not in h's catalog snapshot; a call to
	// it is refused whatever is approved.
	ErrNotInCatalog = errors.New("approval: tool not in the catalog")
)

// Call is a tool call as an approval binds it (Bind).
type Call struct {
	Binding
	// Tool is the tool in the host's current catalog snapshot.
	Tool catalog.Tool
	// Arguments are the native subject's parameters, whole ({} when it has
	// none): what a person is shown.
	Arguments json.RawMessage
}

// Bind returns the tool call input (in format f) to pipeline in session,
// made by caller (nil: a caller the front end cannot name), as h will
// record it: the binding is the caller, the SHA-256 of the native subject
// the host makes of it (host.Host.NativeSubject), and the tool's id and
// schema digest in h's current catalog snapshot. Errors: ErrUnparsable,
// ErrNotInCatalog, or h's error reading the input.
func Bind(h *host.Host, pipeline, session string, caller *abi.Principal, input []byte, f subject.Format) (Call, error) {
	native, err := h.NativeSubject(pipeline, input, f)
	if err != nil {
		return Call{}, err
	}
	var call abi.ToolCall
	if err := json.Unmarshal(native, &call); err != nil {
		return Call{}, fmt.Errorf("approval: native subject: %w", err)
	}
	if call.ParseError != "" {
		return Call{}, ErrUnparsable
	}
	t, ok := h.Catalog().Snapshot().Get(call.Tool)
	if !ok {
		return Call{}, fmt.Errorf("%w: %.64q", ErrNotInCatalog, call.Tool)
	}
	args := call.Parameters
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	sum := sha256.Sum256(native)
	return Call{Binding: Binding{Pipeline: pipeline, Session: session, CallerKey: CallerOf(caller), Tool: t.ID, SchemaDigest: t.SchemaDigest,
		SubjectSHA256: hex.EncodeToString(sum[:])}, Tool: t, Arguments: args}, nil
}
