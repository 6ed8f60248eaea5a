package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/safefile"
	"github.com/gatehost/gatehost/policy"
)

const policyUsage = `Usage: gatehost policy SUBCOMMAND [flags]

  schema --catalog FILE              print the Cedar schema generated from a tool catalog
  validate --catalog FILE POLICY…    type-check Cedar policy files against that schema
  test FIXTURE…                      run policy test files: calls by principals, with the
                                     verdict and determining policies expected

A catalog file is read as gatehost catalog diff reads PATH (--format, --server).
--claim NAME=TYPE declares a principal claim (String, Long, Bool, Set<String>,
Set<Long>), as the policy gate's claims config does; --window DURATION a
counting window of context.session (1h, 24h, 7d), as its windows config does.
docs/POLICY.md has the
request shape and the schema mapping.
Exit codes: 0 valid / every case passes, 1 invalid / a case fails, 2 usage or input error.
`

// maxPolicyFileBytes caps a policy or fixture file.
const maxPolicyFileBytes = 4 << 20

func cmdPolicy(_ context.Context, args []string, stdout, stderr io.Writer) int {
	sub, code, done := subcommand(args, policyUsage, stdout, stderr)
	if done {
		return code
	}
	want, ok := map[string]func(int) bool{
		"schema":   exactly(0),
		"validate": func(n int) bool { return n > 0 },
		"test":     func(n int) bool { return n > 0 },
	}[sub]
	if !ok {
		fmt.Fprintf(stderr, "gatehost policy: unknown subcommand %q\n\n%s", sub, policyUsage)
		return exitUsage
	}
	if sub == "test" { // a test file names its own catalog and claims
		fs := newFlags("policy test", policyUsage, stderr, flagOutput)
		if code, done := fs.parse(args[1:], want); done {
			return code
		}
		return policyTest(fs.Args(), fs.output == "json", stdout, stderr)
	}
	fs := newFlags("policy "+sub, policyUsage, stderr, flagOutput|flagFormat)
	fs.setUsage("format", "format of the --catalog file: mcp, openai, anthropic or native (default: detect)")
	catalogPath := fs.String("catalog", "", "the tool catalog file (or directory)")
	server := fs.String("server", "", "the MCP server the catalog's tools come from (namespace mcp.<server>)")
	claims := fs.StringArray("claim", nil, "declare a principal claim NAME=TYPE (repeatable)")
	windows := fs.StringArray("window", nil, "declare a counting window of context.session, such as 1h (repeatable)")
	if code, done := fs.parse(args[1:], want); done {
		return code
	}
	if *catalogPath == "" {
		return fail(stderr, fmt.Errorf("%w: policy %s: --catalog FILE is required", errUsage, sub))
	}
	o, err := claimOptions(*claims)
	if err != nil {
		return fail(stderr, err)
	}
	o.Windows = *windows
	if err := policy.ValidateOptions(o); err != nil {
		return fail(stderr, fmt.Errorf("%w: --window: %w", errUsage, err))
	}
	tools, _, err := loadPolicyCatalog(*catalogPath, fs.format, *server)
	if err != nil {
		return fail(stderr, err)
	}
	s, err := policy.NewSchema(tools, o)
	if err != nil {
		return fail(stderr, err)
	}
	if sub == "schema" {
		return policySchema(s, fs.output == "json", stdout)
	}
	return policyValidate(s, fs.Args(), fs.output == "json", stdout, stderr)
}

func claimOptions(decls []string) (policy.Options, error) {
	o := policy.Options{Claims: map[string]policy.ClaimType{}}
	for _, d := range decls {
		name, typ, ok := strings.Cut(d, "=")
		if !ok || name == "" {
			return o, fmt.Errorf("%w: --claim %q: want NAME=TYPE", errUsage, d)
		}
		t, err := policy.ParseClaimType(typ)
		if err != nil {
			return o, fmt.Errorf("%w: --claim %s: %w", errUsage, name, err)
		}
		o.Claims[name] = t
	}
	return o, nil
}

// loadPolicyCatalog reads a catalog file into the tools the schema is
// generated from, and a lookup by wire name, alias or id.
func loadPolicyCatalog(path, format, server string) ([]abi.Tool, policy.Lookup, error) {
	list, err := catalog.Load(path, catalog.ImportOptions{Format: format, Server: server})
	if err != nil {
		return nil, nil, err
	}
	store, err := catalog.NewStore(list...)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	snap := store.Snapshot()
	var tools []abi.Tool
	for _, t := range snap.List() {
		tools = append(tools, t.ABI())
	}
	lookup := func(name string) (abi.Tool, bool) {
		t, ok := snap.Get(name)
		if !ok {
			return abi.Tool{}, false
		}
		return t.ABI(), true
	}
	return tools, lookup, nil
}

func policySchema(s *policy.Schema, asJSON bool, stdout io.Writer) int {
	if !asJSON {
		fmt.Fprint(stdout, s.Text)
		return 0
	}
	type omitted struct {
		Tool     string `json:"tool"`
		Argument string `json:"argument"`
		Reason   string `json:"reason"`
	}
	out := struct {
		Schema  string    `json:"schema"`
		Tools   int       `json:"tools"`
		Omitted []omitted `json:"omitted"`
	}{Schema: s.Text, Tools: len(s.Tools), Omitted: []omitted{}}
	for _, t := range s.Tools {
		for _, o := range t.Omitted {
			out.Omitted = append(out.Omitted, omitted{Tool: t.Action, Argument: o.Path, Reason: o.Reason})
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return 0
}

// readPolicies reads policy files as sources named by their paths.
func readPolicies(paths []string) ([]policy.Source, error) {
	srcs := make([]policy.Source, 0, len(paths))
	for _, p := range paths {
		b, err := safefile.ReadFile(p, maxPolicyFileBytes)
		if err != nil {
			return nil, fmt.Errorf("policy file: %w", err)
		}
		srcs = append(srcs, policy.Source{File: p, Text: string(b)})
	}
	return srcs, nil
}

func policyValidate(s *policy.Schema, paths []string, asJSON bool, stdout, stderr io.Writer) int {
	srcs, err := readPolicies(paths)
	if err != nil {
		return fail(stderr, err)
	}
	out := struct {
		Valid    bool             `json:"valid"`
		Policies int              `json:"policies"`
		Problems []policy.Problem `json:"problems"`
		Error    string           `json:"error,omitempty"`
	}{Problems: []policy.Problem{}}
	set, err := policy.Parse(srcs)
	if err != nil {
		out.Error = err.Error()
	} else {
		out.Policies = len(set.Policies)
		out.Problems = append(out.Problems, s.Validate(set)...)
		out.Valid = len(out.Problems) == 0
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	} else {
		switch {
		case out.Error != "":
			fmt.Fprintf(stdout, "INVALID  %s\n", out.Error)
		case out.Valid:
			fmt.Fprintf(stdout, "VALID    %d policies against %d tools\n", out.Policies, len(s.Tools))
		default:
			for _, p := range out.Problems {
				fmt.Fprintln(stdout, p.String())
			}
			fmt.Fprintf(stdout, "INVALID  %d problems in %d policies\n", len(out.Problems), out.Policies)
		}
	}
	if !out.Valid {
		return 1
	}
	return 0
}

// fixtureResult is one fixture file's outcome.
type fixtureResult struct {
	File     string              `json:"file"`
	Pass     bool                `json:"pass"`
	Error    string              `json:"error,omitempty"`
	Problems []policy.Problem    `json:"problems,omitempty"`
	Cases    []policy.CaseResult `json:"cases"`
}

// runFixture loads a fixture's catalog and policies (relative to the
// fixture), validates the policies against the catalog's schema and runs
// the cases. An invalid policy fails the file before any case runs.
func runFixture(file string) (fixtureResult, error) {
	r := fixtureResult{File: file, Cases: []policy.CaseResult{}}
	b, err := safefile.ReadFile(file, maxPolicyFileBytes)
	if err != nil {
		return r, err
	}
	f, err := policy.DecodeFixture(b)
	if err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(file), p)
	}
	tools, lookup, err := loadPolicyCatalog(rel(f.Catalog.Path), f.Catalog.Format, f.Catalog.Server)
	if err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	paths := make([]string, len(f.Policies))
	for i, p := range f.Policies {
		paths[i] = rel(p)
	}
	srcs, err := readPolicies(paths)
	if err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	set, err := policy.Parse(srcs)
	if err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	o := f.ClaimOptions()
	s, err := policy.NewSchema(tools, o)
	if err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	if r.Problems = s.Validate(set); len(r.Problems) > 0 {
		return r, nil
	}
	for _, t := range tools {
		f.ToolIDs = append(f.ToolIDs, t.ID)
	}
	r.Cases = f.Run(policy.NewEngine(set, o), lookup)
	r.Pass = true
	for _, c := range r.Cases {
		r.Pass = r.Pass && c.Pass
	}
	return r, nil
}

func policyTest(files []string, asJSON bool, stdout, stderr io.Writer) int {
	var results []fixtureResult
	code := 0
	for _, file := range files {
		r, err := runFixture(file)
		if err != nil {
			var fe *policy.FixtureError
			if !asJSON && !errors.As(err, &fe) {
				return fail(stderr, err)
			}
			r.Error = err.Error()
		}
		if !r.Pass {
			code = 1
		}
		results = append(results, r)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return code
	}
	for _, r := range results {
		switch {
		case r.Error != "":
			fmt.Fprintf(stdout, "ERROR  %s\n", r.Error)
			continue
		case len(r.Problems) > 0:
			fmt.Fprintf(stdout, "FAIL   %s: the policies do not validate\n", r.File)
			for _, p := range r.Problems {
				fmt.Fprintf(stdout, "  %s\n", p)
			}
			continue
		}
		pass := 0
		for _, c := range r.Cases {
			if c.Pass {
				pass++
				continue
			}
			fmt.Fprintf(stdout, "FAIL   %s: %s: %s\n", r.File, c.Name, c.Failure)
		}
		word := "PASS "
		if !r.Pass {
			word = "FAIL "
		}
		fmt.Fprintf(stdout, "%s  %s: %d/%d cases\n", word, r.File, pass, len(r.Cases))
	}
	return code
}
