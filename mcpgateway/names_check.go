package mcpgateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	refs := g.Host().ToolReferences(g.opts.Pipeline)
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
	var unlisted []string
	for _, c := range d.conns() {
		l := c.listing.Load()
		if l == nil {
			unlisted = append(unlisted, c.u.Name)
			continue
		}
		for _, t := range l.tools {
			e, err := baseline.NewEntry(c.u.Name, t.Name, l.defs[t.Name], "listing", time.Unix(0, 0))
			if err == nil {
				entries = append(entries, e)
			}
		}
	}
	if len(unlisted) > 0 {
		return g.checkNamesPartly(entries, unlisted)
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

// checkNamesPartly checks the config's tool names while some upstreams
// have not listed yet (one is down): a name is not called wrong for want
// of its upstream's listing, but "not known yet" must not let a call
// through either. A name that matches nothing among the upstreams that
// did list is an error unless it could still belong to an unlisted one
// (its namespace is mcp.UNLISTED, or it is a bare wire name). The verdict
// is not kept: the full check runs once every upstream has listed.
func (g *Gateway) checkNamesPartly(entries []baseline.Entry, unlisted []string) error {
	set, err := baseline.NewSet(entries)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnmatchedName, err)
	}
	tools, _ := g.buildCatalog(set)
	store, err := catalog.NewStore()
	if err == nil {
		_, err = store.Update(func(b *catalog.Builder) error {
			for _, t := range tools {
				_ = b.Add(t)
			}
			return nil
		})
	}
	if err == nil {
		err = host.CheckToolReferences(g.toolReferences(), store.Snapshot())
	}
	var ue *host.UnmatchedToolError
	if !errors.As(err, &ue) {
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnmatchedName, err)
		}
		return nil
	}
	var left []host.UnmatchedTool
	for _, u := range ue.Unmatched {
		ns, _, qualified := strings.Cut(u.Ref.Name, ":")
		pending := !qualified // a wire name any upstream may list
		for _, up := range unlisted {
			if ns == "mcp."+up {
				pending = true
			}
		}
		if !pending {
			left = append(left, u)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnmatchedName, &host.UnmatchedToolError{Unmatched: left})
}
