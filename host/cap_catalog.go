package host

import (
	"context"
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
)

// The catalog capability (abi.CapabilityCatalog) lets a stage read the run's
// pinned catalog snapshot (operations catalog.get and catalog.list;
// abi/SPEC.md §7.7).
func init() { registerCapability(abi.CapabilityCatalog, catalogCapability{}) }

type catalogCapability struct{}

func (catalogCapability) call(_ context.Context, rc *runContext, op string, request []byte) (any, error) {
	switch op {
	case abi.OpCatalogGet:
		var req abi.CatalogGetRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, badRequest(op, err)
		}
		t, found := rc.snap.Get(req.Name)
		if !found {
			return abi.CatalogGetAnswer{Found: false}, nil
		}
		at := t.ABI()
		a := abi.CatalogGetAnswer{Found: true, Tool: &at}
		// The gate holds this schema already: do not make it decode the
		// schema again on every run.
		if req.KnownSchemaDigest != "" && req.KnownSchemaDigest == at.SchemaDigest && len(at.InputSchema) > 0 {
			at.InputSchema, a.SchemaOmitted = nil, true
		}
		return a, nil
	case abi.OpCatalogList:
		return abi.CatalogListAnswer{Generation: rc.snap.Generation(), Tools: rc.snap.Entries()}, nil
	}
	return nil, unknownOperation(op)
}
