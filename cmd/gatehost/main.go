// Command gatehost runs gates — sandboxed WebAssembly checks an AI agent's
// planned actions must pass — from the command line.
//
//	gatehost check [--config F] [--pipeline NAME] [--output text|json] [--format F] SUBJECT|-
//	gatehost serve [--config F] [--listen ADDR] [flags]
//	gatehost mcp [--config F] [--pipeline NAME] [--listen ADDR] [-- UPSTREAM...]
//	gatehost log verify [--config F | --log FILE] [--chain NAME] [--anchor HASH] [--output text|json]
//	gatehost log export [--config F] [--chain NAME] --out FILE [--output text|json]
//	gatehost session create|activate|revoke|rebuild|show [--config F] --session ID [TOOL...]
//	gatehost catalog show|diff|publish [--config F] [--output text|json] [PATH]
//	gatehost merge-verify --repo PATH --base REF --head REF [--footprint F] [--waiver F] [flags]
//	gatehost domain validate [--output text|json] FILE…
//	gatehost policy schema|validate|test [--catalog FILE] [--output text|json] …
//	gatehost plugin inspect|check|pin|new [flags] …
//	gatehost bench [--config F] --pipeline P [-n N] [--concurrency C] [--output text|json] SUBJECT|-
//	gatehost version | --version
//	gatehost help [COMMAND]
//	gatehost completion bash|zsh|fish
//
// Exit codes of check and merge-verify: 0 accepted, 1 rejected, 3 inconclusive, 2 a usage,
// config or input error. Of log verify: 0 the chain holds, 1 it does not,
// 2 a usage or config error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitAccepted     = 0
	exitRejected     = 1
	exitUsage        = 2
	exitInconclusive = 3
)

const usage = `gatehost runs gates: sandboxed WebAssembly checks an AI agent's actions must pass.

Usage:
  gatehost check [flags] SUBJECT|-   check a subject (a file, or - for stdin) with a pipeline
  gatehost serve [flags]             serve the HTTP decision API (POST /v1/pipelines/NAME/check)
  gatehost mcp [flags] [-- CMD...]   an MCP gateway: gate every tools/call to MCP servers
  gatehost log verify [flags]        verify the event log's hash chain (every chain of a PostgreSQL store)
  gatehost log export [flags]        write a chain of a PostgreSQL store as a log file that log verify --log checks
  gatehost session SUB [flags]       create, activate, revoke, rebuild or show an agent session's tools
  gatehost approvals page [flags]    serve the approval page on its own, over the shared approvals store
  gatehost catalog SUB [flags]       show the catalog, diff it against another file, or publish it to the store
  gatehost merge-verify [flags]      verify a git branch's changes with a merge pipeline
  gatehost domain validate FILE…     validate domain catalogs (domain.yaml)
  gatehost policy SUB [flags]        print the Cedar schema of a catalog, validate policies, run policy tests
  gatehost plugin SUB [flags]        inspect, check (conformance kit), pin or scaffold (new) a gate module
  gatehost bench [flags] SUBJECT|-   time a pipeline: latency percentiles, throughput, allocations
  gatehost version                   print the version and ABI (also --version)
  gatehost help [COMMAND]            this text, or a command's flags
  gatehost completion bash|zsh|fish  print a shell completion script

Run 'gatehost COMMAND --help' for a command's flags.
Exit codes of check and merge-verify: 0 accepted, 1 rejected, 3 inconclusive, 2 usage/config/input error.
Exit codes of domain validate: 0 valid, 1 invalid, 2 usage error.
`

// version, when set at link time with -ldflags "-X main.version=…", is
// printed instead of what the build info says (see buildVersion).
var version = ""

func main() {
	// A closed stdout or stderr (gatehost check … | head -1) is an EPIPE
	// error to handle, not a signal that kills the process with exit 141
	// in place of the verdict's exit code.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return cmdCheck(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "log":
		if len(args) == 2 && (args[1] == "--help" || args[1] == "-h") {
			fmt.Fprintln(stdout, "Usage: gatehost log verify|export [flags]   (gatehost log verify --help lists them)")
			return 0
		}
		switch {
		case len(args) >= 2 && args[1] == "verify":
			return cmdLogVerify(ctx, args[2:], stdout, stderr)
		case len(args) >= 2 && args[1] == "export":
			return cmdLogExport(ctx, args[2:], stdout, stderr)
		}
		fmt.Fprintln(stderr, "gatehost log: want 'gatehost log verify' or 'gatehost log export'")
		return exitUsage
	case "session":
		return cmdSession(ctx, args[1:], stdout, stderr)
	case "approvals":
		return cmdApprovals(ctx, args[1:], stdout, stderr)
	case "catalog":
		return cmdCatalog(ctx, args[1:], stdout, stderr)
	case "merge-verify":
		return cmdMergeVerify(ctx, args[1:], stdout, stderr)
	case "domain":
		return cmdDomain(ctx, args[1:], stdout, stderr)
	case "policy":
		return cmdPolicy(ctx, args[1:], stdout, stderr)
	case "plugin":
		return cmdPlugin(ctx, args[1:], stdout, stderr)
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "gatehost %s (ABI v%d.%d)\n", buildVersion(), abiMajor, abiMinor)
		return 0
	case "completion":
		return cmdCompletion(args[1:], stdout, stderr)
	case "help":
		if len(args) > 1 && args[1] != "help" {
			// "help CMD" is "CMD --help"; for log and the commands with
			// subcommands the usage lists them.
			return run(ctx, append(args[1:], "--help"), stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	case "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "gatehost: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// newLogger logs to stderr, as text for people or JSON for programs.
func newLogger(w io.Writer, level string, json bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: %w", errUsage, level, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// fail reports err and returns exit code 2: every error before a decision is
// a usage, config or input error.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "gatehost:", err)
	return exitUsage
}

// errUsage marks errors that exit with code 2 because of how gatehost was
// called.
var errUsage = errors.New("usage")
