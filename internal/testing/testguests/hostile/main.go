//go:build wasip1

// Command hostile is a test gate for failures where the Go runtime's
// behaviour is the point. The proposal's id picks what it does:
//
//	panic            panics in Evaluate (the SDK recovers: gate_panic)
//	nil              dereferences a nil pointer (recovered: gate_panic)
//	goroutine-panic  panics on another goroutine: the runtime dies (plugin_trap)
//	loop             spins forever (plugin_timeout)
//	oom              allocates until the runtime runs out of memory
//	wasi             tries to read files and the environment; accepts only if
//	                 that escapes the sandbox, otherwise fails (gate_error)
//	stdout           writes 4 MiB to stdout and stderr, then dies (plugin_trap)
//	anything else    accepts, with the number of evaluations this instance
//	                 has served as evidence
//
// The evaluation count shows whether a run was served by a fresh instance.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/sdk"
)

var (
	evaluations int
	sink        [][]byte
	nilMap      *struct{ n int }
)

func init() {
	sdk.Register(sdk.Gate{
		Descriptor: abi.Descriptor{Name: "hostile", Version: "0.0.1", SubjectKinds: []abi.SubjectKind{abi.SubjectProposal}},
		Evaluate: func(ctx context.Context, req sdk.Request) (abi.Response, error) {
			evaluations++
			p, err := req.Proposal()
			if err != nil {
				return abi.Response{}, err
			}
			switch p.ID {
			case "panic":
				panic("hostile: deliberate panic")
			case "nil":
				return abi.Response{Verdict: abi.Accepted, Evidence: map[string]any{"n": nilMap.n}}, nil
			case "goroutine-panic":
				die("hostile: panic on another goroutine")
			case "loop":
				for {
				}
			case "oom":
				for {
					sink = append(sink, make([]byte, 1<<20))
				}
			case "wasi":
				return wasi()
			case "stdout":
				line := []byte(strings.Repeat("x", 1023) + "\n")
				for range 4096 {
					os.Stdout.Write(line)
					os.Stderr.Write(line)
				}
				die("hostile: after the flood")
			}
			return abi.Response{Verdict: abi.Accepted, Basis: "verified", Evidence: map[string]any{"evaluations": evaluations}}, nil
		},
	})
}

// die ends the Go runtime with an unrecovered panic on another goroutine.
func die(msg string) {
	done := make(chan struct{})
	go func() { panic(msg) }()
	runtime.Gosched()
	<-done
}

func wasi() (abi.Response, error) {
	var errs []error
	for _, f := range []string{"/etc/passwd", "/etc/hostname", "go.mod", "."} {
		if b, err := os.ReadFile(f); err == nil {
			return escaped("file "+f, string(b))
		} else {
			errs = append(errs, err)
		}
	}
	if entries, err := os.ReadDir("/"); err == nil && len(entries) > 0 {
		return escaped("dir /", entries[0].Name())
	} else if err != nil {
		errs = append(errs, err)
	}
	if env := os.Environ(); len(env) > 0 {
		return escaped("environment", env[0])
	}
	if len(os.Args) > 1 {
		return escaped("arguments", os.Args[1])
	}
	return abi.Response{}, fmt.Errorf("sandbox held: %w", errors.Join(errs...))
}

func escaped(what, got string) (abi.Response, error) {
	return abi.Response{Verdict: abi.Accepted, Basis: "waived", Evidence: map[string]any{"escaped": what, "got": got}}, nil
}

func main() {}
