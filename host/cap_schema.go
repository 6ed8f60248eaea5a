package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/schemafind"
)

// The schema capability (abi.CapabilitySchema) validates values against
// input schemas of the run's pinned catalog snapshot (operations
// schema.validate and, since minor 12, schema.validate_many; abi/SPEC.md
// §7.13), natively: a gate compiles no schema.
func init() { registerCapability(abi.CapabilitySchema, schemaCapability{}) }

// compiledSchemas holds compiled input schemas by schema digest, shared by
// every run and every Host of the process: a digest is the SHA-256 of the
// canonical schema (SPEC §8), so one digest compiles to one schema whatever
// catalog or generation it came from. It is bounded (least recently used
// out first), so a catalog that churns cannot grow memory without bound.
var compiledSchemas = schemafind.NewCache(0)

type schemaCapability struct{}

func (schemaCapability) call(ctx context.Context, rc *runContext, op string, request []byte) (any, error) {
	switch op {
	case abi.OpSchemaValidate:
		var req abi.SchemaValidateRequest
		if err := decodeRequest(request, &req); err != nil {
			return nil, badRequest(op, err)
		}
		if err := req.Check(); err != nil {
			return nil, badRequest(op, err)
		}
		return validateOne(rc, op, -1, &req)
	case abi.OpSchemaValidateMany:
		var req abi.SchemaValidateManyRequest
		if err := decodeRequest(request, &req); err != nil {
			return nil, badRequest(op, err)
		}
		if err := req.Check(); err != nil {
			return nil, badRequest(op, err)
		}
		// One answer for all or none: an item the host cannot validate
		// fails the call, which a gate cannot read as valid.
		a := abi.SchemaValidateManyAnswer{Items: make([]abi.SchemaValidateAnswer, len(req.Items))}
		for i := range req.Items {
			if err := ctx.Err(); err != nil {
				return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: fmt.Sprintf("%s: items[%d]: %v", op, i, context.Cause(ctx))}
			}
			one, err := validateOne(rc, op, i, &req.Items[i])
			if err != nil {
				return nil, err
			}
			a.Items[i] = one
		}
		return a, nil
	}
	return nil, unknownOperation(op)
}

// validateOne answers one checked schema.validate request, item i of op's
// request (-1: the request itself).
func validateOne(rc *runContext, op string, i int, req *abi.SchemaValidateRequest) (abi.SchemaValidateAnswer, error) {
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
	if err == nil {
		return a, nil
	}
	where := op
	if i >= 0 {
		where = fmt.Sprintf("%s: items[%d]", op, i)
	}
	switch {
	case errors.Is(err, schemafind.ErrBadValue):
		return abi.SchemaValidateAnswer{}, badRequest(where, err)
	default:
		// Nothing is known about the value: an error answer, which a
		// gate cannot read as valid.
		return abi.SchemaValidateAnswer{}, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: where + ": schema " + digest + ": " + err.Error()}
	}
}
