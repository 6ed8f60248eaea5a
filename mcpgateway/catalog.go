package mcpgateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/host/catalog"
)

// route is where an exposed tool name leads.
type route struct {
	upstream int    // index in Options.Upstreams
	name     string // the tool's name at the upstream
	// outputSchema: the tool declares one, so every structuredContent of
	// its results must conform to it (MCP "Tools", output schema) — a
	// denial's Decision then travels in _meta only.
	outputSchema bool
}

// listed is one upstream's latest tools/list, all pages.
type listed struct {
	tools []*mcp.Tool
}

// exposedName is the wire name of an upstream's tool: its own name, or
// UPSTREAM.NAME when another upstream lists the same name (the
// collision-only namespacing rule, README "Put gatehost in front of an MCP
// server").
func exposedName(upstream, name string, collides bool) string {
	if collides {
		return upstream + "." + name
	}
	return name
}

// publishLocked imports every upstream's latest list into the host's
// catalog through the same importer as file catalogs (catalog.Parse, MCP
// format, the upstream as server), and publishes a new snapshot when
// something changed. The gateway's tools are those whose source is one of
// its upstreams; they are replaced as a whole. g.mu must be held.
func (g *Gateway) publishLocked() error {
	count := map[string]int{}
	for _, l := range g.lists {
		if l == nil {
			continue
		}
		names := map[string]bool{}
		for _, t := range l.tools {
			if t != nil && !names[t.Name] {
				names[t.Name] = true
				count[t.Name]++
			}
		}
	}
	var tools []catalog.Tool
	routes := map[string]route{}
	for i, l := range g.lists {
		if l == nil {
			continue
		}
		u := g.opts.Upstreams[i]
		doc, err := json.Marshal(struct {
			Tools []*mcp.Tool `json:"tools"`
		}{l.tools})
		if err != nil {
			return fmt.Errorf("upstream %s: tools/list: %w", u.Name, err)
		}
		ts, err := catalog.Parse(doc, catalog.ImportOptions{Format: catalog.FormatMCP, Server: u.Name})
		if err != nil {
			return fmt.Errorf("upstream %s: tools/list: %w", u.Name, err)
		}
		declares := map[string]bool{}
		for _, t := range l.tools {
			declares[t.Name] = t.OutputSchema != nil
		}
		for _, t := range ts {
			upstreamName := t.Name
			t.Name = exposedName(u.Name, t.Name, count[t.Name] > 1)
			if u.Trust == TrustUnverified {
				t.Provenance = catalog.ProvenanceUnverified
			}
			if t.PolicyDigest, err = catalog.PolicyDigestOf(t); err != nil {
				return fmt.Errorf("upstream %s: tools/list: %w", u.Name, err)
			}
			routes[t.Name] = route{upstream: i, name: upstreamName, outputSchema: declares[upstreamName]}
			tools = append(tools, t)
		}
	}
	store := g.h.Catalog()
	if sameTools(g.owned(store.Snapshot()), tools) {
		g.routes.Store(&routes)
		return nil
	}
	_, err := store.Update(func(b *catalog.Builder) error {
		for _, id := range b.IDs() {
			if t, _ := b.Get(id); g.owns(t) {
				if err := b.Remove(id); err != nil {
					return err
				}
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
		return fmt.Errorf("catalog update: %w", err)
	}
	g.routes.Store(&routes)
	return nil
}

// owned returns the snapshot's tools that came from this gateway's
// upstreams.
func (g *Gateway) owned(snap *catalog.Snapshot) []catalog.Tool {
	var out []catalog.Tool
	for _, t := range snap.List() {
		if g.owns(t) {
			out = append(out, t)
		}
	}
	return out
}

// owns reports whether t came from one of the gateway's upstreams:
// namespace mcp.NAME and source NAME.
func (g *Gateway) owns(t catalog.Tool) bool {
	for _, u := range g.opts.Upstreams {
		if t.Source == u.Name && strings.HasPrefix(t.ID, "mcp."+u.Name+":") {
			return true
		}
	}
	return false
}

// sameTools reports whether two tool sets agree on everything policy or
// routing reads: id, wire name and policy digest (which covers schema,
// hints, effect, provenance and source).
func sameTools(a, b []catalog.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(t catalog.Tool) string {
		return t.ID + "\x00" + t.Name + "\x00" + t.PolicyDigest + "\x00" + t.SchemaDigest
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = key(a[i]), key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}
