package mcpgateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/host/eventlog"
)

// Event-log record kinds of approvals obtained through elicitation. The
// kinds are those of `gatehost serve`'s approvals, so that one audit reads
// both.
const (
	kindApprovalMinted  = "approval_minted"
	kindApprovalUsed    = "approval_used"
	kindApprovalRefused = "approval_refused"
)

// Answers recorded with an approval request.
const (
	answerApproved  = "approved"
	answerDeclined  = "declined"  // accept without approve: true, or decline
	answerCancelled = "cancelled" // the person dismissed the request
	answerTimeout   = "timeout"   // no answer within ApprovalTTL
	answerFailed    = "failed"    // the client did not answer (disconnect, protocol error)
)

// Errors of an approval presented for a call it does not fit.
var (
	errApprovalUnknown  = errors.New("approval unknown or already used")
	errApprovalExpired  = errors.New("approval expired")
	errApprovalMismatch = errors.New("approval bound to another call")
)

// approval is a person's yes to one call: bound to the session, the
// tool's canonical id, its schema digest and the SHA-256 of the native
// subject (the subject_sha256 of the decision record); single-use.
type approval struct {
	ID            string    `json:"approval_id"`
	Pipeline      string    `json:"pipeline"`
	Session       string    `json:"session"`
	Tool          string    `json:"tool"`
	SchemaDigest  string    `json:"schema_digest"`
	SubjectSHA256 string    `json:"subject_sha256"`
	ExpiresAt     time.Time `json:"expires_at"`
	Answer        string    `json:"answer"`
}

// approvals holds the approvals granted and not yet used.
type approvals struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]approval
}

func newApprovals(ttl time.Duration) *approvals {
	return &approvals{ttl: ttl, now: time.Now, m: map[string]approval{}}
}

func (a *approvals) add(ap approval) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for id, x := range a.m { // expired ones are never usable: drop them
		if now.After(x.ExpiresAt) {
			delete(a.m, id)
		}
	}
	a.m[ap.ID] = ap
}

// take consumes the approval id for exactly the call described by want;
// whatever the outcome, the approval is gone afterwards.
func (a *approvals) take(id string, want approval) error {
	a.mu.Lock()
	ap, ok := a.m[id]
	delete(a.m, id)
	a.mu.Unlock()
	switch {
	case !ok:
		return errApprovalUnknown
	case a.now().After(ap.ExpiresAt):
		return errApprovalExpired
	case ap.Session != want.Session || ap.Tool != want.Tool || ap.SchemaDigest != want.SchemaDigest ||
		ap.SubjectSHA256 != want.SubjectSHA256 || ap.Pipeline != want.Pipeline:
		return errApprovalMismatch
	}
	return nil
}

// confirm asks the person, through elicitation/create, to approve a call
// the pipeline rejected only for want of a confirmation. An approval is
// recorded in the event log before it is used, then consumed by a second
// run that carries it; any other outcome (no elicitation capability,
// decline, cancel, timeout, a failed record) returns the first decision:
// rejected with confirmation_required.
func (d *downstream) confirm(ctx context.Context, c call, dec *host.Decision, native []byte, up *upconn) *host.Decision {
	g := d.g
	ss := d.serverSession()
	caps := d.clientCapabilities()
	if ss == nil || caps.Elicitation == nil || up == nil {
		return dec
	}
	t, ok := g.h.Catalog().Snapshot().Get(c.name)
	if !ok {
		return dec
	}
	sum := sha256.Sum256(native)
	ap := approval{ID: "ap-" + randomHex(16), Pipeline: g.opts.Pipeline, Session: c.session, Tool: t.ID,
		SchemaDigest: t.SchemaDigest, SubjectSHA256: hex.EncodeToString(sum[:]),
		ExpiresAt: g.approvals.now().Add(g.opts.ApprovalTTL)}

	ectx, cancel := context.WithTimeout(ctx, g.opts.ApprovalTTL)
	go func() {
		select {
		case <-d.gone:
			cancel()
		case <-ectx.Done():
		}
	}()
	res, err := ss.Elicit(ectx, &mcp.ElicitParams{
		Message: approvalMessage(t.ID, string(t.Effect), up.u.Name, c.args),
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
	switch {
	case err != nil && timedOut:
		ap.Answer = answerTimeout
	case err != nil:
		ap.Answer = answerFailed
	case res.Action == "accept" && res.Content["approve"] == true:
		ap.Answer = answerApproved
	case res.Action == "cancel":
		ap.Answer = answerCancelled
	default:
		ap.Answer = answerDeclined
	}
	kind := kindApprovalMinted
	if ap.Answer != answerApproved {
		kind = kindApprovalRefused
	}
	if err := g.record(kind, dec.RunID, ap.Answer, ap); err != nil {
		g.opts.Logger.Error("mcp gateway: approval not recorded; not used", "run_id", dec.RunID, "error", err)
		return dec
	}
	g.opts.Logger.Info("mcp gateway: confirmation asked", "run_id", dec.RunID, "tool", t.ID, "answer", ap.Answer)
	if ap.Answer != answerApproved || ctx.Err() != nil {
		return dec
	}
	g.approvals.add(ap)

	// The approval is consumed against the catalog as it is now: a tool
	// whose schema changed while the person was asked is another call.
	now, ok := g.h.Catalog().Snapshot().Get(c.name)
	if !ok {
		now = t
		now.SchemaDigest = ""
	}
	want := ap
	want.Tool, want.SchemaDigest = now.ID, now.SchemaDigest
	if err := g.approvals.take(ap.ID, want); err != nil {
		_ = g.record(kindApprovalRefused, dec.RunID, err.Error(), ap)
		return dec
	}
	c.confirmation = &abi.Confirmation{Tool: t.ID, Token: ap.ID}
	dec2, _, err := g.decide(ctx, c)
	if dec2 == nil {
		g.opts.Logger.Error("mcp gateway: confirmed run failed", "error", err)
		return dec
	}
	if err := g.record(kindApprovalUsed, dec2.RunID, "", ap); err != nil {
		g.opts.Logger.Error("mcp gateway: approval use not recorded; the call is not forwarded", "run_id", dec2.RunID, "error", err)
		return dec
	}
	return dec2
}

// record appends an approval record to the event log, if there is one.
func (g *Gateway) record(kind, runID, reason string, ap approval) error {
	if g.opts.EventLog == nil {
		return nil
	}
	data, err := json.Marshal(ap)
	if err != nil {
		return err
	}
	_, err = g.opts.EventLog.Append(eventlog.Record{Kind: kind, RunID: runID, Pipeline: ap.Pipeline, Reason: reason, Data: data})
	return err
}

// effectWords say what an effect class means (host/catalog Effect); an
// unknown class reads as the most careful one.
var effectWords = map[catalog.Effect]string{
	catalog.EffectReadOnly:        "it only reads",
	catalog.EffectIdempotentWrite: "it changes something, and repeating it changes nothing more",
	catalog.EffectNonIdempotent:   "it changes something, and may not be safe to repeat",
}

// maxShownArguments caps the arguments shown to the person.
const maxShownArguments = 2048

// approvalMessage says in plain words what the person approves. The
// arguments are shown to the person (never to the agent in a denial).
func approvalMessage(tool, effect, upstream string, args json.RawMessage) string {
	shown := string(args)
	if len(shown) == 0 {
		shown = "{}"
	}
	if len(shown) > maxShownArguments {
		cut := maxShownArguments
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut] + " …(cut)"
	}
	return fmt.Sprintf("The agent wants to run %s on the MCP server %q. Its effect class is %s: %s. Arguments:\n%s\nApprove this one call?",
		tool, upstream, effect, cmp.Or(effectWords[catalog.Effect(effect)], effectWords[catalog.EffectNonIdempotent]), shown)
}
