package mcpgateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// ErrUnmatchedName: a name in the config (a gate's tool reference, such as
// the exec gate's confirm_tools, a domain's capabilities, sessions.core or
// sessions.activate_on_list) matches no tool the upstreams list. The
// gateway then serves nothing: a protection configured for a tool that
// does not exist under that name is off, and a typo must not switch it
// off silently.
var ErrUnmatchedName = errors.New("mcpgateway: a configured tool name matches no listed tool")

// toolReferences are the names the gateway's config gives: the pipeline's
// gates' and domains' (host.ToolReferences) and its own session lists.
func (g *Gateway) toolReferences() []host.ToolReference {
	refs := g.h.ToolReferences(g.opts.Pipeline)
	refs = append(refs, host.ListReferences("mcp.sessions.core", g.opts.CoreTools, host.RefTool, "*")...)
	refs = append(refs, host.ListReferences("mcp.sessions.activate_on_list", g.opts.ActivateOnList, host.RefTool, "*")...)
	return refs
}

// checkNames resolves the config's tool names against what the upstreams
// list, once every upstream has listed (an upstream that is down is no
// reason to call a name wrong). The first verdict stands for the life of
// the gateway: a name that matches nothing is an error of the config, and
// the gateway refuses every session and call until it is fixed.
func (g *Gateway) checkNames(d *downstream) error {
	g.namesMu.Lock()
	defer g.namesMu.Unlock()
	if g.namesChecked {
		return g.namesErr
	}
	var entries []baseline.Entry
	for _, c := range d.ups {
		l := c.listing.Load()
		if l == nil {
			return nil // not every upstream has listed yet
		}
		for _, t := range l.tools {
			e, err := baseline.NewEntry(c.u.Name, t.Name, l.defs[t.Name], "listing", time.Unix(0, 0))
			if err == nil {
				entries = append(entries, e)
			}
		}
	}
	g.namesChecked = true
	set, err := baseline.NewSet(entries)
	if err != nil {
		g.namesErr = fmt.Errorf("%w: %w", ErrUnmatchedName, err)
		return g.namesErr
	}
	tools, _ := g.buildCatalog(set)
	store, err := catalog.NewStore()
	if err == nil {
		_, err = store.Update(func(b *catalog.Builder) error {
			for _, t := range tools {
				_ = b.Add(t) // one the catalog refuses is left out, as when published
			}
			return nil
		})
	}
	if err == nil {
		err = host.CheckToolReferences(g.toolReferences(), store.Snapshot())
	}
	if err != nil {
		g.namesErr = fmt.Errorf("%w: %w", ErrUnmatchedName, err)
		g.opts.Logger.Error("mcp gateway: the config names tools the upstreams do not list; every session is refused", "error", err)
		b, _ := json.Marshal(err.Error())
		g.recordEdge(kindConfigRefused, map[string]any{"reason": json.RawMessage(b)})
	}
	return g.namesErr
}

// kindConfigRefused: the gateway refused to serve its config.
const kindConfigRefused = "mcp_config_refused"
