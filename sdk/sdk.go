// Package sdk is the guest side of the gatehost ABI for gates written in
// standard Go. A gate author writes one EvaluateFunc and a descriptor,
// registers them, and builds the package with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gate.wasm ./path/to/main
//
// The SDK provides the exports of abi/SPEC.md (gate_abi_version, gate_alloc,
// gate_describe, gate_evaluate), owns the memory handoff, turns a returned
// error or a recovered panic into a well-formed inconclusive Response, and
// wraps the host functions in typed calls (Host, CatalogGet, CatalogList).
//
// A minimal gate:
//
//	package main
//
//	import "github.com/gatehost/gatehost/sdk"
//
//	func init() { sdk.Register(myGate) }
//	func main() {}
//
// The same Gate runs natively in go test through sdk/gatetest, over the same
// JSON encoding.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/internal/runecut"
)

// Gate is a gate: what it is and how it evaluates.
type Gate struct {
	// Descriptor is returned by gate_describe. ABIVersion is filled in by
	// the SDK when zero.
	Descriptor abi.Descriptor
	// Evaluate decides about one subject. A returned error, or a panic,
	// becomes an inconclusive Response with reason ReasonGateError or
	// ReasonGatePanic; it is never an acceptance.
	Evaluate EvaluateFunc
}

// EvaluateFunc evaluates one request.
type EvaluateFunc func(ctx context.Context, req Request) (abi.Response, error)

// Request is the decoded request envelope plus the host it came from.
type Request struct {
	abi.Request
	// Host answers capability calls for this request. Calls are only
	// valid while Evaluate runs.
	Host Host
}

// Principal returns the authenticated caller of the run (abi/SPEC.md §5.3,
// minor 6); false when the caller is anonymous, or the host is older than
// minor 6. A gate must treat false as an unauthenticated caller.
func (r Request) Principal() (*abi.Principal, bool) {
	return r.Context.Principal, r.Context.Principal != nil
}

// Proposal decodes the subject of a proposal request.
func (r Request) Proposal() (abi.Proposal, error) {
	if r.SubjectKind != abi.SubjectProposal {
		return abi.Proposal{}, fmt.Errorf("sdk: subject kind is %q, not %q", r.SubjectKind, abi.SubjectProposal)
	}
	var p abi.Proposal
	if err := guestjson.DecodeProposal(r.Subject, &p); err != nil {
		return abi.Proposal{}, fmt.Errorf("sdk: decode proposal: %w", err)
	}
	return p, nil
}

// ToolCall decodes the subject of a tool_call request.
func (r Request) ToolCall() (abi.ToolCall, error) {
	if r.SubjectKind != abi.SubjectToolCall {
		return abi.ToolCall{}, fmt.Errorf("sdk: subject kind is %q, not %q", r.SubjectKind, abi.SubjectToolCall)
	}
	var c abi.ToolCall
	if err := guestjson.DecodeToolCall(r.Subject, &c); err != nil {
		return abi.ToolCall{}, fmt.Errorf("sdk: decode tool call: %w", err)
	}
	return c, nil
}

// Reason codes the SDK puts on the inconclusive responses it makes: abi's,
// named here too so a gate reads them next to Inconclusive.
const (
	ReasonGateError        = abi.ReasonGateError
	ReasonGatePanic        = abi.ReasonGatePanic
	ReasonBadRequest       = abi.ReasonBadRequest
	ReasonUnsupportedABI   = abi.ReasonUnsupportedABI
	ReasonNotRegistered    = abi.ReasonNotRegistered
	ReasonResponseEncoding = abi.ReasonResponseEncoding
	ReasonConfigNotHeld    = abi.ReasonConfigNotHeld
)

// maxErrorText caps error text copied into evidence so a failing gate cannot
// flood the response.
const maxErrorText = 1024

// Handle runs g on one request given as JSON and returns the response as JSON.
// It never panics and always returns a well-formed response. gate_evaluate
// calls it in the guest; sdk/gatetest calls it natively.
func Handle(ctx context.Context, g *Gate, h Host, request []byte) []byte {
	resp := evaluate(ctx, g, h, request)
	// The bytes json.Marshal gives, without its reflection in the guest.
	out, err := guestjson.EncodeResponse(resp)
	if err != nil {
		out, _ = json.Marshal(Inconclusive(ReasonResponseEncoding, err))
	}
	return out
}

func evaluate(ctx context.Context, g *Gate, h Host, request []byte) (resp abi.Response) {
	if g == nil || g.Evaluate == nil {
		return Inconclusive(ReasonNotRegistered, errors.New("no gate registered"))
	}
	// Not encoding/json: in a guest its reflection and scanner cost
	// milliseconds per request; guestjson decodes the same values.
	var req abi.Request
	if err := guestjson.DecodeRequest(request, &req); err != nil {
		return Inconclusive(ReasonBadRequest, err)
	}
	if req.ABIVersion != abi.MajorVersion {
		return Inconclusive(ReasonUnsupportedABI, fmt.Errorf("request ABI major %d, gate speaks %d", req.ABIVersion, abi.MajorVersion))
	}
	if req.ConfigDigest != "" {
		config, reason, err := held.resolve(req.ConfigDigest, req.Config)
		if err != nil {
			return Inconclusive(reason, err)
		}
		req.Config = config
	}
	defer func() {
		if p := recover(); p != nil {
			resp = Inconclusive(ReasonGatePanic, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()
	// Only a run granted the catalog may be answered from the catalog
	// the instance remembers, only one granted the session from the
	// session answers it remembers, and only one granted the query
	// capability from the domain answers: one instance serves the stages
	// of every grant.
	if p, ok := h.(runPinner); ok {
		pins := runPins{generation: req.Context.CatalogGeneration,
			catalog: slices.Contains(req.Context.Capabilities, abi.CapabilityCatalog)}
		if slices.Contains(req.Context.Capabilities, abi.CapabilitySession) && abi.IsSessionDigest(req.Context.SessionDigest) {
			pins.session = req.Context.SessionDigest
		}
		if slices.Contains(req.Context.Capabilities, abi.CapabilityQuery) && abi.IsQueryDigest(req.Context.QueryDigest) {
			pins.query = req.Context.QueryDigest
		}
		if pins.catalog || pins.session != "" || pins.query != "" {
			h = p.pinRun(pins)
		}
	}
	resp, err := g.Evaluate(ctx, Request{Request: req, Host: h})
	if err != nil {
		return Inconclusive(ReasonGateError, err)
	}
	return resp
}

// runPinner is a Host that can become the Host of one run: a pinnedRun
// whose catalog calls answer from the run's catalog generation and whose
// session calls answer from the run's session set.
type runPinner interface {
	pinRun(runPins) Host
}

// runPins is what a run's Host is pinned to.
type runPins struct {
	catalog    bool   // the run is granted the catalog: generation names its snapshot
	generation uint64 // context.catalog_generation
	session    string // context.session_digest of a run granted the session; "" for none
	query      string // context.query_digest of a run granted the query capability; "" for none
}

// pinnedRun is a Host pinned to one run (the module's Host during a run).
// A native Host is not one: tests run many hosts, with catalogs of the
// same generation, in one process.
type pinnedRun interface {
	Host
	pins() runPins
}

// Inconclusive returns an inconclusive response with a snake_case reason and,
// when err is non-nil, its text (cut to 1 KiB on a rune boundary) as
// evidence.
func Inconclusive(reason string, err error) abi.Response {
	r := abi.Response{Verdict: abi.Inconclusive, Reason: reason}
	if err != nil {
		r.Evidence = map[string]any{"error": runecut.Cut(err.Error(), maxErrorText, "…")}
	}
	return r
}

// DescriptorJSON returns the JSON gate_describe serves for g.
func DescriptorJSON(g *Gate) ([]byte, error) {
	if g == nil {
		return nil, errors.New("sdk: no gate registered")
	}
	d := g.Descriptor
	if d.ABIVersion == 0 {
		d.ABIVersion = abi.MajorVersion
	}
	d.ConfigCache = true // evaluate keeps configs (heldConfigs)
	return json.Marshal(d)
}

var registered *Gate

// Register makes g the gate this module serves. Call it from an init
// function of the main package; a later call replaces an earlier one.
func Register(g Gate) { registered = &g }
