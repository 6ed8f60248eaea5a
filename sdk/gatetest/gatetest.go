// Package gatetest runs a gate natively, in go test, through the same JSON
// encoding a module uses: the request is encoded, handed to the SDK's
// handler, and the response is checked against the ABI's response schema
// before it is decoded. Host is an in-memory capability host. It depends on
// no WebAssembly runtime; the conformance kit, which runs a compiled module
// through the real host, is package sdk/gatekit.
package gatetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/abischema"
	"github.com/gatehost/gatehost/internal/guestjson"
	"github.com/gatehost/gatehost/internal/schemafind"
	"github.com/gatehost/gatehost/sdk"
)

// Evaluate runs g on req with host h and returns the decoded response. It
// fills ABIVersion, RunID, Stage and Context.Now when they are zero. The
// error is non-nil when the response is not JSON or fails the ABI schema,
// which the real host would count as an abi_violation.
func Evaluate(ctx context.Context, g sdk.Gate, req abi.Request, h sdk.Host) (abi.Response, error) {
	if req.ABIVersion == 0 {
		req.ABIVersion = abi.MajorVersion
	}
	if req.RunID == "" {
		req.RunID = "gatetest"
	}
	if req.Stage == "" {
		req.Stage = g.Descriptor.Name
	}
	if req.Context.Now == "" {
		req.Context.Now = "2026-01-01T00:00:00Z"
	}
	body, err := json.Marshal(req)
	if err != nil {
		return abi.Response{}, fmt.Errorf("gatetest: encode request: %w", err)
	}
	out := sdk.Handle(ctx, &g, h, body)
	if err := abischema.Validate(abi.SchemaResponse, out); err != nil {
		return abi.Response{}, fmt.Errorf("gatetest: response violates the ABI: %w", err)
	}
	var resp abi.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		return abi.Response{}, fmt.Errorf("gatetest: decode response: %w", err)
	}
	return resp, nil
}

// Host is an in-memory sdk.Host: a catalog of tools and a set of granted
// capabilities. The zero value grants nothing and has an empty catalog. It
// is safe for concurrent use.
type Host struct {
	// Tools is the catalog the catalog capability answers from.
	Tools []abi.Tool
	// Generation is reported by catalog.list.
	Generation uint64
	// Granted lists granted capabilities, such as "catalog".
	Granted []string
	// SessionLookup answers session.get for the run's session; nil
	// answers as for a run without a session.
	SessionLookup func(tool string) abi.SessionGetAnswer
	// Counts answers counters.get (granted with abi.CapabilityCounters);
	// nil answers all 0, for no window.
	Counts *abi.CountersGetAnswer
	// Operations answers further operations by name, such as
	// "policy.merge", "check.run" or "query.rows", so that any gate can be
	// tested natively without a private fake host. It is consulted after
	// the grant check and before the built-in catalog and session
	// operations, which an entry replaces.
	Operations map[string]Operation

	mu   sync.Mutex
	logs []string
}

// Operation answers one capability operation: the request is its JSON. The
// result is encoded as the answer's "result"; an error that is a
// *abi.CallError is answered as is (bad_request, unknown_operation, …), any
// other as "unavailable" with its text.
type Operation func(request []byte) (any, error)

// NewHost returns a Host with the given tools and the catalog and schema
// capabilities, the two views of the catalog, granted.
func NewHost(tools ...abi.Tool) *Host {
	return &Host{Tools: tools, Granted: []string{abi.CapabilityCatalog, abi.CapabilitySchema}}
}

// Logs returns the messages the gate logged.
func (h *Host) Logs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.logs)
}

// Log implements sdk.Host.
func (h *Host) Log(level sdk.Level, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, msg)
}

// Call implements sdk.Host with the semantics of the real host's catalog
// capability. It returns the answer envelope decoded by sdk.DecodeAnswer.
func (h *Host) Call(op string, request []byte) ([]byte, error) {
	return sdk.DecodeAnswer(h.answer(op, request))
}

// SinglePass returns h as a host that also implements sdk.EnvelopeCaller,
// as the guest's host does, so sdk.Call decodes envelope and result in one
// pass: benchmarks use it to compare a gate natively with its wasm build
// like for like. (Host itself does not, so a test double that embeds it
// and overrides Call sees every call.)
func SinglePass(h *Host) sdk.Host { return singlePass{h} }

type singlePass struct{ *Host }

func (s singlePass) CallEnvelope(op string, request []byte) ([]byte, error) {
	return s.answer(op, request), nil
}

func (h *Host) answer(op string, request []byte) []byte {
	if !slices.Contains(h.Granted, abi.CapabilityOf(op)) {
		return abi.EncodeCallError(abi.ErrCodeCapabilityDenied, fmt.Sprintf("capability %q is not granted to this stage", abi.CapabilityOf(op)))
	}
	if fn, ok := h.Operations[op]; ok {
		return abi.EncodeCallAnswer(fn(request))
	}
	switch op {
	case abi.OpCatalogGet:
		var req abi.CatalogGetRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return abi.EncodeCallError(abi.ErrCodeBadRequest, err.Error())
		}
		t := h.tool(req.Name)
		if t == nil {
			return abi.EncodeCallResult(abi.CatalogGetAnswer{Found: false})
		}
		if req.KnownSchemaDigest != "" && req.KnownSchemaDigest == t.SchemaDigest && len(t.InputSchema) > 0 {
			c := *t
			c.InputSchema = nil
			return abi.EncodeCallResult(abi.CatalogGetAnswer{Found: true, Tool: &c, SchemaOmitted: true})
		}
		return abi.EncodeCallResult(abi.CatalogGetAnswer{Found: true, Tool: t})
	case abi.OpSessionGet:
		var req abi.SessionGetRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return abi.EncodeCallError(abi.ErrCodeBadRequest, err.Error())
		}
		if h.SessionLookup == nil {
			return abi.EncodeCallResult(abi.SessionGetAnswer{})
		}
		return abi.EncodeCallResult(h.SessionLookup(req.Tool))
	case abi.OpCountersGet:
		if h.Counts != nil {
			return abi.EncodeCallResult(h.Counts)
		}
		a := abi.CountersGetAnswer{Calls: map[string]int64{}, Windows: map[string]abi.CounterWindow{}, Principal: map[string]abi.CounterWindow{}}
		for _, t := range h.Tools {
			a.Calls[t.ID] = 0
		}
		return abi.EncodeCallResult(a)
	case abi.OpCatalogList:
		a := abi.CatalogListAnswer{Generation: h.Generation, Tools: []abi.ToolEntry{}}
		for _, t := range h.Tools {
			a.Tools = append(a.Tools, abi.ToolEntry{ID: t.ID, Name: t.Name, Aliases: t.Aliases})
		}
		return abi.EncodeCallResult(a)
	case abi.OpSchemaValidate:
		return guestjson.EncodeCallAnswer(h.validate(request))
	case abi.OpSchemaValidateMany:
		return guestjson.EncodeCallAnswer(h.validateMany(request))
	}
	return abi.EncodeCallError(abi.ErrCodeUnknownOperation, fmt.Sprintf("unknown operation %q", op))
}

// validateMany answers schema.validate_many as the real host does, each
// item as this Host answers schema.validate (Operations included, so a
// test that replaces schema.validate replaces every item's answer); an
// item answered with an error fails the call with that error's code.
func (h *Host) validateMany(request []byte) (any, error) {
	var req abi.SchemaValidateManyRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: err.Error()}
	}
	if err := req.Check(); err != nil {
		return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: err.Error()}
	}
	a := abi.SchemaValidateManyAnswer{Items: make([]abi.SchemaValidateAnswer, len(req.Items))}
	if _, replaced := h.Operations[abi.OpSchemaValidate]; !replaced {
		// As the real host: the items checked once, none re-encoded.
		for i := range req.Items {
			one, err := h.validateChecked(&req.Items[i])
			if err != nil {
				return nil, itemError(i, err)
			}
			a.Items[i] = one
		}
		return a, nil
	}
	for i := range req.Items {
		b, err := json.Marshal(req.Items[i])
		if err != nil {
			return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: fmt.Sprintf("items[%d]: %v", i, err)}
		}
		result, err := sdk.DecodeAnswer(h.answer(abi.OpSchemaValidate, b))
		if err == nil {
			err = json.Unmarshal(result, &a.Items[i])
		}
		if err != nil {
			return nil, itemError(i, err)
		}
	}
	return a, nil
}

// itemError names item i in err, keeping a call error's code.
func itemError(i int, err error) error {
	var ce *abi.CallError
	if errors.As(err, &ce) {
		return &abi.CallError{Code: ce.Code, Message: fmt.Sprintf("items[%d]: %s", i, ce.Message)}
	}
	return fmt.Errorf("items[%d]: %w", i, err)
}

// tool returns the tool whose id, wire name or alias is name, or nil.
func (h *Host) tool(name string) *abi.Tool {
	for i := range h.Tools {
		t := &h.Tools[i]
		if t.ID == name || t.Name == name || slices.Contains(t.Aliases, name) {
			return t
		}
	}
	return nil
}

// compiledSchemas is the native host's compiled-schema cache, shared by
// every Host as the real host's is.
var compiledSchemas = schemafind.NewCache(0)

// validate answers schema.validate through the host's own implementation
// (internal/schemafind), so a gate's native tests see the findings its
// wasm build gets from the real host. Tools are found by id, wire name or
// alias, or by schema_digest; a tool without input_schema has none, and
// every value is valid against it.
func (h *Host) validate(request []byte) (any, error) {
	var req abi.SchemaValidateRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: err.Error()}
	}
	if err := req.Check(); err != nil {
		return nil, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: err.Error()}
	}
	return h.validateChecked(&req)
}

// validateChecked answers a schema.validate request Check accepted.
func (h *Host) validateChecked(req *abi.SchemaValidateRequest) (abi.SchemaValidateAnswer, error) {
	var t *abi.Tool
	if req.Tool != "" {
		t = h.tool(req.Tool)
	} else if i := slices.IndexFunc(h.Tools, func(t abi.Tool) bool { return t.SchemaDigest == req.SchemaDigest }); i >= 0 {
		t = &h.Tools[i]
	}
	if t == nil {
		return abi.SchemaValidateAnswer{Found: false}, nil
	}
	a, err := compiledSchemas.Validate(schemafind.FromTool(t), req.Value)
	if errors.Is(err, schemafind.ErrBadValue) {
		return abi.SchemaValidateAnswer{}, &abi.CallError{Code: abi.ErrCodeBadRequest, Message: err.Error()}
	}
	return a, err
}
