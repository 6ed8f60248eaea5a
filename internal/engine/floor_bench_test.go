package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// BenchmarkTrivialGuest is the guest's part of host.BenchmarkTrivialGate:
// the same SDK gate (prefixdeny) and the request the host sends it, its
// config held, called on one instance without the host's run around it
// (no subject check, answer check, record or worker hand-off), with the
// interrupt rewrite, with the runtime's own check instead, and with no
// check at all ("none", where the build allows it: the floor the rewrite
// is measured against). What host.BenchmarkTrivialGate measures beyond it
// is the host's.
func BenchmarkTrivialGuest(b *testing.B) {
	path, err := testwasm.Go("internal/testing/testguests/prefixdeny")
	if err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	config := json.RawMessage(`{"denyPrefixes":["delete_"]}`)
	sum := sha256.Sum256(config)
	req := abi.Request{ABIVersion: abi.MajorVersion, MinorVersion: abi.MinorVersion, RunID: "r", Pipeline: "p", Stage: "deny",
		SubjectKind: abi.SubjectProposal, Subject: json.RawMessage(`{"id":"p","actions":[{"id":"a","type":"tool_call","tool":"read_file","parameters":{"path":"x"}}]}`),
		ConfigDigest: abi.ConfigDigestPrefix + hex.EncodeToString(sum[:]), Context: abi.Context{Now: "2026-01-01T00:00:00Z"}}
	for _, tc := range []struct {
		name string
		mode Interrupt
	}{{"rewrite", InterruptRewrite}, {"runtime-check", InterruptRuntime}, {"none", InterruptNone}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			e, err := New(ctx, Options{MemoryLimitPages: 1024, Calls: nopCalls{}, Interrupt: tc.mode})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(ctx)
			m, err := e.Compile(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			inst, err := m.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			first := req
			first.Config = config // the first request carries it; the gate holds it then
			evaluate := func(r abi.Request) {
				in, _ := json.Marshal(r)
				out, err := inst.Evaluate(ctx, nil, in, 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				var resp abi.Response
				if err := json.Unmarshal(out, &resp); err != nil || resp.Verdict != abi.Accepted {
					b.Fatalf("%s: %v", out, err)
				}
			}
			evaluate(first)
			in, _ := json.Marshal(req)
			for b.Loop() {
				if _, err := inst.Evaluate(ctx, nil, in, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
