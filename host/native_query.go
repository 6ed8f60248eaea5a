package host

import (
	"context"
	"log/slog"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

// NativeQueryHost is an sdk.Host that serves the query capability
// in-process, through the code path a guest's call takes, so that a gate's Go
// code run natively (sdk/gatetest.Evaluate) sees exactly the answers its
// WebAssembly build sees through a host with the same domains. Other
// capabilities are not granted. Tests and benchmarks compare the two builds
// with it.
type NativeQueryHost struct{ h *Host }

// NewNativeQueryHost returns an sdk.Host with the query capability granted
// over domains.
func NewNativeQueryHost(domains map[string]Domain) *NativeQueryHost {
	return &NativeQueryHost{h: &Host{cfg: Config{Domains: domains}}}
}

// Call implements sdk.Host.
func (n *NativeQueryHost) Call(op string, req []byte) ([]byte, error) {
	rc := &runContext{host: n.h, granted: []string{abi.CapabilityQuery}}
	return sdk.DecodeAnswer(calls{slog.Default()}.Call(context.Background(), rc, op, req))
}

// CallEnvelope implements sdk.EnvelopeCaller, as the guest's host does.
func (n *NativeQueryHost) CallEnvelope(op string, req []byte) ([]byte, error) {
	rc := &runContext{host: n.h, granted: []string{abi.CapabilityQuery}}
	return calls{slog.Default()}.Call(context.Background(), rc, op, req), nil
}

// Log implements sdk.Host; it discards.
func (n *NativeQueryHost) Log(sdk.Level, string) {}
