package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"

	"github.com/gatehost/gatehost/mcpgateway"
)

const mcpApproveUsage = `Usage: gatehost mcp approve [flags] [--yes] [--tool TOOL]... [-- UPSTREAM-COMMAND...]

Review the tools the config's MCP upstreams list, and the instructions each
gives (as UPSTREAM:@instructions), against the gateway's trust baseline
(mcp.baseline.path, or the lock file beside sessions.path), and with --yes
approve them: each --tool (UPSTREAM:TOOL, UPSTREAM:@instructions, or a name
one upstream lists), or without --tool every new or changed one. Approved
definitions and instructions are what every gateway session is shown and
decided against; each approval is recorded in the event log. Without --yes
nothing is written.

Exit codes: 0 reviewed (and approved with --yes); 1 an upstream could not be
listed; 2 usage, config or baseline error.
`

// cmdMCPApprove is `gatehost mcp approve`.
func cmdMCPApprove(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mcp approve", mcpApproveUsage, stderr, flagConfig|flagPipeline|flagLogLevel|flagOutput)
	upstreamName := fs.String("upstream-name", "upstream", "name of the upstream given after --")
	yes := fs.Bool("yes", false, "write the approvals (without it, only review)")
	by := fs.String("by", "", "who approves, recorded with each entry (default operator:$USER)")
	tools := fs.StringArray("tool", nil, "a tool to approve: UPSTREAM:TOOL, UPSTREAM:@instructions, or a name one upstream lists (repeat it; none: every new or changed one)")
	if code, done := fs.parse(args, func(int) bool { return true }); done {
		return code
	}
	g, _, _, closeAll, err := openGateway(ctx, fs, *upstreamName, nil)
	if err != nil {
		return fail(stderr, err)
	}
	defer closeAll()
	reviews, failed, err := g.ReviewBaseline(ctx)
	if err != nil {
		return fail(stderr, err)
	}
	var approved []mcpgateway.ToolReview
	if *yes {
		who := *by
		if who == "" {
			who = "operator"
			if u, err := user.Current(); err == nil && u.Username != "" {
				who = "operator:" + u.Username
			}
		}
		if approved, err = g.ApproveBaseline(ctx, reviews, *tools, who); err != nil {
			if errors.Is(err, mcpgateway.ErrNotReviewed) {
				err = fmt.Errorf("%w: %w", errUsage, err)
			}
			return fail(stderr, err)
		}
	}
	if fs.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Tools    []mcpgateway.ToolReview    `json:"tools"`
			Failed   []mcpgateway.UpstreamError `json:"failed_upstreams"`
			Approved []mcpgateway.ToolReview    `json:"approved"`
		}{nonNil(reviews), nonNil(failed), nonNil(approved)})
	} else {
		printReview(stdout, reviews, failed, approved, *yes)
	}
	if len(failed) > 0 {
		return 1
	}
	return 0
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printReview writes the review for a person: one line a tool, the fields
// that changed under a changed one.
func printReview(w io.Writer, reviews []mcpgateway.ToolReview, failed []mcpgateway.UpstreamError, approved []mcpgateway.ToolReview, wrote bool) {
	pending := 0
	for _, r := range reviews {
		fmt.Fprintf(w, "%-8s %s:%s\n", r.Status, r.Upstream, r.Tool)
		for _, c := range r.Changes {
			fmt.Fprintf(w, "           %s: %s -> %s\n", c.Path, orAbsent(c.Old), orAbsent(c.New))
		}
		if r.Status != mcpgateway.ReviewApproved {
			pending++
		}
	}
	for _, f := range failed {
		fmt.Fprintf(w, "failed   %s: %s\n", f.Upstream, f.Error)
	}
	switch {
	case wrote && len(approved) > 0:
		names := make([]string, len(approved))
		for i, r := range approved {
			names[i] = r.Upstream + ":" + r.Tool
		}
		fmt.Fprintf(w, "approved %d: %s\n", len(approved), strings.Join(names, ", "))
	case wrote:
		fmt.Fprintln(w, "nothing to approve")
	case pending > 0:
		fmt.Fprintf(w, "%d new or changed; run again with --yes to approve them (or name them)\n", pending)
	default:
		fmt.Fprintln(w, "every listed tool is approved")
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}
