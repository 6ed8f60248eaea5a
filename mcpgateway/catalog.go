package mcpgateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// route is where an exposed tool name leads.
type route struct {
	upstream int    // index in Options.Upstreams
	name     string // the tool's name at the upstream
	// outputSchema: the tool declares one, so every structuredContent of
	// its results must conform to it (MCP "Tools", output schema) — a
	// denial's Decision then travels in _meta only.
	outputSchema bool
	// def is the tool as the baseline pins it (as its upstream sent it):
	// what the model is shown, under the exposed name.
	def json.RawMessage
}

// exposedName is the wire name of an upstream's tool: its own name, or
// UPSTREAM.NAME when another upstream's tool has the same name or one a
// person could take for it (nameSkeleton) — the collision-only
// namespacing rule, docs/MCP-GATEWAY.md "The edge: trust baseline, identity, caps".
func exposedName(upstream, name string, collides bool) string {
	if collides {
		return upstream + "." + name
	}
	return name
}

// publishLocked makes the host's catalog the baseline: every approved
// definition of every configured upstream, imported through the same
// importer as file catalogs (catalog.Parse, MCP format, the upstream as
// server). A session is decided against what was approved, never against
// what one connection listed last; whether a connection's listing still
// matches is the edge's check (baselineRefusal). A definition the catalog
// refuses (a name that is another tool's id, say) leaves that one tool
// out, logged, and never the others. g.mu must be held.
func (g *Gateway) publishLocked(set *baseline.Set) error {
	// A store may hand out a new Set for unchanged content (PostgreSQL
	// reads it afresh): the catalog is rebuilt only when an entry changed.
	if set == g.published || (g.published != nil && set.Equal(g.published)) {
		g.published = set
		return nil
	}
	tools, routes := g.buildCatalog(set)
	store := g.Host().Catalog()
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
				// One tool the catalog cannot hold (its name is another
				// tool's id or alias) is left out; the rest go on.
				g.opts.Logger.Warn("mcp gateway: tool refused by the catalog; left out", "tool", t.ID, "error", err)
				delete(routes, t.Name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("catalog update: %w", err)
	}
	g.routes.Store(&routes)
	g.published = set
	return nil
}

// buildCatalog converts the definitions of set into catalog records under
// their exposed names, and the routes to them.
func (g *Gateway) buildCatalog(set *baseline.Set) ([]catalog.Tool, map[string]route) {
	upIndex := map[string]int{}
	for i, u := range g.opts.Upstreams {
		upIndex[u.Name] = i
	}
	type item struct {
		up  int
		def *mcp.Tool
		raw json.RawMessage
	}
	var items []item
	skeletons := map[string]map[int]bool{}
	for _, e := range set.Entries() {
		i, ok := upIndex[e.Upstream]
		if !ok {
			continue // an upstream no longer configured
		}
		if _, instr := e.Instructions(); instr {
			continue // an upstream's instructions, not a tool
		}
		var t mcp.Tool
		if err := json.Unmarshal(e.Definition, &t); err != nil || t.Name != e.Tool {
			g.opts.Logger.Warn("mcp gateway: baseline entry not usable; tool left out", "upstream", e.Upstream, "tool", e.Tool)
			continue
		}
		items = append(items, item{i, &t, e.Definition})
		sk := nameSkeleton(t.Name)
		if skeletons[sk] == nil {
			skeletons[sk] = map[int]bool{}
		}
		skeletons[sk][i] = true
	}
	var tools []catalog.Tool
	routes := map[string]route{}
	for _, it := range items {
		u := g.opts.Upstreams[it.up]
		collides := len(skeletons[nameSkeleton(it.def.Name)]) > 1
		view, err := catalogView(it.raw)
		var ts []catalog.Tool
		if err == nil {
			ts, err = catalog.Parse(view, catalog.ImportOptions{Format: catalog.FormatMCP, Server: u.Name})
		}
		if err != nil || len(ts) != 1 {
			g.opts.Logger.Warn("mcp gateway: tool refused by the catalog; left out", "upstream", u.Name, "tool", it.def.Name, "error", err)
			continue
		}
		t := ts[0]
		t.Name = exposedName(u.Name, it.def.Name, collides)
		if u.Trust == TrustUnverified {
			t.Provenance = catalog.ProvenanceUnverified
		}
		if t.PolicyDigest, err = catalog.PolicyDigestOf(t); err != nil {
			g.opts.Logger.Warn("mcp gateway: tool refused by the catalog; left out", "upstream", u.Name, "tool", it.def.Name, "error", err)
			continue
		}
		if _, dup := routes[t.Name]; dup {
			g.opts.Logger.Warn("mcp gateway: two tools would share one wire name; both are namespaced", "name", t.Name)
		}
		routes[t.Name] = route{upstream: it.up, name: it.def.Name, outputSchema: it.def.OutputSchema != nil, def: it.raw}
		tools = append(tools, t)
	}
	return tools, routes
}

// catalogMembers are the members of an MCP tool that the catalog reads
// (catalog.Parse, MCP format).
var catalogMembers = []string{"name", "description", "inputSchema", "annotations"}

// catalogView is the catalog's document of one pinned definition: those
// members exactly as pinned, and no other. A member the catalog does not
// read must not refuse the tool, as one that is another catalog format's
// key would ("id", "source", ...): a change in any member is the trust
// baseline's to see, by digest.
func catalogView(def json.RawMessage) ([]byte, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(def, &all); err != nil {
		return nil, err
	}
	view := map[string]json.RawMessage{}
	for _, k := range catalogMembers {
		if v, ok := all[k]; ok {
			view[k] = v
		}
	}
	return json.Marshal(struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}{[]map[string]json.RawMessage{view}})
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

// routeTo finds the exposed name of an upstream's tool.
func routeTo(routes map[string]route, up int, name string) (string, bool) {
	for exposed, r := range routes {
		if r.upstream == up && r.name == name {
			return exposed, true
		}
	}
	return "", false
}

// sortedExposed lists the exposed names in order, for deterministic lists.
func sortedExposed(routes map[string]route) []string {
	out := make([]string, 0, len(routes))
	for n := range routes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
