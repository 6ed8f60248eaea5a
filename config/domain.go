package config

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

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
		// Keys declares collections' key fields (collection → field), for
		// collections given as arrays of documents (documents kind only).
		Keys map[string]string `mapstructure:"keys"`
	} `mapstructure:"source"`
	// Vars set the catalog's variables (DOMAIN.md "vars"): a string, or
	// {upstream: NAME, arg: N}, an argument of an MCP upstream's command.
	Vars map[string]any `mapstructure:"vars"`
}

// openDomains loads each domain's catalog and opens its data source, the
// domains concurrently: decoding their data is most of a one-shot check's
// start. On error every source opened is closed, and the error is the one
// of the first failing domain by name, so it does not depend on timing.
func openDomains(ctx context.Context, dcs map[string]domainConfig, rel func(string) string, ups upstreams) (map[string]host.Domain, error) {
	type result struct {
		d   host.Domain
		err error
	}
	names := slices.Sorted(maps.Keys(dcs))
	results := make([]result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			d, err := openDomain(ctx, "domains."+name, dcs[name], rel, ups)
			results[i] = result{d, err}
		})
	}
	wg.Wait()
	out := map[string]host.Domain{}
	var first error
	for i, r := range results {
		switch {
		case r.err != nil && first == nil:
			first = r.err
		case r.err == nil:
			out[names[i]] = r.d
		}
	}
	if first != nil {
		for _, d := range out {
			d.Source.Close()
		}
		return nil, first
	}
	return out, nil
}

// openDomain loads one domain's catalog and opens its data source; field
// is its key path ("domains.NAME").
func openDomain(ctx context.Context, field string, dc domainConfig, rel func(string) string, ups upstreams) (host.Domain, error) {
	if dc.Catalog == "" {
		return host.Domain{}, fmt.Errorf("%s.catalog: required", field)
	}
	cat, err := domain.Load(rel(dc.Catalog))
	if err != nil {
		return host.Domain{}, fmt.Errorf("%s.catalog: %w", field, err)
	}
	if cat, err = bindVars(field+".vars", cat, dc.Vars, rel, ups); err != nil {
		return host.Domain{}, err
	}
	src, err := openSource(ctx, field+".source", dc, rel)
	if err != nil {
		return host.Domain{}, err
	}
	return host.Domain{Catalog: cat, Source: src, File: dc.Catalog}, nil
}

func openSource(ctx context.Context, field string, dc domainConfig, rel func(string) string) (datasource.DataSource, error) {
	s := dc.Source
	switch s.Kind {
	case "", "documents":
		var opts []datasource.DocumentsOption
		if len(s.Keys) > 0 {
			opts = append(opts, datasource.WithKeys(s.Keys))
		}
		switch {
		case s.Path != "" && len(s.Collections) > 0:
			return nil, fmt.Errorf("%s: give path or collections, not both", field)
		case s.Path != "":
			return wrapSrc(field + ".path")(datasource.OpenDocuments(rel(s.Path), opts...))
		case len(s.Collections) > 0:
			files := map[string]string{}
			for c, p := range s.Collections {
				files[c] = rel(p)
			}
			return wrapSrc(field + ".collections")(datasource.OpenCollections(files, opts...))
		}
		return nil, fmt.Errorf("%s: path or collections is required", field)
	case "sqlite":
		if len(s.Keys) > 0 {
			return nil, fmt.Errorf("%s.keys: sqlite takes no keys (a table's key is its own); keys are for documents", field)
		}
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
