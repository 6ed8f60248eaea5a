package mcpgateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/subject"
)

// MetaApproval marks, in the elicitation's _meta, a prompt that is
// gatehost's own approval request. Upstreams cannot send it: the gateway
// strips gatehost's _meta namespace from everything they send.
const MetaApproval = "gatehost/approval"

// Answers recorded with an approval request (approval.Record's Answer),
// and the refusal code of each answer short of an approval.
const (
	answerApproved  = "approved"
	answerDeclined  = "declined"  // accept without approve: true, or decline
	answerCancelled = "cancelled" // the person dismissed the request
	answerTimeout   = "timeout"   // no answer within the approval TTL
	answerFailed    = "failed"    // the client did not answer (disconnect, protocol error)
)

var answerCodes = map[string]string{
	answerDeclined:  approval.CodeDeclined,
	answerCancelled: approval.CodeCancelled,
	answerTimeout:   approval.CodeTimeout,
	answerFailed:    approval.CodeNotAnswered,
}

// confirm asks the person, through elicitation/create, to approve a call
// the pipeline rejected only for want of a confirmation. An approval is
// recorded in the event log when granted, then taken by a second run that
// carries its id (see confirmer) and is bound to that run's snapshot. Any
// outcome short of an approved call (no elicitation capability, decline,
// cancel, timeout, a failed record, an approval that no longer fits)
// returns the first decision, rejected with confirmation_required, or an
// error when the second run could not be checked (nothing is then sent).
func (d *downstream) confirm(ctx context.Context, c call, dec *host.Decision, up *upconn) (*host.Decision, error) {
	g := d.g
	ss := d.serverSession()
	caps := d.clientCapabilities()
	if ss == nil || caps.Elicitation == nil || up == nil {
		return dec, nil
	}
	t, ok := g.Host().Catalog().Snapshot().Get(c.name)
	if !ok {
		return dec, nil
	}
	// The subject exactly as the host records it, so that the binding is
	// the host's subject_sha256.
	native, err := g.Host().NativeSubject(g.opts.Pipeline, c.params, subject.FormatMCP)
	if err != nil {
		return dec, nil
	}
	sum := sha256.Sum256(native)
	b := approval.Binding{Pipeline: g.opts.Pipeline, Session: c.session, Tool: t.ID,
		SchemaDigest: t.SchemaDigest, SubjectSHA256: hex.EncodeToString(sum[:])}
	from := approval.Origin{RunID: dec.RunID}

	msg, err := approvalMessage(t.ID, string(t.Effect), up.u.Name, c.args, g.opts.MaxApprovalArgumentBytes)
	if err != nil {
		// What cannot be shown whole cannot be approved.
		g.opts.Logger.Warn("mcp gateway: approval not asked", "run_id", dec.RunID, "tool", t.ID, "reason", err)
		_ = g.approvals.Refuse(b, approval.CodeNotShown, "", from)
		return dec, nil
	}
	ectx, cancel := context.WithTimeout(ctx, g.opts.ApprovalTTL)
	go func() {
		select {
		case <-d.gone:
			cancel()
		case <-ectx.Done():
		}
	}()
	res, err := ss.Elicit(ectx, &mcp.ElicitParams{
		Message: msg,
		Meta:    mcp.Meta{MetaApproval: true},
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve this call",
					"description": "true runs this exact call once; anything else refuses it"},
			},
			"required": []string{"approve"},
		},
	})
	timedOut := errors.Is(ectx.Err(), context.DeadlineExceeded)
	cancel()
	var answer string
	switch {
	case err != nil && timedOut:
		answer = answerTimeout
	case err != nil:
		answer = answerFailed
	case res.Action == "accept" && res.Content["approve"] == true:
		answer = answerApproved
	case res.Action == "cancel":
		answer = answerCancelled
	default:
		answer = answerDeclined
	}
	g.opts.Logger.Info("mcp gateway: confirmation asked", "run_id", dec.RunID, "tool", t.ID, "answer", answer)
	if answer != answerApproved {
		if err := g.approvals.Refuse(b, answerCodes[answer], answer, from); err != nil {
			g.opts.Logger.Error("mcp gateway: refused approval not recorded", "run_id", dec.RunID, "error", err)
		}
		return dec, nil
	}
	// Minted (stored, then recorded) before the second run: an approval
	// the log or the store refuses is not used.
	ap, err := g.approvals.Mint(ctx, b, approval.ApproverMCPClient, answer, from)
	if err != nil {
		g.opts.Logger.Error("mcp gateway: approval not minted; not used", "run_id", dec.RunID, "error", err)
		return dec, nil
	}
	if ctx.Err() != nil {
		return dec, nil
	}
	// The person took time: the upstream may have changed its tools
	// meanwhile. The approved run is decided on what it lists now.
	if up.stale() {
		if cs := up.current(); cs != nil {
			lctx, cancel := context.WithTimeout(ctx, g.opts.ConnectTimeout)
			if err := g.relist(lctx, up, cs); err != nil {
				g.opts.Logger.Warn("mcp gateway: re-list after approval failed", "upstream", up.u.Name, "error", err)
			}
			cancel()
		}
	}
	c.seen = up.listing.Load()
	if c.refusals = g.baselineRefusal(ctx, up, c.upstreamName); len(c.refusals) > 0 {
		// Refused whatever the person said: decided (and recorded)
		// without the approval, which stays unused until it expires.
		return g.decide(ctx, c)
	}
	c.token = ap.ID
	dec2, err := g.decide(ctx, c)
	if dec2 == nil {
		g.opts.Logger.Error("mcp gateway: confirmed run not checked; nothing is sent", "approval_id", ap.ID, "error", err)
		return nil, err
	}
	return dec2, err
}

// effectWords say what an effect class means (host/catalog Effect); an
// unknown class reads as the most careful one.
var effectWords = map[catalog.Effect]string{
	catalog.EffectReadOnly:        "it only reads",
	catalog.EffectIdempotentWrite: "it changes something, and repeating it changes nothing more",
	catalog.EffectNonIdempotent:   "it changes something, and may not be safe to repeat",
}

// approvalHeading starts gatehost's approval prompt. An upstream's
// elicitation never starts so (each is prefixed with upstreamLabel), and
// one that contains it is refused (imitatesApproval).
const approvalHeading = "gatehost approval request"

// errNotShowable: the arguments cannot be shown whole, so the call cannot
// be approved through a prompt.
var errNotShowable = errors.New("arguments too long to show whole")

// approvalMessage says in plain words what the person approves: the
// tool, the server, the effect class, and every argument that will be
// sent, as indented JSON in which every control, invisible and
// bidirectional character is escaped (\uXXXX), so that what the person
// reads is what runs. Arguments longer than max bytes so shown are not cut:
// errNotShowable, and the call is not approved this way.
func approvalMessage(tool, effect, upstream string, args json.RawMessage, max int) (string, error) {
	shown, err := showArguments(args)
	if err != nil {
		return "", err
	}
	if len(shown) > max {
		return "", fmt.Errorf("%w: %d bytes, at most %d", errNotShowable, len(shown), max)
	}
	return fmt.Sprintf("%s\nThe agent wants to run %s on the MCP server %q. Its effect class is %s: %s. These are all of its arguments, exactly as they will be sent (invisible and control characters written as \\uXXXX):\n%s\nApprove this one call?",
		approvalHeading, tool, upstream, effect, cmp.Or(effectWords[catalog.Effect(effect)], effectWords[catalog.EffectNonIdempotent]), shown), nil
}

// showArguments renders the arguments as indented JSON with every
// character a person could not see or that reorders text escaped.
func showArguments(args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, args, "", "  "); err != nil {
		return "", fmt.Errorf("arguments are not JSON: %w", err)
	}
	var b strings.Builder
	for _, r := range buf.String() {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == utf8.RuneError, unicode.IsControl(r), isInvisible(r), unicode.In(r, unicode.Zl, unicode.Zp),
			r != ' ' && unicode.IsSpace(r), unicode.Is(unicode.Bidi_Control, r):
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
