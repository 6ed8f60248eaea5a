package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// listing is one upstream connection's latest complete tools/list.
type listing struct {
	tools   []*mcp.Tool
	digests map[string]string // tool name → baseline.Digest of its definition
	// defs are the definitions as the upstream sent them (gatehost's
	// _meta namespace removed): what is pinned, and what is shown.
	defs map[string]json.RawMessage
	// result is the members of the upstream's list result other than
	// tools and nextCursor (its first page's), passed on when it is the
	// gateway's only upstream.
	result map[string]json.RawMessage
}

// relist reads every page of an upstream connection's tools/list (bounded:
// Options.MaxList*), keeps it as the connection's listing, takes into the
// baseline the tools the config trusts at their first listing, records
// every definition that differs from its baseline entry, and publishes
// the baseline as the catalog. A definition is the tool object exactly as
// the upstream sent it, every member included (wirelist.go).
func (g *Gateway) relist(ctx context.Context, c *upconn, cs *mcp.ClientSession) error {
	return g.relistUnless(ctx, c, cs, false)
}

// relistUnless is relist, except that with unlessSame a listing the same
// as the connection's (sameListing) changes nothing: it was taken into the
// baseline, checked against it and published when it was first read, and
// a call's decision reads the baseline afresh (baselineRefusal). A call to
// an upstream whose changes the gateway cannot hear lists so before it is
// decided (callTool).
func (g *Gateway) relistUnless(ctx context.Context, c *upconn, cs *mcp.ClientSession, unlessSame bool) error {
	// A change announced while the list is read leaves the upstream
	// stale, and the next call lists once more.
	gen, under := c.changes.Load(), c.streamUnder()
	seq := c.listSeq.Add(1)
	tools, rest, err := listWireTools(ctx, g.opts, cs)
	if err != nil {
		return err
	}
	l := &listing{digests: map[string]string{}, defs: map[string]json.RawMessage{}, result: rest}

	for _, w := range tools {
		t := w.v
		if t == nil {
			continue
		}
		if why := badToolName(t.Name); why != "" {
			g.opts.Logger.Warn("mcp gateway: upstream tool not exposed", "upstream", c.u.Name, "tool", fmt.Sprintf("%q", t.Name), "reason", why)
			continue
		}
		if _, dup := l.digests[t.Name]; dup {
			g.opts.Logger.Warn("mcp gateway: upstream lists a tool name twice; the first is kept", "upstream", c.u.Name, "tool", t.Name)
			continue
		}
		d, err := baseline.Digest(w.raw)
		if err != nil {
			g.opts.Logger.Warn("mcp gateway: upstream tool not exposed", "upstream", c.u.Name, "tool", t.Name, "reason", err)
			continue
		}
		l.tools = append(l.tools, t)
		l.digests[t.Name], l.defs[t.Name] = d, w.raw
	}
	if old := c.listing.Load(); unlessSame && old != nil && sameListing(old, l) {
		// What was read is old's definitions: old is stored back, with
		// this listing's counts, unless a listing begun later is stored.
		c.storeListing(old, seq, gen, under)
		return nil
	}
	set, err := g.opts.Baseline.Load(ctx)
	if err != nil {
		return fmt.Errorf("trust baseline: %w", err)
	}
	var first []baseline.Entry
	if !g.opts.RequireApproval && c.u.Trust != TrustUnverified {
		for _, t := range l.tools {
			k := baseline.Key{Upstream: c.u.Name, Tool: t.Name}
			if _, ok := set.Get(k); !ok && g.trustedAtFirstListing(c.u.Name, t.Name) {
				first = append(first, baseline.Entry{Upstream: c.u.Name, Tool: t.Name, Digest: l.digests[t.Name],
					Definition: l.defs[t.Name], ApprovedBy: baseline.ApprovedByFirstListing, ApprovedAt: time.Now().UTC()})
			}
		}
	}
	if len(first) > 0 {
		if set, err = g.pinFirst(ctx, first); err != nil {
			return fmt.Errorf("trust baseline: %w", err)
		}
	}
	if set, err = g.repinWireForm(ctx, c.u.Name, l, set); err != nil {
		return fmt.Errorf("trust baseline: %w", err)
	}
	for _, t := range l.tools {
		if e, ok := set.Get(baseline.Key{Upstream: c.u.Name, Tool: t.Name}); ok && e.Digest != l.digests[t.Name] {
			g.noteDrift(c.u.Name, t.Name, e, l.digests[t.Name], l.defs[t.Name])
		}
	}
	if old := c.listing.Load(); old != nil && sameListing(old, l) {
		// The same definitions keep the same listing: a call decided on
		// it by one session is not refused for another session's
		// re-list of an unchanged upstream (callTool compares them).
		l = old
	}
	if !c.storeListing(l, seq, gen, under) {
		return nil // a listing begun later is the connection's already
	}
	g.mu.Lock()
	err = g.publishLocked(set)
	g.mu.Unlock()
	if err == nil && g.baselineCovers(set) {
		_ = g.checkPolicies() // a verdict is logged, recorded and on /readyz
	}
	return err
}

// storeListing makes l the connection's listing, read from change count
// gen under stream count under by the listing begun seq-th (listSeq),
// unless a listing begun later is stored already. Listings of one
// connection run concurrently (a client's tools/list, a call's, the one
// after an announcement), and one begun earlier but ended last must not
// pass its older definitions off with a newer listing's counts (stale
// would then be false); the one begun last read the upstream after every
// other's counts were taken. It reports whether it stored.
func (c *upconn) storeListing(l *listing, seq, gen, under uint64) bool {
	c.listMu.Lock()
	defer c.listMu.Unlock()
	if seq < c.storedSeq {
		return false
	}
	c.storedSeq = seq
	c.listing.Store(l)
	c.listedAt.Store(gen)
	c.listedUnder.Store(under)
	return true
}

// sameListing reports whether a and b list the same tools, in the same
// order, with the same definitions and the same result members.
func sameListing(a, b *listing) bool {
	if len(a.tools) != len(b.tools) || len(a.result) != len(b.result) {
		return false
	}
	for i, t := range a.tools {
		if b.tools[i].Name != t.Name || a.digests[t.Name] != b.digests[t.Name] || !bytes.Equal(a.defs[t.Name], b.defs[t.Name]) {
			return false
		}
	}
	for k, v := range a.result {
		if w, ok := b.result[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// repinWireForm moves to the listed definition every baseline entry that
// differs from it only by the defaults the SDK's types added when the
// gateway pinned its re-encoding rather than the upstream's wire form
// (sdkDefaultsOnly): the same tool, meaning the same, so the approval
// stands (same approver and time), now over what the model is shown.
// Any other difference is drift, as always.
func (g *Gateway) repinWireForm(ctx context.Context, upstream string, l *listing, set *baseline.Set) (*baseline.Set, error) {
	var repin []baseline.Entry
	for _, t := range l.tools {
		e, ok := set.Get(baseline.Key{Upstream: upstream, Tool: t.Name})
		if !ok || e.Digest == l.digests[t.Name] || !sdkDefaultsOnly(e.Definition, l.defs[t.Name]) {
			continue
		}
		if ne, err := baseline.NewEntry(upstream, t.Name, l.defs[t.Name], e.ApprovedBy, e.ApprovedAt); err == nil {
			repin = append(repin, ne)
		}
	}
	if len(repin) == 0 {
		return set, nil
	}
	set, err := g.opts.Baseline.Approve(ctx, repin)
	if err != nil {
		return nil, err
	}
	for _, e := range repin {
		g.opts.Logger.Info("mcp gateway: baseline entry re-pinned in the form the upstream sends (it differed by the SDK's defaults only)",
			"upstream", e.Upstream, "tool", e.Tool, "digest", e.Digest)
		g.recordEdge(kindBaselineApproved, map[string]any{"upstream": e.Upstream, "tool": e.Tool, "digest": e.Digest,
			"approved_by": e.ApprovedBy, "repinned": "wire_form"})
	}
	return set, nil
}

// sdkDefaults are the members the SDK's types add to a tool that lacks
// them, each with the value that absence means (MCP ToolAnnotations).
var sdkDefaults = map[string]string{
	"/annotations/readOnlyHint":   "false",
	"/annotations/idempotentHint": "false",
}

// sdkDefaultsOnly reports whether listed is pinned with nothing but
// sdkDefaults added: every difference is one of them, present in pinned
// with its default value and absent from listed.
func sdkDefaultsOnly(pinned, listed json.RawMessage) bool {
	changes := baseline.Diff(pinned, listed)
	for _, ch := range changes {
		if v, ok := sdkDefaults[ch.Path]; !ok || ch.Old != v || ch.New != "" {
			return false
		}
	}
	return len(changes) > 0
}

// pinFirst takes into the baseline the entries of a first listing (or
// first sight) whose key it holds nothing for, and records each that
// took (mcp_tool_approved, by first_listing); of two gateways pinning at
// once, exactly one's entry is kept. It returns the baseline after.
func (g *Gateway) pinFirst(ctx context.Context, first []baseline.Entry) (*baseline.Set, error) {
	set, err := g.opts.Baseline.AddIfAbsent(ctx, first)
	if err != nil {
		return nil, err
	}
	for _, e := range first {
		if got, _ := set.Get(e.Key()); got.Digest == e.Digest {
			g.recordEdge(kindBaselineApproved, map[string]any{"upstream": e.Upstream, "tool": e.Tool, "digest": e.Digest, "approved_by": e.ApprovedBy})
		}
	}
	return set, nil
}

// trustedAtFirstListing reports whether the config names the tool in
// CoreTools or ActivateOnList ("*", its name, or its id mcp.UPSTREAM:NAME):
// such a tool with no baseline entry yet is taken into the baseline as
// first listed (docs/MCP-GATEWAY.md "The edge: trust baseline, identity, caps").
func (g *Gateway) trustedAtFirstListing(upstream, name string) bool {
	for _, list := range [][]string{g.opts.CoreTools, g.opts.ActivateOnList} {
		for _, n := range list {
			if n == "*" || n == name || n == "mcp."+upstream+":"+name || n == upstream+"."+name {
				return true
			}
		}
	}
	return false
}

// noteDrift logs and records, once per gateway for each new definition,
// that an upstream lists a tool otherwise than its baseline entry, with
// what changed.
func (g *Gateway) noteDrift(upstream, tool string, e baseline.Entry, digest string, def json.RawMessage) {
	// Every session of the gateway is denied the tool from now on, not
	// only the one whose connection saw the change: another session's
	// connection may reach the same server and not have listed since.
	g.suspended.Store(upstream+"\x00"+tool, e.Digest)
	g.recordDrift(e, digest, def, "mcp gateway: tool differs from its trust baseline; every call is denied until an operator approves it")
}

// recordDrift logs (as msg) and records (mcp_tool_drifted), once per
// gateway for each new definition, that an upstream offers something
// otherwise than its baseline entry e — a tool, or its instructions —
// with what changed.
func (g *Gateway) recordDrift(e baseline.Entry, digest string, def json.RawMessage, msg string) {
	key := e.Upstream + "\x00" + e.Tool + "\x00" + digest
	if _, seen := g.driftSeen.LoadOrStore(key, true); seen {
		return
	}
	changes := baseline.Diff(e.Definition, def)
	paths := make([]string, 0, len(changes))
	for _, ch := range changes {
		paths = append(paths, ch.Path)
	}
	g.opts.Logger.Warn(msg, "upstream", e.Upstream, "tool", e.Tool, "changed", strings.Join(paths, " "))
	g.recordEdge(kindToolDrifted, map[string]any{"upstream": e.Upstream, "tool": e.Tool,
		"baseline_digest": e.Digest, "listed_digest": digest, "changes": changes})
}

// baselineRefusal is the edge's check of one call against the trust
// baseline: the definition this connection lists for the tool must be the
// one the baseline holds, read now (an operator's approval counts at
// once). It returns the refusal, or nil when the call may be decided.
func (g *Gateway) baselineRefusal(ctx context.Context, c *upconn, name string) []abi.Finding {
	refuse := func(code, format string, args ...any) []abi.Finding {
		return []abi.Finding{{Code: code, Severity: abi.Blocking, Message: fmt.Sprintf(format, args...)}}
	}
	l := c.listing.Load()
	if l == nil {
		return refuse(CodeUpstreamUnavailable, "the tools of upstream %s are not listed", c.u.Name)
	}
	digest, ok := l.digests[name]
	if !ok {
		return refuse(CodeToolNotListed, "upstream %s no longer lists this tool", c.u.Name)
	}
	set, err := g.opts.Baseline.Load(ctx)
	if err != nil {
		g.opts.Logger.Error("mcp gateway: trust baseline unavailable; call refused", "error", err)
		return refuse(CodeBaselineUnavailable, "the trust baseline could not be read")
	}
	g.mu.Lock()
	err = g.publishLocked(set)
	g.mu.Unlock()
	if err != nil {
		return refuse(CodeBaselineUnavailable, "the trust baseline could not be published: %v", err)
	}
	e, ok := set.Get(baseline.Key{Upstream: c.u.Name, Tool: name})
	if sus, seen := g.suspended.Load(c.u.Name + "\x00" + name); ok && seen && sus.(string) == e.Digest && e.Digest == digest {
		// This connection still lists the approved definition, but
		// another connection of the upstream listed a changed one: the
		// server changed, and this connection has not listed since.
		return refuse(CodeToolDrifted, "upstream %s listed %s otherwise than the trust baseline approved (seen by another session); denied for every session until an operator approves the new definition (gatehost mcp approve)",
			c.u.Name, name)
	}
	switch {
	case !ok:
		return refuse(CodeToolNotApproved, "%s of upstream %s is not in the trust baseline; an operator approves it (gatehost mcp approve)", name, c.u.Name)
	case e.Digest != digest:
		g.noteDrift(c.u.Name, name, e, digest, l.defs[name])
		var paths []string
		for _, ch := range baseline.Diff(e.Definition, l.defs[name]) {
			paths = append(paths, ch.Path)
		}
		return refuse(CodeToolDrifted, "upstream %s now lists %s otherwise than the trust baseline approved (changed: %s); denied for every session until an operator approves the new definition (gatehost mcp approve)",
			c.u.Name, name, strings.Join(paths, ", "))
	}
	return nil
}

// Codes of the gateway's own refusals (RunOptions.Refusals: recorded as
// host findings of the decision).
const (
	CodeToolDrifted         = "tool_drifted"
	CodeToolNotApproved     = "tool_not_approved"
	CodeToolNotListed       = "tool_not_listed"
	CodeBaselineUnavailable = "baseline_unavailable"
	CodeUpstreamUnavailable = "upstream_unavailable"
)

// Event-log record kinds of the trust baseline.
const (
	kindToolDrifted      = "mcp_tool_drifted"
	kindBaselineApproved = "mcp_tool_approved"
)

// listAll follows a paginated list to its end within the bounds of opts:
// at most MaxListPages pages, MaxListItems items and MaxListBytes of item
// JSON; a cursor seen before ends it with an error (a loop).
func listAll[T any](ctx context.Context, opts Options, method string, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	size := 0
	seen := map[string]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > opts.MaxListPages {
			return nil, fmt.Errorf("%s: more than %d pages (mcp.max_list_pages)", method, opts.MaxListPages)
		}
		items, next, err := page(cursor)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		for _, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", method, err)
			}
			size += len(b)
		}
		all = append(all, items...)
		if len(all) > opts.MaxListItems {
			return nil, fmt.Errorf("%s: more than %d items (mcp.max_list_items)", method, opts.MaxListItems)
		}
		if size > opts.MaxListBytes {
			return nil, fmt.Errorf("%s: more than %d bytes (mcp.max_list_bytes)", method, opts.MaxListBytes)
		}
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: the upstream repeated a cursor", method)
		}
		seen[next] = true
		cursor = next
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
		}
	}
}

// createSession creates the gatehost session of a new MCP session, with
// the configured core pins that the catalog holds ("*": every trusted tool
// of the gateway's upstreams).
func (g *Gateway) createSession(ctx context.Context, id string) error {
	snap := g.Host().Catalog().Snapshot()
	names := g.opts.CoreTools
	if slices.Contains(names, "*") {
		names = nil
		for _, t := range g.owned(snap) {
			names = append(names, t.ID)
		}
	}
	var core []string
	seen := map[string]bool{}
	for _, name := range names {
		t, ok := snap.Get(name)
		if !ok {
			g.opts.Logger.Warn("mcp gateway: core tool not in the trust baseline yet; not pinned", "tool", name, "session", id)
			continue
		}
		if t.Provenance == catalog.ProvenanceUnverified {
			g.opts.Logger.Warn("mcp gateway: core tool of an unverified upstream; not pinned", "tool", t.ID, "session", id)
			continue
		}
		if !seen[t.ID] {
			seen[t.ID] = true
			core = append(core, t.ID)
		}
	}
	if _, err := session.Create(ctx, g.Host().Sessions(), snap, id, core...); err != nil {
		return fmt.Errorf("gatehost session %s: %w", id, err)
	}
	return nil
}

// activateOnList grants the session the listed tools that ActivateOnList
// names: those it does not hold, and those whose grant no longer matches
// the catalog — which is the trust baseline, so it changes only by an
// operator's approval, and the grant follows it.
func (g *Gateway) activateOnList(ctx context.Context, id string, snap *catalog.Snapshot, listed []catalog.Tool) (*session.Set, error) {
	set, err := g.Host().Sessions().Load(ctx, id)
	if err != nil || set == nil {
		return set, err
	}
	all := slices.Contains(g.opts.ActivateOnList, "*")
	var names []string
	for _, t := range listed {
		if t.Provenance == catalog.ProvenanceUnverified {
			continue // session.ActivateMany refuses it: untrusted_source
		}
		if _, ok := set.Core[t.ID]; ok {
			continue
		}
		if a, ok := set.Activated[t.ID]; ok && a.Grant.SchemaDigest == t.SchemaDigest && a.Grant.PolicyDigest == t.PolicyDigest && a.Provenance == t.Provenance {
			continue
		}
		if all || slices.ContainsFunc(g.opts.ActivateOnList, func(n string) bool {
			return n == t.ID || n == t.Name || slices.Contains(t.Aliases, n)
		}) {
			names = append(names, t.ID)
		}
	}
	if len(names) == 0 {
		return set, nil
	}
	return session.ActivateMany(ctx, g.Host().Sessions(), snap, id, names)
}

// activateListed activates, in the session, the tools a listing shows
// that ActivateOnList names (activateOnList), and returns the catalog
// snapshot and routes it was decided on and the session's set.
func (d *downstream) activateListed(ctx context.Context) (*catalog.Snapshot, map[string]route, *session.Set, error) {
	snap := d.g.Host().Catalog().Snapshot()
	routes := *d.g.routes.Load()
	var listed []catalog.Tool
	for _, t := range d.g.owned(snap) {
		if _, ok := routes[t.Name]; ok {
			listed = append(listed, t)
		}
	}
	set, err := d.g.activateOnList(ctx, d.sessionID(), snap, listed)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("gatehost session %s: %w", d.sessionID(), err)
	}
	return snap, routes, set, nil
}

// listTools answers tools/list: for every upstream that answers, the
// tools it lists that the trust baseline holds, each shown as the baseline
// pins it (what the model sees is what was approved): the definition as
// the upstream sent it, byte for byte in meaning, under its exposed name.
// An upstream that cannot be reached or listed leaves out its own tools
// only (logged).
func (d *downstream) listTools(ctx context.Context) (mcp.Result, error) {
	for _, c := range d.conns() {
		cs, err := c.session(ctx)
		if err == nil {
			err = d.g.relist(ctx, c, cs)
		}
		if err != nil {
			d.g.opts.Logger.Warn("mcp gateway: upstream not listed; its tools are left out", "upstream", c.u.Name, "error", err)
		}
	}
	snap, routes, set, err := d.activateListed(ctx)
	if err != nil {
		return nil, err
	}
	var shown []json.RawMessage
	for _, c := range d.conns() {
		l := c.listing.Load()
		if l == nil {
			continue
		}
		for _, t := range l.tools {
			exposed, ok := routeTo(routes, c.idx, t.Name)
			if !ok {
				continue // not in the baseline: not shown
			}
			if ct, ok := snap.Get(exposed); ok && !d.g.mayCall(ctx, ct, d.principal) {
				continue // no policy could permit this principal to call it
			}
			if d.g.opts.ListSessionToolsOnly {
				ct, ok := snap.Get(exposed)
				if !ok || set == nil {
					continue
				}
				_, core := set.Core[ct.ID]
				_, act := set.Activated[ct.ID]
				if !core && !act {
					continue
				}
			}
			def := routes[exposed].def
			if exposed != t.Name {
				if def, err = renamed(def, exposed); err != nil {
					continue
				}
			}
			shown = append(shown, def)
		}
	}
	// The list result's own members (_meta, caching hints) are the
	// upstream's when there is one upstream; with several, the answer is
	// none of theirs, and has none.
	var rest map[string]json.RawMessage
	if len(d.conns()) == 1 {
		if l := d.conns()[0].listing.Load(); l != nil {
			rest = l.result
		}
	}
	return rawListResult("tools", shown, rest)
}

// callTool decides on a tools/call and forwards it only when accepted.
func (d *downstream) callTool(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	p := req.GetParams().(*mcp.CallToolParamsRaw)
	ctx = d.continueTrace(ctx, req, p.Meta)
	if err := d.g.checkNames(d); err != nil {
		return errorResult("", "gatehost: %v; nothing was sent", err), nil
	}
	// What is decided is what is sent: absent or null arguments are the
	// empty object both ways, and of the client's _meta only the progress
	// token travels on (tracing adds its own keys).
	if a := strings.TrimSpace(string(p.Arguments)); a == "" || a == "null" {
		p.Arguments = json.RawMessage("{}")
	}
	p.Meta = clientMeta(p.Meta)
	r, routed := (*d.g.routes.Load())[p.Name]
	var up *upconn
	var refusals []abi.Finding
	var seen *listing // the listing the decision was made against
	if !routed {
		// A tool an upstream lists but the trust baseline does not hold
		// is refused as such, not as an unknown name.
		routes := *d.g.routes.Load()
		for _, c := range d.conns() {
			if _, approved := routeTo(routes, c.idx, p.Name); approved {
				continue // exposed under another (namespaced) name
			}
			if l := c.listing.Load(); l != nil && l.digests[p.Name] != "" {
				refusals = []abi.Finding{{Code: CodeToolNotApproved, Severity: abi.Blocking,
					Message: fmt.Sprintf("%s of upstream %s is not in the trust baseline; an operator approves it (gatehost mcp approve)", p.Name, c.u.Name)}}
				break
			}
		}
	}
	if routed {
		// Connect (after a crash: restart and re-list) before deciding,
		// and list again when the upstream announced a change, or could
		// not have (hearsChanges), so that the decision is made on the
		// definitions the call will meet.
		up = d.conns()[r.upstream]
		if err := d.authorize(ctx, up, ""); err != nil {
			return errorResult("", "gatehost: %v; nothing was sent", err), nil
		}
		_, err := up.session(ctx)
		if err == nil && (up.stale() || !up.hearsChanges()) {
			err = d.listForCall(ctx, up)
		}
		if err != nil {
			return errorResult("", "gatehost: %v; nothing was sent", err), nil
		}
		seen = up.listing.Load()
		refusals = d.g.baselineRefusal(ctx, up, r.name)
		if r2, ok := (*d.g.routes.Load())[p.Name]; ok && r2.upstream == r.upstream {
			r = r2
		}
	}
	refusals = append(refusals, d.g.policyRefusal()...)
	params, err := json.Marshal(p)
	if err != nil {
		return errorResult("", "gatehost: the call was not checked: %v; nothing was sent", err), nil
	}
	c := call{session: d.sessionID(), counterSession: d.counterSession(), name: p.Name, args: p.Arguments, params: params, principal: d.principal, refusals: refusals, upstreamName: r.name, seen: seen}
	dec, err := d.g.decide(ctx, c)
	if dec == nil {
		// The call could not be checked (not a valid tool call): nothing
		// is sent. The subject errors name fields, never argument values.
		return errorResult("", "gatehost: the call was not checked: %v; nothing was sent", err), nil
	}
	if err != nil {
		d.g.opts.Logger.Error("mcp gateway: decision", "run_id", dec.RunID, "error", err)
	}
	var pending *approval.Request
	if dec.Verdict == abi.Rejected && err == nil && dec.OnlyConfirmationMissing() {
		first := dec
		var ask mcp.Result
		if dec, pending, ask, err = d.confirm(ctx, c, dec, up); dec == nil {
			return errorResult(first.RunID, "gatehost: the approved call was not checked: %v; nothing was sent", err), nil
		}
		if ask != nil {
			return ask, nil
		}
		if err != nil {
			d.g.opts.Logger.Error("mcp gateway: decision", "run_id", dec.RunID, "error", err)
		}
	}
	if dec.Verdict != abi.Accepted {
		res := deniedResult(dec, r.outputSchema)
		if pending != nil || (dec.OnlyConfirmationMissing() && d.g.opts.Elicitation != ElicitForm) {
			d.g.withApproval(res, pending)
		}
		return res, nil
	}
	if !routed {
		// Accepted on a catalog record no upstream of this gateway lists
		// (a file catalog's tool): there is nowhere to send it.
		return errorResult(dec.RunID, "gatehost: no upstream of this gateway serves %q; nothing was sent", p.Name), nil
	}
	if !up.stale() && !up.hearsChanges() {
		// What the upstream announced since the listing the decision was
		// made on may not have been heard (no stream open, or one opened
		// since: a confirmation can take minutes): list again first.
		if err := d.listForCall(ctx, up); err != nil {
			return errorResult(dec.RunID, "gatehost: accepted, but %v; nothing was sent", err), nil
		}
	}
	if up.stale() || up.listing.Load() != c.seen {
		// The upstream announced (or listed) a change after the decision
		// was made: the call would meet a definition nobody decided on.
		return errorResult(dec.RunID, "gatehost: upstream %s changed its tools while the call was decided; nothing was sent, call again", up.u.Name), nil
	}
	return d.tracedForward(ctx, up, r.name, p, dec, c.seen)
}

// forwardedMeta are the keys of a call's _meta that are forwarded: the
// progress token, so that the upstream's progress reaches the client, and
// the W3C trace context (MCP SEP-414). Everything else a client puts in
// _meta is not part of the decided subject, so it is not sent.
var forwardedMeta = []string{"progressToken", "traceparent", "tracestate"}

func clientMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for _, k := range forwardedMeta {
		if v, ok := m[k]; ok {
			if out == nil {
				out = mcp.Meta{}
			}
			out[k] = v
		}
	}
	return out
}

// listForCall lists the upstream's tools before a call is decided or sent
// (callTool): unless they are the same as the listing it has, when the
// announcement of a change may have passed unheard; always, when one was
// heard. An upstream that no longer knows the session (restarted, or timed
// it out while it was kept) answers 404 (mcp.ErrSessionMissing) and ran
// nothing: the gateway connects anew, which lists, once.
func (d *downstream) listForCall(ctx context.Context, up *upconn) error {
	cs, err := up.session(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, d.g.opts.ConnectTimeout)
	err = d.g.relistUnless(lctx, up, cs, !up.stale())
	cancel()
	if errors.Is(err, mcp.ErrSessionMissing) {
		up.closeIf(cs)
		_, err = up.session(ctx)
	}
	return err
}

// forwardCall sends an accepted call upstream under the call timeout and
// returns the upstream's result with the run id added to _meta.
//
// An upstream that answers the POST of the call itself with 404, as it
// does for a session it no longer knows (restarted, or timed out while
// the session was kept), ran nothing (basic/transports, "Session
// Management"): the gateway connects anew, which lists the tools, and
// sends the call once more, on the definitions it was decided on (seen)
// only. A 404 seen anywhere else (another request's, or the resumption of
// the call's own stream after it ran) ends the call as a lost connection.
func (d *downstream) forwardCall(ctx context.Context, up *upconn, name string, p *mcp.CallToolParamsRaw, runID string, seen *listing) (mcp.Result, error) {
	res, err := d.forwardCallOn(ctx, up, name, p, runID, true)
	var refused *sessionRefused
	if !errors.As(err, &refused) {
		return res, err
	}
	up.closeIf(refused.cs)
	if _, err := up.session(ctx); err != nil {
		return errorResult(runID, "gatehost: accepted, but upstream %s no longer knows the session and %v; nothing was sent", up.u.Name, err), nil
	}
	if up.stale() || up.listing.Load() != seen {
		return errorResult(runID, "gatehost: upstream %s no longer knew the session and lists its tools otherwise now; nothing was sent, call again", up.u.Name), nil
	}
	return d.forwardCallOn(ctx, up, name, p, runID, false)
}

// sessionRefused: the upstream answered the POST of a call with 404
// (mcp.ErrSessionMissing) on the session cs, so ran nothing (forwardCall).
type sessionRefused struct{ cs *mcp.ClientSession }

func (*sessionRefused) Error() string { return "the upstream no longer knows the session" }

func (d *downstream) forwardCallOn(ctx context.Context, up *upconn, name string, p *mcp.CallToolParamsRaw, runID string, again bool) (mcp.Result, error) {
	cs, err := up.session(ctx)
	if err == nil {
		err = d.authorize(ctx, up, runID)
	}
	if err != nil {
		return errorResult(runID, "gatehost: accepted, but %v; nothing was sent", err), nil
	}
	// wire tells whether the connection is closed for an upstream message
	// over the bound (upbound.go).
	wire := up.wireOf(cs)
	cctx, cancel := context.WithTimeout(ctx, d.g.opts.CallTimeout)
	defer cancel()
	// A connection dropped mid-call (an upstream cut off, another
	// session's call that timed out on a shared process) ends the call
	// now, not at its timeout.
	live := up.liveContext(cs)
	defer context.AfterFunc(live, cancel)()
	meta, forget := d.g.progress.swap(ctx, d, p.Meta)
	defer forget()
	defer up.calls.add(ctx, d)()
	params := &mcp.CallToolParams{Meta: meta, Name: name, Arguments: p.Arguments}
	if len(p.Arguments) == 0 {
		params.Arguments = nil
	}
	if up.inputInAnswer() {
		params.Meta = d.withClientCapabilities(params.Meta)
		params.InputResponses, params.RequestState = roundTripFrom(ctx).upstreamPart()
	}
	var posted postRefusal
	callUpstream := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(context.WithValue(cctx, postRefusalKey{}, &posted), params)
	}
	res, err := recovered(callUpstream)
	if again && posted.refused.Load() && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
		return nil, &sessionRefused{cs: cs}
	}
	for round := 1; err == nil && res.NeedsInput(); round++ {
		// The upstream asks for input in its answer (upinput.go).
		answer, responses, ierr := d.upstreamInput(cctx, up, res, round, runID)
		if ierr != nil {
			return errorResult(runID, "gatehost: %v; the call did not complete", ierr), nil
		}
		if answer != nil {
			return answer, nil
		}
		params.InputResponses, params.RequestState = responses, res.RequestState
		res, err = recovered(callUpstream)
	}
	var tooLarge *MessageTooLargeError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, context.Cause(ctx) // the client cancelled: the SDK answers nothing
	case errors.As(err, &tooLarge), errors.As(wire.refusal(), &tooLarge):
		// The upstream sent a message over the bound (upbound.go): its
		// connection was closed, and it is logged.
		up.closeIf(cs)
		return errorResult(runID, "gatehost: %v; the call may or may not have run", tooLarge), nil
	case live.Err() != nil:
		return errorResult(runID, "gatehost: upstream %s was disconnected during the call; the call may or may not have run", up.u.Name), nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		up.close() // a hung upstream is restarted before its next call
		return errorResult(runID, "gatehost: upstream %s did not answer within %s; the call was cancelled upstream and may or may not have run", up.u.Name, d.g.opts.CallTimeout), nil
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		up.close()
		return errorResult(runID, "gatehost: upstream %s closed the connection before answering; the call may or may not have run", up.u.Name), nil
	default:
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, err // a protocol error from the upstream, passed through
		}
		up.close() // an answer outside the protocol: start afresh
		return errorResult(runID, "gatehost: upstream %s: %v; the call may or may not have run", up.u.Name, err), nil
	}
	up.healthy()
	if b, err := json.Marshal(res); err != nil || len(b) > d.g.opts.MaxResultBytes {
		return errorResult(runID, "gatehost: upstream %s answered with a result over %d bytes or not encodable; it was dropped", up.u.Name, d.g.opts.MaxResultBytes), nil
	}
	res.Meta = withRunID(res.Meta, runID)
	return res, nil
}

func withRunID(m mcp.Meta, runID string) mcp.Meta {
	if runID == "" {
		return m
	}
	out := mcp.Meta{}
	for k, v := range m {
		out[k] = v
	}
	out[MetaRunID] = runID
	return out
}

// deniedResult is what the agent gets for a call that was not accepted:
// an error result naming each finding's code and message (gates' messages
// carry metadata, never arguments), the run id and the Decision in _meta
// (MetaRunID, MetaDecision), and the Decision as structured content unless
// the tool declares an output schema: clients check a result's structured
// content against it, error results included, and the Decision is not of
// the tool's shape.
func deniedResult(d *host.Decision, outputSchema bool) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "gatehost did not accept the call: %s (run %s); nothing was sent to the server.", d.Verdict, d.RunID)
	for _, f := range d.Findings {
		if f.Advisory {
			continue
		}
		fmt.Fprintf(&b, "\n- %s: %s", f.Code, f.Message)
	}
	for _, s := range d.Stages {
		if s.Verdict == abi.Inconclusive && s.Reason != "" {
			fmt.Fprintf(&b, "\n- stage %s inconclusive: %s", s.Name, s.Reason)
		}
	}
	r := &mcp.CallToolResult{
		Meta:    withRunID(nil, d.RunID),
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
	}
	if r.Meta == nil {
		r.Meta = mcp.Meta{}
	}
	r.Meta[MetaDecision] = decisionView(d)
	if !outputSchema {
		r.StructuredContent = decisionView(d)
	}
	return r
}

// decisionView is the Decision as the agent sees it: verdict, run id,
// pipeline and findings.
func decisionView(d *host.Decision) any {
	return struct {
		Verdict  abi.Verdict    `json:"verdict"`
		RunID    string         `json:"run_id"`
		Pipeline string         `json:"pipeline"`
		Findings []host.Finding `json:"findings"`
	}{d.Verdict, d.RunID, d.Pipeline, d.Findings}
}

func errorResult(runID, format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    withRunID(nil, runID),
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}},
	}
}
