// Package hostkit is the conformance kit's (sdk/gatekit) door into package
// host: what the kit needs to drive a module through the real host beyond
// host's public API, kept out of that API because no embedder needs it.
// Package host fills the functions when it is initialized; they take and
// return the host's values as any because host imports this package.
package hostkit

import (
	"context"
	"encoding/json"

	"github.com/gatehost/gatehost/abi"
)

// Filled in by package host's init.
var (
	// Describe loads wasm as the host does at start (abi/SPEC.md §3.1
	// steps 2–9, with the default memory limit and load deadline) and
	// returns its descriptor: parsed, and as the module served it.
	// cacheDir is as host.Config.CacheDir, "" meaning none. The error is
	// a *host.LoadError.
	Describe func(ctx context.Context, wasm []byte, cacheDir string) (abi.Descriptor, json.RawMessage, error)

	// KnownCapabilities lists the capabilities the host can grant, sorted.
	KnownCapabilities func() []string

	// EvaluateRequest hands request, byte for byte, to the plugin of the
	// named pipeline's first stage of h (a *host.Host), with that stage's
	// grants, limits and the current catalog snapshot, and returns the
	// stage's result (a host.StageResult), decided fail-closed as in
	// Check. The host neither builds nor validates the request and records
	// nothing in the event log: the kit must see how a gate answers
	// requests the host itself never sends (malformed, empty, oversized).
	// Errors: host.ErrClosed, host.ErrUnknownPipeline.
	EvaluateRequest func(ctx context.Context, h any, pipeline string, request []byte) (any, error)
)

type partialGrantsKey struct{}

// WithPartialGrants returns a context under which host.New lets a stage
// withhold capabilities its gate declares (which it otherwise refuses), so
// that the kit and tests can check how a gate copes with a denied call.
func WithPartialGrants(ctx context.Context) context.Context {
	return context.WithValue(ctx, partialGrantsKey{}, true)
}

// PartialGrants reports whether ctx came from WithPartialGrants.
func PartialGrants(ctx context.Context) bool {
	v, _ := ctx.Value(partialGrantsKey{}).(bool)
	return v
}
