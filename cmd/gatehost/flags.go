package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/config"
)

// commonFlag selects one of the flags several commands share.
type commonFlag uint

const (
	flagConfig commonFlag = 1 << iota
	flagPipeline
	flagOutput
	flagFormat
	flagSession
	flagRequestID
	flagLogLevel
)

// commonFlags is a command's flag set with the shared flags it takes, each
// with one spelling, default and help text everywhere.
type commonFlags struct {
	*pflag.FlagSet
	stderr io.Writer
	has    commonFlag

	config    string // --config: the config file ("" is ./gatehost.yaml)
	pipeline  string // --pipeline
	output    string // --output: text or json
	format    string // --format: a subject format ("" detects)
	session   string // --session: the agent session
	requestID string // --request-id
	logLevel  string // --log-level (default warn)

	// upstreams are MCP upstreams given on the command line (gatehost
	// mcp's -- command), for domain vars read from one.
	upstreams map[string][]string
}

// newFlags makes the flag set of command name with the shared flags in
// has; usage is printed, then the flags, on --help and on a usage error.
func newFlags(name, usage string, stderr io.Writer, has commonFlag) *commonFlags {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &commonFlags{FlagSet: fs, stderr: stderr, has: has}
	for _, f := range []struct {
		flag          commonFlag
		p             *string
		name, def, is string
	}{
		{flagConfig, &c.config, "config", "", "config file (default ./gatehost.yaml)"},
		{flagPipeline, &c.pipeline, "pipeline", "", "pipeline to run (default: the only one configured)"},
		{flagOutput, &c.output, "output", "text", "output: text or json"},
		{flagFormat, &c.format, "format", "", "subject format: native, mcp, openai or anthropic (default: detect)"},
		{flagSession, &c.session, "session", "", "agent session the subject belongs to"},
		{flagRequestID, &c.requestID, "request-id", "", "caller's id for the run, recorded in the event log"},
		{flagLogLevel, &c.logLevel, "log-level", "warn", "log level: debug, info, warn, error"},
	} {
		if has&f.flag != 0 {
			fs.StringVar(f.p, f.name, f.def, f.is)
		}
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return c
}

// setUsage rewords a shared flag's help text for this command.
func (c *commonFlags) setUsage(name, usage string) { c.Lookup(name).Usage = usage }

// setDefault changes a shared flag's default for this command.
func (c *commonFlags) setDefault(name, def string) {
	f := c.Lookup(name)
	f.DefValue = def
	_ = f.Value.Set(def)
}

// parse parses args, checks their count with nargs and --output's value.
// When done, the command returns code: 0 after --help, 2 otherwise.
func (c *commonFlags) parse(args []string, nargs func(int) bool) (code int, done bool) {
	if code, done := parseFlags(c.FlagSet, args, nargs); done {
		return code, true
	}
	if c.has&flagOutput != 0 {
		if err := checkOutput(c.output); err != nil {
			return fail(c.stderr, err), true
		}
	}
	return 0, false
}

// setup makes the logger — at --log-level to stderr, as JSON when
// --output is json — and reads --config.
func (c *commonFlags) setup() (*slog.Logger, *config.Loaded, error) {
	logger, err := newLogger(c.stderr, c.logLevel, c.output == "json")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := c.load()
	return logger, cfg, err
}

// load reads --config.
func (c *commonFlags) load() (*config.Loaded, error) {
	return config.LoadWith(c.config, config.Options{Upstreams: c.upstreams})
}

// subcommand reads the subcommand of a command whose usage lists them:
// with none, or with --help, the usage is printed and the command returns
// code (0 after --help, 2 without a subcommand).
func subcommand(args []string, usage string, stdout, stderr io.Writer) (sub string, code int, done bool) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, usage)
		return "", 0, true
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return "", exitUsage, true
	}
	return args[0], 0, false
}
