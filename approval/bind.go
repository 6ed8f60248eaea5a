package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

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

// Bind returns the binding of the tool call input (in format f) to
// pipeline in session, as h will record the call: the SHA-256 of the
// native subject the host makes of it (host.Host.NativeSubject), and the
// tool's id and schema digest in h's current catalog snapshot, which is
// returned too. Errors: ErrUnparsable, ErrNotInCatalog, or h's error
// reading the input.
func Bind(h *host.Host, pipeline, session string, input []byte, f subject.Format) (Binding, catalog.Tool, error) {
	native, err := h.NativeSubject(pipeline, input, f)
	if err != nil {
		return Binding{}, catalog.Tool{}, err
	}
	var call struct {
		Tool       string `json:"tool"`
		ParseError string `json:"parse_error"`
	}
	if err := json.Unmarshal(native, &call); err != nil {
		return Binding{}, catalog.Tool{}, fmt.Errorf("approval: native subject: %w", err)
	}
	if call.ParseError != "" {
		return Binding{}, catalog.Tool{}, ErrUnparsable
	}
	t, ok := h.Catalog().Snapshot().Get(call.Tool)
	if !ok {
		return Binding{}, catalog.Tool{}, fmt.Errorf("%w: %.64q", ErrNotInCatalog, call.Tool)
	}
	sum := sha256.Sum256(native)
	return Binding{Pipeline: pipeline, Session: session, Tool: t.ID, SchemaDigest: t.SchemaDigest,
		SubjectSHA256: hex.EncodeToString(sum[:])}, t, nil
}
