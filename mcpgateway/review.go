package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/internal/editdist"
	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// Review statuses of a listed tool against the trust baseline.
const (
	ReviewApproved = "approved" // the baseline holds this very definition
	ReviewNew      = "new"      // the baseline holds nothing for the tool
	ReviewChanged  = "changed"  // the baseline holds another definition
)

// ToolReview is one listed tool as an operator reviews it before approving,
// or an upstream's instructions: Tool baseline.InstructionsTool
// ("@instructions"), Definition {"instructions": TEXT}.
type ToolReview struct {
	Upstream string `json:"upstream"`
	Tool     string `json:"tool"`
	// Status is ReviewApproved, ReviewNew or ReviewChanged.
	Status string `json:"status"`
	// Digest is the SHA-256 of the listed definition (baseline.Digest).
	Digest string `json:"digest"`
	// Definition is the tool exactly as the gateway would show it.
	Definition json.RawMessage `json:"definition"`
	// Changes is what differs from the baseline entry (ReviewChanged).
	Changes []baseline.Change `json:"changes,omitempty"`
}

// UpstreamError is an upstream that could not be started or listed for a
// review.
type UpstreamError struct {
	Upstream string `json:"upstream"`
	Error    string `json:"error"`
}

// ReviewBaseline starts every upstream once (bounded as a session's
// connection is), lists its tools and compares each, and the instructions
// it gives, with the trust baseline. It changes nothing: nothing enters
// the baseline by being reviewed. Instructions over
// baseline.MaxInstructionsBytes, which are never shown, are not reviewed
// (logged). Upstreams that fail are reported, not fatal; the error is for
// a baseline that cannot be read.
func (g *Gateway) ReviewBaseline(ctx context.Context) ([]ToolReview, []UpstreamError, error) {
	set, err := g.opts.Baseline.Load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpgateway: trust baseline: %w", err)
	}
	// Connections of its own, not the shared ones: listOnce connects
	// afresh.
	d := g.newDownstream(false)
	defer d.close()
	var out []ToolReview
	var failed []UpstreamError
	for _, c := range d.conns() {
		tools, instructions, err := c.listOnce(ctx)
		if err != nil {
			failed = append(failed, UpstreamError{Upstream: c.u.Name, Error: err.Error()})
			continue
		}
		review := func(name string, def json.RawMessage) {
			digest, err := baseline.Digest(def)
			if err != nil {
				return
			}
			r := ToolReview{Upstream: c.u.Name, Tool: name, Status: ReviewNew, Digest: digest, Definition: def}
			if e, ok := set.Get(baseline.Key{Upstream: c.u.Name, Tool: name}); ok {
				r.Status = ReviewApproved
				if e.Digest != digest {
					r.Status, r.Changes = ReviewChanged, baseline.Diff(e.Definition, def)
				}
			}
			out = append(out, r)
		}
		for _, w := range tools {
			if w.v != nil && badToolName(w.v.Name) == "" {
				review(w.v.Name, w.raw)
			}
		}
		if instructions != "" && !g.instructionsTooLong(c.u.Name, instructions) {
			review(baseline.InstructionsTool, baseline.InstructionsDefinition(instructions))
		}
	}
	return out, failed, nil
}

// listOnce connects to the upstream, reads its tools within the listing
// bounds and the instructions of its initialize result, and closes the
// connection; nothing is published.
func (c *upconn) listOnce(ctx context.Context) ([]wire[*mcp.Tool], string, error) {
	cctx, cancel := context.WithTimeout(ctx, c.g.opts.ConnectTimeout)
	defer cancel()
	cs, _, err := c.connect(cctx, false)
	if err != nil {
		return nil, "", fmt.Errorf("%w %s: %w", ErrUpstream, c.u.Name, err)
	}
	defer func() { _ = cs.Close() }()
	instructions := ""
	if r := cs.InitializeResult(); r != nil {
		instructions = r.Instructions
	}
	tools, _, err := listWireTools(cctx, c.g.opts, cs)
	return tools, instructions, err
}

// ErrNotReviewed: ApproveBaseline was given a tool the review does not
// hold.
var ErrNotReviewed = errors.New("mcpgateway: not in the review")

// ApproveBaseline writes the reviewed definitions of the named tools
// ("UPSTREAM:TOOL" or the tool's name when only one upstream lists it; none
// means every new or changed tool) into the trust baseline, approved by
// by, and records each approval (mcp_tool_approved) in the event log. It
// returns what it approved. A name that matches no reviewed tool is an
// error (ErrNotReviewed), and nothing is written.
func (g *Gateway) ApproveBaseline(ctx context.Context, reviews []ToolReview, names []string, by string) ([]ToolReview, error) {
	var pick []ToolReview
	if len(names) == 0 {
		for _, r := range reviews {
			if r.Status != ReviewApproved {
				pick = append(pick, r)
			}
		}
	}
	for _, n := range names {
		var match []ToolReview
		for _, r := range reviews {
			if n == r.Upstream+":"+r.Tool || n == "mcp."+r.Upstream+":"+r.Tool || n == r.Tool {
				match = append(match, r)
			}
		}
		switch len(match) {
		case 0:
			return nil, fmt.Errorf("%w: %q matches no listed tool%s", ErrNotReviewed, n, suggest(n, reviews))
		case 1:
			pick = append(pick, match[0])
		default:
			return nil, fmt.Errorf("%w: %q is listed by several upstreams; name it as UPSTREAM:TOOL", ErrNotReviewed, n)
		}
	}
	if len(pick) == 0 {
		return nil, nil
	}
	now := time.Now().UTC()
	entries := make([]baseline.Entry, 0, len(pick))
	for _, r := range pick {
		e, err := baseline.NewEntry(r.Upstream, r.Tool, r.Definition, by, now)
		if err != nil {
			return nil, fmt.Errorf("mcpgateway: %s:%s: %w", r.Upstream, r.Tool, err)
		}
		entries = append(entries, e)
	}
	if _, err := g.opts.Baseline.Approve(ctx, entries); err != nil {
		return nil, fmt.Errorf("mcpgateway: trust baseline: %w", err)
	}
	for _, e := range entries {
		g.recordEdge(kindBaselineApproved, map[string]any{"upstream": e.Upstream, "tool": e.Tool, "digest": e.Digest, "approved_by": e.ApprovedBy})
	}
	return pick, nil
}

// suggest names the reviewed tool closest to n, for an error message.
func suggest(n string, reviews []ToolReview) string {
	// A name may be given bare or as UPSTREAM:TOOL; the suggestion is
	// always the qualified name, which matches one tool.
	qualified := map[string]string{}
	for _, r := range reviews {
		q := r.Upstream + ":" + r.Tool
		qualified[q] = q
		if prev, dup := qualified[r.Tool]; dup && prev != q {
			qualified[r.Tool] = "" // listed by several upstreams: only the qualified names
		} else if !dup {
			qualified[r.Tool] = q
		}
	}
	var cands []string
	for c, q := range qualified {
		if q != "" {
			cands = append(cands, c)
		}
	}
	best, ok := editdist.Closest(n, cands)
	if !ok {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", qualified[best])
}
