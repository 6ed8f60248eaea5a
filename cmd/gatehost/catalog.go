package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gatehost/gatehost/compose"
	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/host/catalog"
)

const catalogUsage = `Usage: gatehost catalog SUBCOMMAND [flags]

  show         list the configured catalog: its digest, then ids, wire names, schema and
               policy digests, provenance, effects
  diff PATH    what replacing the configured catalog with the tools of PATH (a file or
               directory) would change, tool by tool, with the generations and digests
  publish      publish the configured catalog (catalog.sources) to the PostgreSQL store
               (store.kind postgres), named by its digest; replicas with
               store.catalog: published serve it. Publishing the current one again
               changes nothing.
`

func cmdCatalog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, code, done := subcommand(args, catalogUsage, stdout, stderr)
	if done {
		return code
	}
	fs := newFlags("catalog "+sub, catalogUsage, stderr, flagConfig|flagOutput|flagFormat)
	fs.setUsage("format", "diff: format of PATH: mcp, openai, anthropic or native (default: detect)")
	server := fs.String("server", "", "diff: the MCP server PATH's tools come from (namespace mcp.<server>)")
	want, ok := map[string]int{"show": 0, "diff": 1, "publish": 0}[sub]
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
	defer cfg.Close()
	store := cfg.Host.Catalog
	old := store.Snapshot()
	switch sub {
	case "show":
		return showCatalog(old, fs.output, stdout, stderr)
	case "publish":
		return publishCatalog(ctx, cfg, fs.output, stdout, stderr)
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
			Digest     string  `json:"digest"`
			Tools      []entry `json:"tools"`
		}{s.Generation(), s.Digest(), []entry{}}
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
	fmt.Fprintf(stdout, "catalog generation %d: %d tools, digest %s\n", s.Generation(), s.Len(), s.Digest())
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

// publishCatalog publishes the configured catalog to the PostgreSQL store
// (store.Store.PublishCatalog). A store that is not PostgreSQL, and a
// catalog without tools (a config that lists no sources would otherwise
// empty every replica's catalog), are usage errors (exit 2); a store
// failure exits 1.
func publishCatalog(ctx context.Context, cfg *config.Loaded, output string, stdout, stderr io.Writer) int {
	if !cfg.Store.Postgres() {
		return fail(stderr, fmt.Errorf("%w: catalog publish: config %s: store.kind is %s; publishing needs store.kind %s, the store replicas with store.catalog: %s read",
			errUsage, cfg.File, cfg.Store.Kind, config.StorePostgres, config.CatalogPublished))
	}
	snap := cfg.Host.Catalog.Snapshot()
	if snap.Len() == 0 {
		return fail(stderr, fmt.Errorf("%w: catalog publish: config %s: the catalog (catalog.sources) has no tools; publishing it would leave every replica without tools", errUsage, cfg.File))
	}
	logger, err := newLogger(stderr, "warn", output == "json")
	if err != nil {
		return fail(stderr, err)
	}
	st, err := compose.OpenStore(ctx, cfg, compose.StoreOptions{Logger: logger, Access: compose.State})
	if err != nil {
		fmt.Fprintln(stderr, "gatehost: catalog publish:", err)
		return 1
	}
	defer st.Close()
	digest, err := st.PublishCatalog(ctx, snap)
	if err != nil {
		fmt.Fprintln(stderr, "gatehost: catalog publish:", err)
		return 1
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Digest string `json:"digest"`
			Tools  int    `json:"tools"`
			Node   string `json:"node"`
		}{digest, snap.Len(), cfg.Store.NodeID}); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	fmt.Fprintf(stdout, "published catalog %s: %d tools (node %s)\n", digest, snap.Len(), cfg.Store.NodeID)
	return 0
}
