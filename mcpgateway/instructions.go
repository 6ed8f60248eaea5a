package mcpgateway

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/mcpgateway/baseline"
)

// An upstream's instructions (the text of its initialize result, which an
// MCP client puts into the model's context) are model-visible as its tools
// are, and pinned in the same trust baseline: the entry of the reserved
// tool name baseline.InstructionsTool. The client is shown the pinned
// text only, labelled with the upstream's name (labelInstructions); the
// server info it is shown is gatehost's own.

// pinnedInstructions checks the instructions the upstream gave when the
// connection cs was initialized against the trust baseline, read now (an
// operator's approval counts at once), and returns the text the model is
// to be shown of them: the pinned text, or "" when nothing is pinned or
// the upstream gives none now.
//
// Instructions with no entry are pinned at first sight as a tool is at its
// first listing (firstSightTrusted); otherwise an operator approves them
// (gatehost mcp approve). Instructions other than the pinned ones are
// drift: recorded once (mcp_tool_drifted, tool "@instructions"), and the
// pinned text is what sessions are shown until an operator approves the
// new one. Instructions over baseline.MaxInstructionsBytes are neither
// pinned nor shown (logged).
func (g *Gateway) pinnedInstructions(ctx context.Context, c *upconn, cs *mcp.ClientSession) (string, error) {
	r := cs.InitializeResult()
	if r == nil || r.Instructions == "" {
		return "", nil
	}
	text := r.Instructions
	if g.instructionsTooLong(c.u.Name, text) {
		return "", nil
	}
	def := baseline.InstructionsDefinition(text)
	digest, err := baseline.Digest(def)
	if err != nil {
		return "", fmt.Errorf("trust baseline: %w", err)
	}
	k := baseline.Key{Upstream: c.u.Name, Tool: baseline.InstructionsTool}
	set, err := g.opts.Baseline.Load(ctx)
	if err != nil {
		return "", fmt.Errorf("trust baseline: %w", err)
	}
	e, ok := set.Get(k)
	if !ok && g.firstSightTrusted(c) {
		first := baseline.Entry{Upstream: c.u.Name, Tool: baseline.InstructionsTool, Digest: digest, Definition: def,
			ApprovedBy: baseline.ApprovedByFirstListing, ApprovedAt: time.Now().UTC()}
		if set, err = g.pinFirst(ctx, []baseline.Entry{first}); err != nil {
			return "", fmt.Errorf("trust baseline: %w", err)
		}
		e, ok = set.Get(k)
	}
	if !ok {
		return "", nil
	}
	if e.Digest != digest {
		g.recordDrift(e, digest, def, "mcp gateway: upstream's instructions differ from its trust baseline; sessions are shown the approved instructions until an operator approves the new ones")
	}
	pinned, _ := e.Instructions()
	return pinned, nil
}

// instructionsTooLong reports whether an upstream's instructions are over
// baseline.MaxInstructionsBytes, so neither pinned, reviewed nor shown,
// and logs it once per upstream and length.
func (g *Gateway) instructionsTooLong(upstream, text string) bool {
	if len(text) <= baseline.MaxInstructionsBytes {
		return false
	}
	key := upstream + "\x00" + baseline.InstructionsTool + "\x00too long\x00" + strconv.Itoa(len(text))
	if _, seen := g.driftSeen.LoadOrStore(key, true); !seen {
		g.opts.Logger.Warn("mcp gateway: upstream's instructions are too long; they are neither pinned nor shown",
			"upstream", upstream, "bytes", len(text), "max", baseline.MaxInstructionsBytes)
	}
	return true
}

// firstSightTrusted reports whether the upstream's instructions enter the
// baseline at first sight: as its tools do at their first listing, unless
// approval is required or the upstream is unverified, when the config
// trusts "*" or one of the tools the connection lists
// (trustedAtFirstListing).
func (g *Gateway) firstSightTrusted(c *upconn) bool {
	if g.opts.RequireApproval || c.u.Trust == TrustUnverified {
		return false
	}
	for _, list := range [][]string{g.opts.CoreTools, g.opts.ActivateOnList} {
		for _, n := range list {
			if n == "*" {
				return true
			}
		}
	}
	if l := c.listing.Load(); l != nil {
		for _, t := range l.tools {
			if g.trustedAtFirstListing(c.u.Name, t.Name) {
				return true
			}
		}
	}
	return false
}

// instructionsLinePrefix begins every line of an upstream's instructions
// as the client is shown them.
const instructionsLinePrefix = "| "

// labelInstructions is an upstream's pinned instructions as the client is
// shown them: a line naming the upstream and saying they are not
// gatehost's, then each line of the text after instructionsLinePrefix.
// Every kind of line break (LF, CR, CRLF, NEL, U+2028, U+2029, VT, FF)
// ends a line, and other control characters but tab are dropped, so no
// line of the text can pass for the label of gatehost or of another
// upstream.
func labelInstructions(upstream, text string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Instructions of the MCP server %q, not of gatehost; each of their lines begins with %q.]", upstream, instructionsLinePrefix)
	text = strings.ReplaceAll(text, "\r\n", "\n")
	line := func() { b.WriteString("\n" + instructionsLinePrefix) }
	line()
	for _, r := range text {
		switch {
		case r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			line()
		case r == '\t' || !unicode.IsControl(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
