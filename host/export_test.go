package host

import (
	"context"
	"log/slog"

	"github.com/gatehost/gatehost/sdk"
)

// NativeQueryHost serves the query capability in-process through the same
// code path a guest's call takes (calls.Call), so a gate run natively sees
// exactly the answers its wasm build sees.
type NativeQueryHost struct{ h *Host }

// NewNativeQueryHost returns an sdk.Host with the query capability granted
// over domains.
func NewNativeQueryHost(domains map[string]Domain) *NativeQueryHost {
	return &NativeQueryHost{h: &Host{cfg: Config{Domains: domains}}}
}

func (n *NativeQueryHost) Call(op string, req []byte) ([]byte, error) {
	rc := &runContext{host: n.h, granted: []string{CapabilityQuery}}
	return sdk.DecodeAnswer(calls{slog.Default()}.Call(context.Background(), rc, op, req))
}

func (n *NativeQueryHost) Log(sdk.Level, string) {}
