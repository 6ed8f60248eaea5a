package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/datasource/sqlsource"
	"github.com/gatehost/gatehost/host/domain"
)

// domainConfig is one entry of the config's domains map.
type domainConfig struct {
	Catalog string `mapstructure:"catalog"`
	Source  struct {
		// Kind is documents (default) or sqlite.
		Kind        string            `mapstructure:"kind"`
		Path        string            `mapstructure:"path"`
		Collections map[string]string `mapstructure:"collections"`
	} `mapstructure:"source"`
}

// openDomains loads each domain's catalog and opens its data source. On error
// the sources opened so far are closed.
func openDomains(ctx context.Context, dcs map[string]domainConfig, rel func(string) string) (map[string]host.Domain, error) {
	out := map[string]host.Domain{}
	closeAll := func() {
		for _, d := range out {
			d.Source.Close()
		}
	}
	for name, dc := range dcs {
		field := "domains." + name
		if dc.Catalog == "" {
			closeAll()
			return nil, fmt.Errorf("%s.catalog: required", field)
		}
		cat, err := domain.Load(rel(dc.Catalog))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s.catalog: %w", field, err)
		}
		src, err := openSource(ctx, field+".source", dc, rel)
		if err != nil {
			closeAll()
			return nil, err
		}
		out[name] = host.Domain{Catalog: cat, Source: src}
	}
	return out, nil
}

func openSource(ctx context.Context, field string, dc domainConfig, rel func(string) string) (datasource.DataSource, error) {
	s := dc.Source
	switch s.Kind {
	case "", "documents":
		switch {
		case s.Path != "" && len(s.Collections) > 0:
			return nil, fmt.Errorf("%s: give path or collections, not both", field)
		case s.Path != "":
			return wrapSrc(field + ".path")(datasource.OpenDocuments(rel(s.Path)))
		case len(s.Collections) > 0:
			files := map[string]string{}
			for c, p := range s.Collections {
				files[c] = rel(p)
			}
			return wrapSrc(field + ".collections")(datasource.OpenCollections(files))
		}
		return nil, fmt.Errorf("%s: path or collections is required", field)
	case "sqlite":
		if s.Path == "" || len(s.Collections) > 0 {
			return nil, fmt.Errorf("%s: sqlite takes path (the database file) only", field)
		}
		src, err := sqlsource.OpenSQLite(ctx, rel(s.Path))
		if err != nil {
			return nil, fmt.Errorf("%s.path: %w", field, err)
		}
		return src, nil
	}
	return nil, fmt.Errorf("%s.kind: %q is not documents or sqlite", field, s.Kind)
}

func wrapSrc(field string) func(*datasource.Documents, error) (datasource.DataSource, error) {
	return func(s *datasource.Documents, err error) (datasource.DataSource, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		return s, nil
	}
}

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

func closeDomains(ds map[string]host.Domain) {
	for _, d := range ds {
		d.Source.Close()
	}
}
