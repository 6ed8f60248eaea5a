package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/sdk/gatekit"
)

const pluginUsage = `Usage:
  gatehost plugin inspect [--output text|json] MODULE.wasm|builtin:GATE
  gatehost plugin inspect --config F [--output text|json] PLUGIN
  gatehost plugin check [flags] MODULE.wasm      run the conformance kit (sdk/gatekit)
  gatehost plugin pin [--config F] [PLUGIN...]   write the plugins' sha256 pins into the config file
  gatehost plugin new [flags] NAME               scaffold a gate module in ./NAME

Exit codes of check: 0 conforms, 1 does not, 2 usage or input error.
`

func cmdPlugin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return exitUsage
	}
	switch args[0] {
	case "inspect":
		return cmdPluginInspect(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdPluginCheck(ctx, args[1:], stdout, stderr)
	case "pin":
		return cmdPluginPin(ctx, args[1:], stdout, stderr)
	case "new":
		return cmdPluginNew(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, pluginUsage)
		return 0
	}
	fmt.Fprintf(stderr, "gatehost plugin: unknown subcommand %q\n\n%s", args[0], pluginUsage)
	return exitUsage
}

// exactly returns an argument-count check for parseFlags.
func exactly(n int) func(int) bool { return func(got int) bool { return got == n } }

// checkOutput validates an --output flag.
func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return fmt.Errorf("%w: --output %q: want text or json", errUsage, output)
	}
	return nil
}

// parseFlags parses args into fs. done is true when the command should end
// now with code: after --help (0), a flag error, or an argument count nargs
// refuses (2, with the usage printed).
func parseFlags(fs *pflag.FlagSet, args []string, nargs func(int) bool) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0, true
		}
		// pflag says nothing itself under ContinueOnError.
		fmt.Fprintf(fs.Output(), "gatehost %s: %v\n", fs.Name(), err)
		fs.Usage()
		return exitUsage, true
	}
	if !nargs(fs.NArg()) {
		fs.Usage()
		return exitUsage, true
	}
	return 0, false
}

// inspection is what plugin inspect reports.
type inspection struct {
	Path string `json:"path"`
	// Plugin is the config's plugin inspected (--config F PLUGIN).
	Plugin string `json:"plugin,omitempty"`
	// Builtin is the built-in gate whose installed module Path is
	// (builtin:GATE, or a plugin given as builtin: GATE).
	Builtin string `json:"builtin,omitempty"`
	// Pin is the plugin's sha256 pin in the config, if any.
	Pin        string              `json:"pin,omitempty"`
	Size       int                 `json:"size"`
	SHA256     string              `json:"sha256"`
	ABIVersion int                 `json:"abi_version,omitempty"`
	Descriptor json.RawMessage     `json:"descriptor,omitempty"`
	LoadError  string              `json:"load_error,omitempty"`
	Module     *gatekit.ModuleInfo `json:"module"`
	Memory     map[string]string   `json:"memory,omitempty"`
}

func cmdPluginInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plugin inspect", `Usage: gatehost plugin inspect [--output text|json] MODULE.wasm|builtin:GATE
       gatehost plugin inspect --config F [--output text|json] PLUGIN

builtin:GATE is the installed module of a built-in gate (exec, merge,
policy, preconditions, static-verify): GATE.wasm in $GATEHOST_PLUGIN_DIR, then in
PREFIX/lib/gatehost/plugins beside PREFIX/bin/gatehost. With --config, PLUGIN
is a plugin of that config (plugins.PLUGIN), by path or builtin.
`, stderr, flagOutput|flagConfig)
	fs.setUsage("config", "config file whose plugin PLUGIN to inspect")
	if code, done := fs.parse(args, exactly(1)); done {
		return code
	}
	output := &fs.output
	in, err := inspectTarget(fs)
	if err != nil {
		return fail(stderr, err)
	}
	wasm, err := safefile.ReadFile(in.Path, host.MaxModuleFileBytes)
	if err != nil {
		return fail(stderr, err)
	}
	sum := sha256.Sum256(wasm)
	in.Size, in.SHA256 = len(wasm), hex.EncodeToString(sum[:])
	in.Module, err = gatekit.Inspect(ctx, wasm)
	if err != nil {
		return fail(stderr, fmt.Errorf("%s: %w", in.Path, err))
	}
	code := 0
	if in.Pin != "" && !strings.EqualFold(in.Pin, in.SHA256) {
		// The host refuses to load it: say so in the exit code too.
		code = 1
	}
	if len(in.Module.Problems) == 0 {
		d, raw, err := gatekit.Describe(ctx, wasm, "")
		if err != nil {
			in.LoadError = err.Error()
		} else {
			in.ABIVersion, in.Descriptor = d.ABIVersion, raw
		}
	} else {
		in.LoadError = "the module's shape breaks the ABI; see problems"
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(in)
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if in.Plugin != "" {
		fmt.Fprintf(tw, "plugin\t%s (%s)\n", in.Plugin, fs.config)
	}
	if in.Builtin != "" {
		fmt.Fprintf(tw, "builtin\t%s\n", in.Builtin)
	}
	fmt.Fprintf(tw, "module\t%s\n", in.Path)
	fmt.Fprintf(tw, "size\t%d bytes\n", in.Size)
	fmt.Fprintf(tw, "sha256\t%s\n", in.SHA256)
	switch {
	case in.Pin == "" && in.Plugin != "":
		fmt.Fprintf(tw, "pin\tnone (gatehost plugin pin writes it)\n")
	case code != 0:
		fmt.Fprintf(tw, "pin\t%s: DOES NOT MATCH; the host refuses to load this module\n", in.Pin)
	case in.Pin != "":
		fmt.Fprintf(tw, "pin\tmatches\n")
	}
	if in.ABIVersion != 0 {
		fmt.Fprintf(tw, "abi\tv%d (gate_abi_version and descriptor agree; host speaks v%d.%d)\n", in.ABIVersion, abiMajor, abiMinor)
	}
	if m := in.Module.Memory; m != nil {
		max := "none declared (the stage's memory limit applies)"
		if m.MaxPages != nil {
			max = fmt.Sprintf("%d pages (%s)", *m.MaxPages, pages(*m.MaxPages))
		}
		fmt.Fprintf(tw, "memory\tmin %d pages (%s), max %s\n", m.MinPages, pages(m.MinPages), max)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nexports:")
	for _, e := range in.Module.Exports {
		fmt.Fprintf(stdout, "  %-6s %s %s\n", e.Kind, e.Name, e.Signature)
	}
	fmt.Fprintln(stdout, "\nimports:")
	if len(in.Module.Imports) == 0 {
		fmt.Fprintln(stdout, "  (none)")
	}
	for _, i := range in.Module.Imports {
		fmt.Fprintf(stdout, "  %-6s %s.%s %s\n", i.Kind, i.Module, i.Name, i.Signature)
	}
	if len(in.Module.Problems) > 0 {
		fmt.Fprintln(stdout, "\nproblems:")
		for _, p := range in.Module.Problems {
			fmt.Fprintln(stdout, "  "+p)
		}
	}
	if in.LoadError != "" {
		fmt.Fprintf(stdout, "\ndescriptor: does not load: %s\n", in.LoadError)
		return code
	}
	var pretty strings.Builder
	var v any
	_ = json.Unmarshal(in.Descriptor, &v)
	b, _ := json.MarshalIndent(v, "  ", "  ")
	pretty.Write(b)
	fmt.Fprintf(stdout, "\ndescriptor:\n  %s\n", pretty.String())
	return code
}

// inspectTarget is what plugin inspect's argument names: a module file, a
// built-in gate's installed module (builtin:GATE), or with --config a
// plugin of the config.
func inspectTarget(fs *commonFlags) (inspection, error) {
	arg := fs.Arg(0)
	if fs.Changed("config") {
		l, err := fs.load()
		if err != nil {
			return inspection{}, err
		}
		defer l.Close()
		name := strings.ToLower(arg) // plugin names are case-insensitive
		p, ok := l.Host.Plugins[name]
		if !ok {
			return inspection{}, fmt.Errorf("config %s: plugins.%s: no such plugin", l.File, name)
		}
		return inspection{Path: p.Path, Plugin: name, Builtin: l.Builtins[name], Pin: p.SHA256}, nil
	}
	if gate, ok := strings.CutPrefix(arg, "builtin:"); ok {
		path, err := config.ResolveBuiltin(gate)
		if err != nil {
			return inspection{}, fmt.Errorf("%s: %w", arg, err)
		}
		return inspection{Path: path, Builtin: gate}, nil
	}
	return inspection{Path: arg}, nil
}

func pages(n uint32) string {
	b := uint64(n) * 65536
	if b >= 1<<20 {
		return fmt.Sprintf("%g MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

func cmdPluginCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plugin check", "Usage: gatehost plugin check [flags] MODULE.wasm\n", stderr, flagConfig|flagOutput)
	fs.setUsage("config", "gatehost config whose catalog, domains, sessions, policy and checks the gate's capabilities read (default: none)")
	casesDir := fs.String("cases", "", "directory of case files (*.json: note, subject, config, want_verdict, want_codes, …)")
	stageConfig := fs.String("stage-config", "", "stage config, JSON, for the kit's probes and cases without their own")
	budgetTime := fs.Duration("budget-time", gatekit.DefaultBudgetTime, "time budget per evaluation")
	budgetMemory := fs.String("budget-memory", "64MiB", "memory budget (linear memory limit)")
	budgetOversized := fs.Duration("budget-oversized-time", gatekit.DefaultBudgetOversizedTime, "time budget of the oversized probe requests")
	oversized := fs.String("oversized", "1MiB", "size of the oversized probe requests (the host sends subjects up to 4MiB)")
	verbose := fs.BoolP("verbose", "v", false, "list every request the kit sent, not only failures")
	if code, done := fs.parse(args, exactly(1)); done {
		return code
	}
	configPath, output := &fs.config, &fs.output
	mem, err := config.ParseSize(*budgetMemory)
	if err != nil {
		return fail(stderr, fmt.Errorf("%w: --budget-memory: %w", errUsage, err))
	}
	over, err := config.ParseSize(*oversized)
	if err != nil || over == 0 || over > 64<<20 {
		return fail(stderr, fmt.Errorf("%w: --oversized %q: want a size from 1B to 64MiB", errUsage, *oversized))
	}
	opts := gatekit.Options{Budget: gatekit.Budget{Time: *budgetTime, Memory: uint64(mem), OversizedTime: *budgetOversized}, OversizedBytes: int(over)}
	if *stageConfig != "" {
		if !json.Valid([]byte(*stageConfig)) {
			return fail(stderr, fmt.Errorf("%w: --stage-config is not JSON", errUsage))
		}
		opts.Config = json.RawMessage(*stageConfig)
	}
	if *casesDir != "" {
		if opts.Cases, err = gatekit.LoadCases(*casesDir); err != nil {
			return fail(stderr, err)
		}
	}
	if *configPath != "" {
		cfg, err := fs.load()
		if err != nil {
			return fail(stderr, err)
		}
		defer cfg.Close()
		opts.Host = host.Config{Catalog: cfg.Host.Catalog, Domains: cfg.Host.Domains, Sessions: cfg.Host.Sessions,
			Policy: cfg.Host.Policy, Checks: cfg.Host.Checks, CacheDir: cfg.Host.CacheDir}
	}
	wasm, err := safefile.ReadFile(fs.Arg(0), host.MaxModuleFileBytes)
	if err != nil {
		return fail(stderr, err)
	}
	start := time.Now()
	r, err := gatekit.Check(ctx, wasm, opts)
	if err != nil {
		return fail(stderr, err)
	}
	code := 0
	if len(r.Failures) > 0 {
		code = 1
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return code
	}
	name := fs.Arg(0)
	if r.Descriptor != nil {
		name = fmt.Sprintf("%s (%s %s)", fs.Arg(0), r.Descriptor.Name, r.Descriptor.Version)
	}
	fmt.Fprintf(stdout, "gatehost plugin check %s\nsha256 %s, %d bytes; budget %v and %s per evaluation (%v for the %s oversized requests)\n\n",
		name, r.SHA256, r.Size, r.Budget.Time, *budgetMemory, r.Budget.OversizedTime, *oversized)
	if *verbose {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, res := range r.Results {
			what := string(res.Verdict)
			if res.Reason != "" {
				what += " (" + res.Reason + ")"
			}
			if len(res.Codes) > 0 {
				what += " " + strings.Join(res.Codes, ",")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%v\n", res.Case, what, res.Duration.Round(10*time.Microsecond))
		}
		tw.Flush()
		fmt.Fprintln(stdout)
	}
	for _, c := range []string{gatekit.CheckModule, gatekit.CheckDescriptor, gatekit.CheckSubjectKinds, gatekit.CheckMalformed,
		gatekit.CheckResponse, gatekit.CheckEvidence, gatekit.CheckTrap, gatekit.CheckDeterminism,
		gatekit.CheckCapabilities, gatekit.CheckBudget, gatekit.CheckCase} {
		fmt.Fprintf(stdout, "%-8s %s\n", strings.ToUpper(r.Checks[c]), c)
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(stdout, "\n%d failures:\n", len(r.Failures))
		for _, f := range r.Failures {
			fmt.Fprintf(stdout, "  %s\n", indentMore(f.Error()))
		}
	}
	cases := 0
	for _, res := range r.Results {
		if strings.HasPrefix(res.Case, "case/") {
			cases++
		}
	}
	verdict := "conforms"
	if code != 0 {
		verdict = "DOES NOT CONFORM"
	}
	fmt.Fprintf(stdout, "\n%s: %d requests (%d author cases), %d failures; slowest %v (%s); took %v\n",
		verdict, len(r.Results), cases, len(r.Failures), r.MaxDuration.Round(time.Microsecond), r.Slowest, time.Since(start).Round(time.Millisecond))
	return code
}

func indentMore(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
