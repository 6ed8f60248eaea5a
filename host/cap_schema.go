package host

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/schemafind"
)

// The schema capability (abi.CapabilitySchema) validates a value against an
// input schema of the run's pinned catalog snapshot (operation
// schema.validate; abi/SPEC.md §7.13), natively: a gate compiles no schema.
func init() { registerCapability(abi.CapabilitySchema, schemaCapability{}) }

// compiledSchemas holds compiled input schemas by schema digest, shared by
// every run and every Host of the process: a digest is the SHA-256 of the
// canonical schema (SPEC §8), so one digest compiles to one schema whatever
// catalog or generation it came from. It is bounded (least recently used
// out first), so a catalog that churns cannot grow memory without bound.
var compiledSchemas = schemafind.NewCache(0)

type schemaCapability struct{}

func (schemaCapability) call(_ context.Context, rc *runContext, op string, request []byte) (any, error) {
	if op != abi.OpSchemaValidate {
		return nil, unknownOperation(op)
	}
	var req abi.SchemaValidateRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, badRequest(op, err)
	}
	if err := req.Check(); err != nil {
		return nil, badRequest(op, err)
	}
	digest, raw := req.SchemaDigest, json.RawMessage(nil)
	if req.Tool != "" {
		d, found := rc.snap.SchemaDigest(req.Tool)
		if !found {
			return abi.SchemaValidateAnswer{Found: false}, nil
		}
		digest = d
	} else {
		var found bool
		if raw, found = rc.snap.InputSchema(digest); !found {
			return abi.SchemaValidateAnswer{Found: false}, nil
		}
	}
	// The store gives every tool a schema ({"type":"object"} when it
	// declares none). Its bytes are copied out on a cache miss only.
	a, err := compiledSchemas.Validate(schemafind.Schema{Key: digest, Digest: digest, Raw: func() []byte {
		if raw == nil {
			raw, _ = rc.snap.InputSchema(digest)
		}
		return raw
	}}, req.Value)
	switch {
	case errors.Is(err, schemafind.ErrBadValue):
		return nil, badRequest(op, err)
	case err != nil:
		// Nothing is known about the value: an error answer, which a
		// gate cannot read as valid.
		return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: op + ": schema " + digest + ": " + err.Error()}
	}
	return a, nil
}
