//go:build wasip1

// Command flaky is a test gate that crashes the Go runtime (an unrecovered
// panic on another goroutine) when the proposal's id is "crash", and
// otherwise accepts with evidence. It shows that a trapped instance is
// replaced and the next run is served.
package main

import (
	"context"
	"runtime"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

func init() {
	sdk.Register(sdk.Gate{
		Descriptor: abi.Descriptor{Name: "flaky", Version: "0.0.1", SubjectKinds: []abi.SubjectKind{abi.SubjectProposal}},
		Evaluate: func(ctx context.Context, req sdk.Request) (abi.Response, error) {
			p, err := req.Proposal()
			if err != nil {
				return abi.Response{}, err
			}
			if p.ID == "crash" {
				done := make(chan struct{})
				go func() { panic("flaky: crash requested") }()
				runtime.Gosched()
				<-done // never closed: the panic ends the runtime first

			}
			return abi.Response{Verdict: abi.Accepted, Basis: "verified", Evidence: map[string]any{"actions": len(p.Actions)}}, nil
		},
	})
}

func main() {}
