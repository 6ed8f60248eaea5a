package mcpgateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
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

// confirm gets a person's approval of a call the pipeline rejected only
// for want of a confirmation, and returns the decision of the approved
// run, or the first decision (rejected, confirmation_required) with the
// request a person must decide. An error means the approved run could not
// be checked (nothing is then sent).
//
// With Options.Elicitation ElicitForm the client's answer to a form
// elicitation is the approval (confirmByForm). Otherwise the call becomes
// a request on the approval page (approval.Desk): an approver other than
// the caller decides it there, never the MCP client. A client that
// declares URL-mode elicitation is sent to the request's page and the call
// waits for the decision (within the approval TTL); any other client gets
// the refusal with the page's URL, and the identical call made again once
// approved runs, once.
//
// A sessionless client (MCP 2026-07-28) is asked through an input_required
// answer instead (roundtrip.go): ask is that answer, to be sent as the
// call's result, when the client is to be asked.
func (d *downstream) confirm(ctx context.Context, c call, dec *host.Decision, up *upconn) (_ *host.Decision, pending *approval.Request, ask mcp.Result, _ error) {
	g := d.g
	if up == nil {
		return dec, nil, nil, nil
	}
	// The binding is the host's subject_sha256 of this very call.
	call, err := approval.Bind(g.Host(), g.opts.Pipeline, c.session, c.principal, c.params, subject.FormatMCP)
	if err != nil {
		return dec, nil, nil, nil
	}
	b, t := call.Binding, call.Tool
	if g.opts.Elicitation == ElicitForm {
		return d.confirmByForm(ctx, c, dec, up, t, b)
	}
	sessionless, answered := d.isSessionless(), false
	r, ok := approval.Request{}, false
	if sessionless {
		// The call made again with the answer to a request's input: that
		// request, whatever became of it (a denied one is not reopened).
		r, ok = d.answeredRequest(ctx, b)
	}
	if !ok {
		r, _, err = g.desk.Open(ctx, approval.Request{Binding: b, Upstream: up.u.Name, Effect: string(t.Effect),
			Caller: d.principal, Findings: dec.Blocking(), Arguments: call.Arguments, Front: "mcp"})
		if err != nil {
			// No request, no approval: the call stays refused.
			g.opts.Logger.Warn("mcp gateway: approval request not opened", "run_id", dec.RunID, "tool", t.ID, "error", err)
			return dec, nil, nil, nil
		}
	}
	switch {
	case g.opts.Elicitation != ElicitURL:
	case sessionless:
		r, answered = d.pageAnswer(ctx, r)
	case r.State == approval.StatePending:
		r = d.elicitURL(ctx, r, dec.RunID)
	}
	if r.State != approval.StateApproved {
		if sessionless && !answered && g.opts.Elicitation == ElicitURL {
			if res, ok := d.pageInput(&r, dec.RunID); ok {
				return dec, &r, res, nil
			}
		}
		return dec, &r, nil, nil
	}
	// Approved: this front end claims the approval (once, whichever
	// replica or session asks), then presents it in the second run.
	if r, err = g.desk.UseReady(ctx, r.ID); err != nil {
		g.opts.Logger.Warn("mcp gateway: approved request not usable", "request_id", r.ID, "error", err)
		return dec, &r, nil, nil
	}
	dec2, err := d.runApproved(ctx, c, dec, up, r.ApprovalID)
	return dec2, nil, nil, err
}

// withApproval tells the agent, in the refused call's result, what a
// person must do: the request and its page (text, and under _meta
// MetaApproval: request_id, state, url, expires_at), or that nobody can
// approve here. The approval itself never travels this way.
func (g *Gateway) withApproval(res *mcp.CallToolResult, r *approval.Request) {
	var text string
	view := map[string]any{}
	switch {
	case r == nil:
		text = "A person must approve this call, and no approval request could be opened; nothing was sent."
		view["state"] = "unavailable"
	default:
		u := g.desk.URL(r.ID)
		view["request_id"], view["state"], view["expires_at"] = r.ID, r.State, r.ExpiresAt
		if u != "" {
			view["url"] = u
		}
		switch {
		case r.State == approval.StateDenied:
			text = fmt.Sprintf("An approver denied this call (request %s).", r.ID)
			if r.Note != "" {
				text += " Their note: " + strconv.Quote(r.Note)
			}
		case u == "":
			text = fmt.Sprintf("A person must approve this call (request %s), and this gateway serves no approval page (approvals.page): nobody can approve it here.", r.ID)
		case !r.Open(g.approvals.Now()):
			text = fmt.Sprintf("A person must approve this call, and nobody decided request %s before it expired; make the call again to ask anew.", r.ID)
			view["state"] = "expired"
		default:
			text = fmt.Sprintf("A person must approve this call: an approver decides it at %s (request %s, open until %s). Once it is approved, make the identical call again; it then runs once.",
				u, r.ID, r.ExpiresAt.Format(time.RFC3339))
		}
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: text})
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[MetaApproval] = view
}

// elicitURL sends the person to request r's page with a URL-mode
// elicitation, when the client declares URL mode and the page has a URL,
// and waits for the decision within r's expiry. It returns r as it then
// is: still pending when the client cannot show the URL, the person
// declined to open it, or nobody decided in time.
func (d *downstream) elicitURL(ctx context.Context, r approval.Request, runID string) approval.Request {
	g := d.g
	ss := d.serverSession()
	caps := d.clientCapabilities()
	u := g.desk.URL(r.ID)
	if ss == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil || u == "" {
		return r
	}
	wctx, cancel := context.WithDeadline(ctx, r.ExpiresAt)
	defer cancel()
	go func() {
		select {
		case <-d.gone:
			cancel()
		case <-wctx.Done():
		}
	}()
	res, err := ss.Elicit(wctx, &mcp.ElicitParams{Mode: "url", URL: u, ElicitationID: r.ID, Meta: mcp.Meta{MetaApproval: true},
		Message: fmt.Sprintf("%s\nThe agent wants to run %s on the MCP server %q. An approver decides it on the approval page; open it to review every argument.",
			approvalHeading, r.Tool, r.Upstream)})
	if err != nil || res.Action != "accept" {
		answer := "failed"
		if err == nil {
			answer = res.Action
		}
		g.opts.Logger.Info("mcp gateway: approval page not opened by the client", "run_id", runID, "request_id", r.ID, "answer", answer)
		return r
	}
	got, err := g.desk.Wait(wctx, r.ID)
	if err != nil {
		g.opts.Logger.Info("mcp gateway: approval not decided", "run_id", runID, "request_id", r.ID, "reason", err)
		return r
	}
	// The out-of-band interaction is over, whatever its outcome.
	if err := ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: r.ID}); err != nil {
		g.opts.Logger.Debug("mcp gateway: elicitation complete not sent", "request_id", r.ID, "error", err)
	}
	return got
}

// runApproved decides the call again presenting approval token: on what
// the upstream lists now (the person took time; it may have changed its
// tools), and refused by the trust baseline whatever the person said.
func (d *downstream) runApproved(ctx context.Context, c call, dec *host.Decision, up *upconn, token string) (*host.Decision, error) {
	g := d.g
	if ctx.Err() != nil {
		return dec, nil
	}
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
	c.token = token
	dec2, err := g.decide(ctx, c)
	if dec2 == nil {
		g.opts.Logger.Error("mcp gateway: confirmed run not checked; nothing is sent", "approval_id", token, "error", err)
		return nil, err
	}
	return dec2, err
}

// confirmByForm asks the person, through a form-mode elicitation/create,
// to approve the call (Options.Elicitation ElicitForm): the client's
// answer is the approval, minted with approver approval.ApproverMCPClient.
// Any outcome short of an approved call (no elicitation capability,
// decline, cancel, timeout, a failed record, an approval that no longer
// fits) returns the first decision.
func (d *downstream) confirmByForm(ctx context.Context, c call, dec *host.Decision, up *upconn, t catalog.Tool, b approval.Binding) (*host.Decision, *approval.Request, mcp.Result, error) {
	g := d.g
	ss := d.serverSession()
	caps := d.clientCapabilities()
	if ss == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		return dec, nil, nil, nil
	}
	from := approval.Origin{RunID: dec.RunID}
	msg, err := approvalMessage(t.ID, string(t.Effect), up.u.Name, c.args, g.opts.MaxApprovalArgumentBytes)
	if err != nil {
		// What cannot be shown whole cannot be approved.
		g.opts.Logger.Warn("mcp gateway: approval not asked", "run_id", dec.RunID, "tool", t.ID, "reason", err)
		_ = g.approvals.Refuse(b, approval.CodeNotShown, "", from)
		return dec, nil, nil, nil
	}
	var answer string
	if d.isSessionless() {
		// Asked in the call's answer; the answer comes with the call made
		// again, and counts only for the call that was shown.
		rt := roundTripFrom(ctx)
		res := rt.elicitAnswer()
		if res == nil || !g.formAnswered(d.principal, b, rt.state, g.approvals.Now()) {
			ask, err := d.formInput(msg, b, dec.RunID)
			if err != nil {
				return dec, nil, nil, nil
			}
			return dec, nil, ask, nil
		}
		answer = formAnswer(res, nil, false)
	} else {
		ectx, cancel := context.WithTimeout(ctx, g.opts.ApprovalTTL)
		go func() {
			select {
			case <-d.gone:
				cancel()
			case <-ectx.Done():
			}
		}()
		res, err := ss.Elicit(ectx, &mcp.ElicitParams{Message: msg, Meta: mcp.Meta{MetaApproval: true}, RequestedSchema: approveSchema()})
		answer = formAnswer(res, err, errors.Is(ectx.Err(), context.DeadlineExceeded))
		cancel()
	}
	g.opts.Logger.Info("mcp gateway: confirmation asked", "run_id", dec.RunID, "tool", t.ID, "answer", answer)
	if answer != answerApproved {
		if err := g.approvals.Refuse(b, answerCodes[answer], answer, from); err != nil {
			g.opts.Logger.Error("mcp gateway: refused approval not recorded", "run_id", dec.RunID, "error", err)
		}
		return dec, nil, nil, nil
	}
	// Minted (stored, then recorded) before the second run: an approval
	// the log or the store refuses is not used.
	ap, err := g.approvals.Mint(ctx, b, answer, from)
	if err != nil {
		g.opts.Logger.Error("mcp gateway: approval not minted; not used", "run_id", dec.RunID, "error", err)
		return dec, nil, nil, nil
	}
	dec2, err := d.runApproved(ctx, c, dec, up, ap.ID)
	return dec2, nil, nil, err
}

// formAnswer is the recorded answer to gatehost's approval form: res and
// err are the client's, timedOut that the approval TTL ran out first.
func formAnswer(res *mcp.ElicitResult, err error, timedOut bool) string {
	switch {
	case err != nil && timedOut:
		return answerTimeout
	case err != nil || res == nil:
		return answerFailed
	case res.Action == "accept" && res.Content["approve"] == true:
		return answerApproved
	case res.Action == "cancel":
		return answerCancelled
	}
	return answerDeclined
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
