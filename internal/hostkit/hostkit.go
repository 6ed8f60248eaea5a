// Package hostkit holds what code inside this module may ask of package host
// but an embedder's configuration must not: partial grants, for the
// conformance kit (sdk/gatekit) and the host's tests of a denied call. What
// else the kit needs from the host is host's exported API (host.Describe,
// host.KnownCapabilities, Host.EvaluateRequest).
package hostkit

import "context"

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
