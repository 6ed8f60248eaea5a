package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/host/domain"
)

// cmdDomain is `gatehost domain validate FILE…`: exit 0 when every catalog is
// valid, 1 when one is not, 2 on a usage error.
func cmdDomain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "Usage: gatehost domain validate [--output text|json] FILE…")
		return 0
	}
	if len(args) == 0 || args[0] != "validate" {
		fmt.Fprintln(stderr, "gatehost domain: want 'gatehost domain validate [--output text|json] FILE…'")
		return exitUsage
	}
	fs := pflag.NewFlagSet("domain validate", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", "text", "output: text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gatehost domain validate [flags] FILE…")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args[1:], func(n int) bool { return n > 0 }); done {
		return code
	}
	if *output != "text" && *output != "json" {
		fs.Usage()
		return exitUsage
	}
	type result struct {
		File          string   `json:"file"`
		Valid         bool     `json:"valid"`
		Domain        string   `json:"domain,omitempty"`
		Capabilities  int      `json:"capabilities,omitempty"`
		Views         int      `json:"views,omitempty"`
		Preconditions int      `json:"preconditions,omitempty"`
		Errors        []string `json:"errors,omitempty"`
	}
	code := 0
	var results []result
	for _, f := range fs.Args() {
		r := result{File: f}
		c, err := domain.Load(f)
		if err != nil {
			code = 1
			r.Errors = splitJoined(err)
		} else {
			r.Valid, r.Domain = true, c.Name
			r.Capabilities, r.Views, r.Preconditions = len(c.Capabilities()), len(c.Views()), c.Preconditions()
		}
		results = append(results, r)
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return code
	}
	for _, r := range results {
		if r.Valid {
			fmt.Fprintf(stdout, "VALID    %s  domain=%s  capabilities=%d  views=%d  preconditions=%d\n", r.File, r.Domain, r.Capabilities, r.Views, r.Preconditions)
			continue
		}
		fmt.Fprintf(stdout, "INVALID  %s\n", r.File)
		for _, e := range r.Errors {
			fmt.Fprintf(stdout, "  %s\n", e)
		}
	}
	return code
}

// splitJoined lists the errors of an errors.Join, one per line.
func splitJoined(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
