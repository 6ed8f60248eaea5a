package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gatehost/gatehost/host/catalog"
)

const catalogUsage = `Usage: gatehost catalog SUBCOMMAND [flags]

  show         list the configured catalog: ids, wire names, schema and policy digests,
               provenance, effects
  diff PATH    what replacing the configured catalog with the tools of PATH (a file or
               directory) would change, tool by tool, with the generations and digests
`

func cmdCatalog(_ context.Context, args []string, stdout, stderr io.Writer) int {
	sub, code, done := subcommand(args, catalogUsage, stdout, stderr)
	if done {
		return code
	}
	fs := newFlags("catalog "+sub, catalogUsage, stderr, flagConfig|flagOutput|flagFormat)
	fs.setUsage("format", "diff: format of PATH: mcp, openai, anthropic or native (default: detect)")
	server := fs.String("server", "", "diff: the MCP server PATH's tools come from (namespace mcp.<server>)")
	want, ok := map[string]int{"show": 0, "diff": 1}[sub]
	if !ok {
		fmt.Fprintf(stderr, "gatehost catalog: unknown subcommand %q\n\n%s", sub, catalogUsage)
		return exitUsage
	}
	if code, done := fs.parse(args[1:], exactly(want)); done {
		return code
	}
	cfg, err := fs.load()
	if err != nil {
		return fail(stderr, err)
	}
	store := cfg.Host.Catalog
	old := store.Snapshot()
	if sub == "show" {
		return showCatalog(old, fs.output, stdout, stderr)
	}
	tools, err := catalog.Load(fs.Arg(0), catalog.ImportOptions{Format: fs.format, Server: *server})
	if err != nil {
		return fail(stderr, err)
	}
	next, err := store.Update(func(b *catalog.Builder) error {
		for _, id := range b.IDs() {
			if err := b.Remove(id); err != nil {
				return err
			}
		}
		for _, t := range tools {
			if err := b.Add(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(stderr, err)
	}
	changes := catalog.Diff(old, next)
	if fs.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			From    uint64           `json:"from_generation"`
			To      uint64           `json:"to_generation"`
			Changes []catalog.Change `json:"changes"`
		}{old.Generation(), next.Generation(), changes}); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "catalog generation %d (%d tools) -> %d (%d tools): %d changed\n", old.Generation(), old.Len(), next.Generation(), next.Len(), len(changes))
	if len(changes) == 0 {
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TOOL\tCHANGE\tFIELDS\tOLD_DIGEST\tNEW_DIGEST")
	for _, c := range changes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.ID, c.Kind, dash(strings.Join(c.Fields, ",")), dash(short(c.OldDigest)), dash(short(c.NewDigest)))
	}
	tw.Flush()
	return 0
}

func showCatalog(s *catalog.Snapshot, output string, stdout, stderr io.Writer) int {
	if output == "json" {
		type entry struct {
			ID           string         `json:"id"`
			Name         string         `json:"name"`
			Aliases      []string       `json:"aliases,omitempty"`
			SchemaDigest string         `json:"schema_digest"`
			Provenance   string         `json:"provenance"`
			Source       string         `json:"source,omitempty"`
			Effect       string         `json:"effect"`
			Hints        *catalog.Hints `json:"hints,omitempty"`
			PolicyDigest string         `json:"policy_digest"`
		}
		out := struct {
			Generation uint64  `json:"generation"`
			Tools      []entry `json:"tools"`
		}{s.Generation(), []entry{}}
		for _, t := range s.List() {
			out.Tools = append(out.Tools, entry{t.ID, t.Name, t.Aliases, t.SchemaDigest, t.Provenance, t.Source, string(t.Effect), t.Hints, t.PolicyDigest})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "catalog generation %d: %d tools\n", s.Generation(), s.Len())
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tDIGEST\tPOLICY\tPROVENANCE\tEFFECT")
	for _, t := range s.List() {
		name := t.Name
		if len(t.Aliases) > 0 {
			name += " (" + strings.Join(t.Aliases, ", ") + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", t.ID, name, short(t.SchemaDigest), short(t.PolicyDigest), t.Provenance, t.Effect)
	}
	tw.Flush()
	return 0
}
