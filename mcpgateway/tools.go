package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/session"
)

// relist reads every page of an upstream's tools/list and publishes the
// catalog with it.
func (g *Gateway) relist(ctx context.Context, idx int, cs *mcp.ClientSession) error {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, t)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	prev := g.lists[idx]
	g.lists[idx] = &listed{tools: tools}
	if err := g.publishLocked(); err != nil {
		g.lists[idx] = prev
		return err
	}
	return nil
}

// createSession creates the gatehost session of a new MCP session, with
// the configured core pins that the catalog holds ("*": every trusted tool
// of the gateway's upstreams).
func (g *Gateway) createSession(ctx context.Context, id string) error {
	snap := g.h.Catalog().Snapshot()
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
			g.opts.Logger.Warn("mcp gateway: core tool not listed by any upstream; not pinned", "tool", name, "session", id)
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
	if _, err := session.Create(ctx, g.h.Sessions(), snap, id, core...); err != nil {
		return fmt.Errorf("gatehost session %s: %w", id, err)
	}
	return nil
}

// activateOnList grants the session the listed tools that ActivateOnList
// names and that the session does not hold in any form. A tool held with
// a drifted pin or grant is left as it is: listing never re-grants.
func (g *Gateway) activateOnList(ctx context.Context, id string, snap *catalog.Snapshot, listed []catalog.Tool) (*session.Set, error) {
	set, err := g.h.Sessions().Load(ctx, id)
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
		if _, ok := set.Activated[t.ID]; ok {
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
	return session.ActivateMany(ctx, g.h.Sessions(), snap, id, names)
}

// listTools answers tools/list from every upstream's current list.
func (d *downstream) listTools(ctx context.Context) (mcp.Result, error) {
	for _, c := range d.ups {
		cs, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		if err := d.g.relist(ctx, c.idx, cs); err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrUpstream, c.u.Name, err)
		}
	}
	snap := d.g.h.Catalog().Snapshot()
	routes := *d.g.routes.Load()
	var listed []catalog.Tool
	for _, t := range d.g.owned(snap) {
		if _, ok := routes[t.Name]; ok {
			listed = append(listed, t)
		}
	}
	set, err := d.g.activateOnList(ctx, d.sessionID(), snap, listed)
	if err != nil {
		return nil, fmt.Errorf("gatehost session %s: %w", d.sessionID(), err)
	}
	out := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	for i, l := range d.g.lists {
		if l == nil {
			continue
		}
		for _, t := range l.tools {
			name := t.Name
			for exposed, r := range routes {
				if r.upstream == i && r.name == t.Name {
					name = exposed
				}
			}
			if d.g.opts.ListSessionToolsOnly {
				ct, ok := snap.Get(name)
				if !ok || set == nil {
					continue
				}
				_, core := set.Core[ct.ID]
				_, act := set.Activated[ct.ID]
				if !core && !act {
					continue
				}
			}
			c := *t
			c.Name = name
			out.Tools = append(out.Tools, &c)
		}
	}
	return out, nil
}

// callTool decides on a tools/call and forwards it only when accepted.
func (d *downstream) callTool(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	p := req.GetParams().(*mcp.CallToolParamsRaw)
	ctx = d.continueTrace(ctx, req, p.Meta)
	r, routed := (*d.g.routes.Load())[p.Name]
	var up *upconn
	if routed {
		// Connect (after a crash: restart and re-list) before deciding,
		// so that the decision is made on the catalog the call will meet.
		up = d.ups[r.upstream]
		if _, err := up.session(ctx); err != nil {
			return errorResult("", "gatehost: %v; nothing was sent", err), nil
		}
		r, routed = (*d.g.routes.Load())[p.Name]
		up = d.ups[r.upstream]
	}
	params, err := json.Marshal(p)
	if err != nil {
		return errorResult("", "gatehost: the call was not checked: %v; nothing was sent", err), nil
	}
	c := call{session: d.sessionID(), name: p.Name, args: p.Arguments, params: params, principal: d.g.principalOf(req)}
	dec, err := d.g.decide(ctx, c)
	if dec == nil {
		// The call could not be checked (not a valid tool call): nothing
		// is sent. The subject errors name fields, never argument values.
		return errorResult("", "gatehost: the call was not checked: %v; nothing was sent", err), nil
	}
	if err != nil {
		d.g.opts.Logger.Error("mcp gateway: decision", "run_id", dec.RunID, "error", err)
	}
	if dec.Verdict == abi.Rejected && err == nil && onlyConfirmationMissing(dec) {
		first := dec
		if dec, err = d.confirm(ctx, c, dec, up); dec == nil {
			return errorResult(first.RunID, "gatehost: the approved call was not checked: %v; nothing was sent", err), nil
		}
		if err != nil {
			d.g.opts.Logger.Error("mcp gateway: decision", "run_id", dec.RunID, "error", err)
		}
	}
	if dec.Verdict != abi.Accepted {
		return deniedResult(dec, r.outputSchema), nil
	}
	if !routed {
		// Accepted on a catalog record no upstream of this gateway lists
		// (a file catalog's tool): there is nowhere to send it.
		return errorResult(dec.RunID, "gatehost: no upstream of this gateway serves %q; nothing was sent", p.Name), nil
	}
	return d.tracedForward(ctx, up, r.name, p, dec)
}

// forwardCall sends an accepted call upstream under the call timeout and
// returns the upstream's result with the run id added to _meta.
func (d *downstream) forwardCall(ctx context.Context, up *upconn, name string, p *mcp.CallToolParamsRaw, runID string) (mcp.Result, error) {
	cs, err := up.session(ctx)
	if err != nil {
		return errorResult(runID, "gatehost: accepted, but %v; nothing was sent", err), nil
	}
	cctx, cancel := context.WithTimeout(ctx, d.g.opts.CallTimeout)
	defer cancel()
	params := &mcp.CallToolParams{Meta: p.Meta, Name: name, Arguments: p.Arguments}
	if len(p.Arguments) == 0 {
		params.Arguments = nil
	}
	res, err := cs.CallTool(cctx, params)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, context.Cause(ctx) // the client cancelled: the SDK answers nothing
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

// onlyConfirmationMissing reports whether every blocking finding of a
// rejected decision is confirmation_required: a person's approval would
// then decide the call.
func onlyConfirmationMissing(d *host.Decision) bool {
	n := 0
	for _, f := range d.Findings {
		if f.Advisory || f.Severity != abi.Blocking {
			continue
		}
		if f.Code != codeConfirmationRequired {
			return false
		}
		n++
	}
	return n > 0
}

// codeConfirmationRequired is the exec gate's code for a call that needs a
// person's confirmation (docs/GATES.md, exec check 6).
const codeConfirmationRequired = "confirmation_required"

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
