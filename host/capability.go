package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
)

// CapabilityCatalog lets a stage read the run's pinned catalog snapshot
// (operations catalog.get and catalog.list).
const CapabilityCatalog = "catalog"

// knownCapabilities are the capabilities this host can grant.
var knownCapabilities = []string{CapabilityCatalog}

// callState is what host functions know about the guest call in progress.
type callState struct {
	snap     *catalog.Snapshot
	granted  []string
	pipeline string
	stage    string
	runID    string

	mu     sync.Mutex
	denied []string // operations refused as not granted, for evidence
}

func (s *callState) deny(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.denied) < 16 && !slices.Contains(s.denied, op) {
		s.denied = append(s.denied, op)
	}
}

func (s *callState) deniedOps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.denied)
}

// calls implements engine.CallHandler for a Host.
type calls struct{ logger *slog.Logger }

func (c calls) Log(ctx context.Context, state any, level int32, msg string) {
	attrs := []slog.Attr{}
	if s, ok := state.(*callState); ok {
		attrs = append(attrs, slog.String("pipeline", s.pipeline), slog.String("stage", s.stage), slog.String("run_id", s.runID))
	}
	c.logger.LogAttrs(ctx, slog.Level(level), "gate: "+msg, attrs...)
}

func (c calls) Call(ctx context.Context, state any, op string, request []byte) []byte {
	s, ok := state.(*callState)
	if !ok {
		return callError(abi.ErrCodeCapabilityDenied, "no capability is granted outside an evaluation")
	}
	capName := abi.CapabilityOf(op)
	if !slices.Contains(s.granted, capName) {
		s.deny(op)
		return callError(abi.ErrCodeCapabilityDenied, fmt.Sprintf("capability %q is not granted to stage %q", capName, s.stage))
	}
	switch op {
	case abi.OpCatalogGet:
		var req abi.CatalogGetRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return callError(abi.ErrCodeBadRequest, "catalog.get: "+err.Error())
		}
		t, found := s.snap.Get(req.Name)
		if !found {
			return callResult(abi.CatalogGetAnswer{Found: false})
		}
		at := t.ABI()
		return callResult(abi.CatalogGetAnswer{Found: true, Tool: &at})
	case abi.OpCatalogList:
		return callResult(abi.CatalogListAnswer{Generation: s.snap.Generation(), Tools: s.snap.Entries()})
	}
	return callError(abi.ErrCodeUnknownOperation, fmt.Sprintf("unknown operation %q", op))
}

func callResult(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return callError(abi.ErrCodeUnavailable, err.Error())
	}
	out, _ := json.Marshal(abi.CallAnswer{Result: b})
	return out
}

func callError(code, msg string) []byte {
	out, _ := json.Marshal(abi.CallAnswer{Error: &abi.CallError{Code: code, Message: msg}})
	return out
}
