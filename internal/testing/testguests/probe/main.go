//go:build wasip1

// Command probe is a test gate that reads the catalog twice during one
// evaluation and reports what it saw, so tests can show that a run sees one
// catalog snapshot however the catalog changes meanwhile. It accepts with
// that evidence, or fails (inconclusive) when the catalog is not granted.
package main

import (
	"context"
	"runtime"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

func init() {
	sdk.Register(sdk.Gate{
		Descriptor: abi.Descriptor{
			Name: "probe", Version: "0.0.1",
			SubjectKinds: []abi.SubjectKind{abi.SubjectProposal},
			Capabilities: []string{"catalog"},
		},
		Evaluate: func(ctx context.Context, req sdk.Request) (abi.Response, error) {
			first, err := sdk.CatalogList(req.Host)
			if err != nil {
				return abi.Response{}, err
			}
			for range 50 {
				runtime.Gosched()
			}
			second, err := sdk.CatalogList(req.Host)
			if err != nil {
				return abi.Response{}, err
			}
			return abi.Response{Verdict: abi.Accepted, Basis: "verified", Evidence: map[string]any{
				"context_generation": req.Context.CatalogGeneration,
				"first_generation":   first.Generation,
				"second_generation":  second.Generation,
				"first_tools":        len(first.Tools),
				"second_tools":       len(second.Tools),
			}}, nil
		},
	})
}

func main() {}
