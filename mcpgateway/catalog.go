package mcpgateway

import (
	"encoding/json"
	"fmt"
	"maps"
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
	// id is the tool's catalog id.
	id string
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
				if r, ok := routes[t.Name]; ok && r.id == t.ID {
					delete(routes, t.Name) // its own route: never another tool's
				}
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
// their exposed names, and the routes to them. Every exposed name leads to
// exactly one tool, whatever the upstreams list (exposeNames); a tool that
// could still take another's name or id is left out, never the other.
func (g *Gateway) buildCatalog(set *baseline.Set) ([]catalog.Tool, map[string]route) {
	upIndex := map[string]int{}
	for i, u := range g.opts.Upstreams {
		upIndex[u.Name] = i
	}
	var items []exposure
	for _, e := range set.Entries() {
		i, ok := upIndex[e.Upstream]
		if !ok {
			continue // an upstream no longer configured
		}
		if _, instr := e.Instructions(); instr {
			continue // an upstream's instructions, not a tool
		}
		u := g.opts.Upstreams[i]
		var def mcp.Tool
		if err := json.Unmarshal(e.Definition, &def); err != nil || def.Name != e.Tool {
			g.opts.Logger.Warn("mcp gateway: baseline entry not usable; tool left out", "upstream", e.Upstream, "tool", e.Tool)
			continue
		}
		view, err := catalogView(e.Definition)
		var ts []catalog.Tool
		if err == nil {
			ts, err = catalog.Parse(view, catalog.ImportOptions{Format: catalog.FormatMCP, Server: u.Name})
		}
		if err != nil || len(ts) != 1 {
			g.opts.Logger.Warn("mcp gateway: tool refused by the catalog; left out", "upstream", u.Name, "tool", def.Name, "error", err)
			continue
		}
		items = append(items, exposure{up: i, upstream: u.Name, def: &def, raw: e.Definition, tool: ts[0]})
	}
	g.exposeNames(items)
	var tools []catalog.Tool
	routes := map[string]route{}
	for _, it := range items {
		if it.exposed == "" {
			continue // left out by exposeNames, logged
		}
		u := g.opts.Upstreams[it.up]
		t := it.tool
		t.Name = it.exposed
		if u.Trust == TrustUnverified {
			t.Provenance = catalog.ProvenanceUnverified
		}
		var err error
		if t.PolicyDigest, err = catalog.PolicyDigestOf(t); err != nil {
			g.opts.Logger.Warn("mcp gateway: tool refused by the catalog; left out", "upstream", u.Name, "tool", it.def.Name, "error", err)
			continue
		}
		routes[t.Name] = route{upstream: it.up, name: it.def.Name, id: t.ID, outputSchema: it.def.OutputSchema != nil, def: it.raw}
		tools = append(tools, t)
	}
	return tools, routes
}

// exposure is one pinned tool on its way to an exposed name.
type exposure struct {
	up       int // index in Options.Upstreams
	upstream string
	def      *mcp.Tool
	raw      json.RawMessage
	tool     catalog.Tool // as the catalog reads it; its ID is final
	// exposed is the wire name: the tool's own, or UPSTREAM.NAME; ""
	// when the tool is left out.
	exposed string
}

// exposeNames gives each tool its exposed name (collision-only
// namespacing, docs/MCP-GATEWAY.md "The edge: trust baseline, identity,
// caps"), so that no upstream's listing can take a name another
// upstream's tool is exposed under:
//   - tools of two upstreams whose names a person could take for each
//     other (nameSkeleton) are both namespaced, UPSTREAM.NAME;
//   - a tool whose own name is, or could be taken for, another tool's
//     namespaced name (an upstream listing "mail.send_email" beside the
//     mail upstream's namespaced send_email), or is another tool's catalog
//     id ("mcp.mail:send_email"), is namespaced too, and so on until no
//     own name is another tool's namespaced name or id. An upstream's name
//     has no dot, so two namespaced names are never the same;
//   - a tool whose exposed name is still another tool's name or catalog
//     id (only an upstream named "mcp" could namespace a name into the
//     id form) is left out, never the tool whose name or id it is.
//
// Each namespacing for a reason other than a shared name, and each tool
// left out, is logged with both upstreams and tools.
func (g *Gateway) exposeNames(items []exposure) {
	ups := map[string]map[int]bool{} // skeleton of an own name → upstreams listing it
	for _, it := range items {
		sk := nameSkeleton(it.def.Name)
		if ups[sk] == nil {
			ups[sk] = map[int]bool{}
		}
		ups[sk][it.up] = true
	}
	ids := map[string]int{} // catalog id → its tool
	spaced := make([]bool, len(items))
	for i, it := range items {
		ids[it.tool.ID] = i
		spaced[i] = len(ups[nameSkeleton(it.def.Name)]) > 1
	}
	for changed := true; changed; {
		changed = false
		taken := map[string]int{} // skeleton of a namespaced name → its tool
		for i, it := range items {
			if spaced[i] {
				taken[nameSkeleton(exposedName(it.upstream, it.def.Name, true))] = i
			}
		}
		for i, it := range items {
			if spaced[i] {
				continue
			}
			o, ok := taken[nameSkeleton(it.def.Name)]
			if !ok {
				o, ok = ids[it.def.Name]
				ok = ok && o != i
			}
			if ok {
				spaced[i], changed = true, true
				g.opts.Logger.Warn("mcp gateway: a tool's name is, or looks like, another tool's namespaced name or id; it is namespaced too",
					"upstream", it.upstream, "tool", it.def.Name, "exposed", exposedName(it.upstream, it.def.Name, true),
					"other_upstream", items[o].upstream, "other_tool", items[o].def.Name)
			}
		}
	}
	owner := maps.Clone(ids) // an exposed name or catalog id → its tool
	for i := range items {
		items[i].exposed = exposedName(items[i].upstream, items[i].def.Name, spaced[i])
	}
	for i, it := range items {
		if o, ok := owner[it.exposed]; ok && o != i {
			items[i].exposed = ""
			g.opts.Logger.Warn("mcp gateway: a tool's exposed name is another tool's name or id; left out",
				"upstream", it.upstream, "tool", it.def.Name, "exposed", it.exposed,
				"other_upstream", items[o].upstream, "other_tool", items[o].def.Name)
			continue
		}
		owner[it.exposed] = i
	}
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
