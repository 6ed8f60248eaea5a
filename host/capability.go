package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/apart"
	"github.com/gatehost/gatehost/internal/guestjson"
)

// A capability is a family of host operations ("catalog.get", …) that an
// operator grants to a stage. Each lives in its own cap_*.go file and
// registers itself in init with registerCapability.
type capability interface {
	// call serves op (whose capability part is this capability's name)
	// for the evaluation described by rc. It returns the operation's
	// result, encoded as JSON by the caller, or an error: a *abi.CallError
	// is answered as is; any other error as "unavailable" with its text.
	call(ctx context.Context, rc *runContext, op string, request []byte) (any, error)
}

var capabilities = map[string]capability{}

func registerCapability(name string, c capability) {
	if _, dup := capabilities[name]; dup {
		panic("host: capability registered twice: " + name)
	}
	capabilities[name] = c
}

// knownCapabilities lists the capabilities this host can grant, sorted.
func knownCapabilities() []string { return slices.Sorted(maps.Keys(capabilities)) }

// runContext is what host functions know about the guest call in progress:
// the host, the run and the stage.
type runContext struct {
	host     *Host
	snap     *catalog.Snapshot
	granted  []string
	pipeline string
	stage    string
	runID    string
	session  string
	subject  abi.SubjectKind
	pinned   *pinnedSession
	counts   *pinnedCounts
	worktree string // RunOptions.Worktree

	mu     sync.Mutex
	denied []string // operations refused as not granted, for evidence
}

func (s *runContext) deny(op string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.denied) < 16 && !slices.Contains(s.denied, op) {
		s.denied = append(s.denied, op)
	}
}

func (s *runContext) deniedOps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.denied)
}

// badRequest is the error a capability returns for a request it cannot
// decode.
func badRequest(op string, err error) error {
	return &abi.CallError{Code: abi.ErrCodeBadRequest, Message: op + ": " + err.Error()}
}

// decodeRequest decodes a host-call request as json.Unmarshal does; those
// of every run (query.rows, schema.validate, schema.validate_many) without
// reflection (guestjson.Decode, held to encoding/json by its agreement
// tests).
func decodeRequest[T any](request []byte, req *T) error {
	if ok, err := guestjson.Decode(request, req); ok {
		return err
	}
	return json.Unmarshal(request, req)
}

// unknownOperation is the error for an operation a capability lacks.
func unknownOperation(op string) error {
	return &abi.CallError{Code: abi.ErrCodeUnknownOperation, Message: fmt.Sprintf("unknown operation %q", op)}
}

// calls implements engine.CallHandler for a Host.
type calls struct{ logger *slog.Logger }

func (c calls) Log(ctx context.Context, state any, level int32, msg string) {
	attrs := []slog.Attr{}
	if s, ok := state.(*runContext); ok {
		attrs = append(attrs, slog.String("pipeline", s.pipeline), slog.String("stage", s.stage), slog.String("run_id", s.runID))
	}
	c.logger.LogAttrs(ctx, slog.Level(level), "gate: "+msg, attrs...)
}

func (c calls) Call(ctx context.Context, state any, op string, request []byte) []byte {
	s, ok := state.(*runContext)
	if !ok {
		return abi.EncodeCallError(abi.ErrCodeCapabilityDenied, "no capability is granted outside an evaluation")
	}
	if s.host != nil && s.host.onHostCall != nil {
		s.host.onHostCall(op)
	}
	name := abi.CapabilityOf(op)
	if !slices.Contains(s.granted, name) {
		s.deny(op)
		return abi.EncodeCallError(abi.ErrCodeCapabilityDenied, fmt.Sprintf("capability %q is not granted to stage %q", name, s.stage))
	}
	capab, ok := capabilities[name]
	if !ok { // granted names are checked at load; unreachable
		return abi.EncodeCallError(abi.ErrCodeUnknownOperation, fmt.Sprintf("unknown capability %q", name))
	}
	if len(request) <= callInlineBytes {
		return serve(ctx, capab, s, op, request)
	}
	return serveApart(ctx, capab, s, op, request)
}

func serve(ctx context.Context, capab capability, s *runContext, op string, request []byte) []byte {
	if s.host != nil && s.host.onServe != nil {
		s.host.onServe(op)
	}
	return guestjson.EncodeCallAnswer(capab.call(ctx, s, op, request))
}

// callInlineBytes is the largest host-call request served on the guest's
// goroutine. Serving one is linear in its size but not cheap (decoding and
// validating up to abi.MaxHostRequestBytes takes about as long as checking
// an answer of that size, 100 ms a MiB), and the stage ends only when the
// host call returns; so a larger request is served on a goroutine of its
// own, which the stage abandons when its context ends, as it does the check
// of a large answer (checkInlineBytes).
const callInlineBytes = checkInlineBytes

// serveApart serves a large host call on a goroutine of its own and
// returns when it answers or ctx ends, whichever is first.
func serveApart(ctx context.Context, capab capability, s *runContext, op string, request []byte) []byte {
	a, err := apart.Run(ctx, func() []byte { return serve(ctx, capab, s, op, request) })
	var pe *apart.PanicError
	switch {
	case errors.As(err, &pe): // on the guest's goroutine wazero would make it a trap
		return abi.EncodeCallError(abi.ErrCodeUnavailable, fmt.Sprintf("%s: host error: %v", op, pe.Value))
	case err != nil:
		return abi.EncodeCallError(abi.ErrCodeUnavailable, fmt.Sprintf("%s: the stage ended before the host answered: %v", op, context.Cause(ctx)))
	}
	return a
}
