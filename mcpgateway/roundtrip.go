package mcpgateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/approval"
	"github.com/gatehost/gatehost/host/session"
)

// Approvals of a sessionless client (MCP 2026-07-28). That revision takes
// no request from the server during a call: a server that needs input
// answers the call with resultType "input_required", the input requests
// and an opaque requestState, and the client calls again with its
// answers (inputResponses) and that state (multi round-trip requests,
// SEP-2322). The gateway asks for a person's approval so:
//
//   - with the approval page (Options.Elicitation ElicitURL), the input
//     request is a URL-mode elicitation of the request's page, and the
//     state names the request. The client's answer only says that the
//     person was shown the page: what runs the call is an approver's
//     decision on the desk, read from the store when the call comes
//     again, never the client's answer.
//   - with ElicitForm, the input request is the approval form, and the
//     client's answer is the approval (the operator chose so), valid only
//     for the call that was shown: the state is a MAC of the caller and
//     the call's binding.
//
// Over HTTP every sessionless request is a gatehost session of its own;
// an approval is bound to its session (approval.Binding), so the call
// made again resumes the session the request was opened in. The state is
// checked before that: it must name a request of this gateway's desk
// opened by the same principal for an MCP call.

// inputApproval is the key of gatehost's own input request in an
// input_required result and of its answer in inputResponses.
const inputApproval = "gatehost/approval"

// Request states the gateway issues: statePage followed by an approval
// request id; stateForm followed by a nonce, the Unix time the answer is
// due by and the MAC (hex), dot-separated.
const (
	statePage = "gatehost.page."
	stateForm = "gatehost.form."
)

// roundTrip is what a sessionless tools/call carries from an earlier
// input_required answer: its request state and input responses. They are
// taken off the request (sessionlessRequest) before it is decided: they
// are not part of the call.
type roundTrip struct {
	state     string
	responses mcp.InputResponseMap
}

type roundTripKey struct{}

// withRoundTrip keeps, in ctx, the round-trip fields of a request that
// may ask for input (tools/call, prompts/get, resources/read).
func withRoundTrip(ctx context.Context, req mcp.Request) context.Context {
	var rt roundTrip
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil {
			rt = roundTrip{state: p.RequestState, responses: p.InputResponses}
		}
	case *mcp.GetPromptParams:
		if p != nil {
			rt = roundTrip{state: p.RequestState, responses: p.InputResponses}
		}
	case *mcp.ReadResourceParams:
		if p != nil {
			rt = roundTrip{state: p.RequestState, responses: p.InputResponses}
		}
	}
	if rt.state == "" && rt.responses == nil {
		return ctx
	}
	return context.WithValue(ctx, roundTripKey{}, rt)
}

func roundTripFrom(ctx context.Context) roundTrip {
	rt, _ := ctx.Value(roundTripKey{}).(roundTrip)
	return rt
}

// elicitAnswer is the client's answer to gatehost's input request, or nil.
func (rt roundTrip) elicitAnswer() *mcp.ElicitResult {
	r, _ := rt.responses[inputApproval].(*mcp.ElicitResult)
	return r
}

// maxStateBytes bounds a request state the gateway reads: its own are far
// shorter.
const maxStateBytes = 256

// stateRequest is the approval request a page state names, when it is a
// request of this gateway's desk opened by principal for an MCP call;
// ok is false for any other state (malformed, unknown, expired,
// another caller's).
func (g *Gateway) stateRequest(ctx context.Context, principal *abi.Principal, state string) (approval.Request, bool) {
	id, found := strings.CutPrefix(state, statePage)
	if !found || len(state) > maxStateBytes || !approval.ValidRequestID(id) {
		return approval.Request{}, false
	}
	r, err := g.desk.Get(ctx, id)
	switch {
	case err != nil:
		g.opts.Logger.Info("mcp gateway: request state names no open approval request; the call is decided anew", "request_id", id, "reason", err)
		return approval.Request{}, false
	case r.Front != "mcp" || principalKey(r.Caller) != principalKey(principal):
		g.opts.Logger.Warn("mcp gateway: request state names another caller's approval request; the call is decided anew",
			"request_id", id, "principal", principalLabel(principal))
		return approval.Request{}, false
	}
	return r, true
}

// resumedSession is the gatehost session a sessionless HTTP request
// resumes: the session of the approval request its state names
// (stateRequest); "" otherwise (the request is then a session of its own,
// and a call that needs approval opens a request anew).
func (g *Gateway) resumedSession(ctx context.Context, principal *abi.Principal, state string) string {
	r, ok := g.stateRequest(ctx, principal, state)
	if !ok || !strings.HasPrefix(r.Session, "mcp-") || !session.ValidID(r.Session) {
		return ""
	}
	return r.Session
}

// answeredRequest is the approval request a sessionless call made again
// names in its request state (stateRequest), when the client answered its
// input request and it is for this very call (binding b, the session
// resumed included) and not used yet; ok is false otherwise (a used
// request's call asks anew).
func (d *downstream) answeredRequest(ctx context.Context, b approval.Binding) (approval.Request, bool) {
	rt := roundTripFrom(ctx)
	if rt.elicitAnswer() == nil {
		return approval.Request{}, false
	}
	r, ok := d.g.stateRequest(ctx, d.principal, rt.state)
	if !ok || r.State == approval.StateUsed || r.Binding != b {
		return approval.Request{}, false
	}
	return r, true
}

// formState is the request state of gatehost's approval form for call b
// of principal, asked at now: a fresh nonce, the time the answer must come
// by (the approval TTL) and a MAC of them, the caller and the call under
// the gateway's key, so that an answer approves only the call that was
// shown, to the caller it was shown to, once, in time. The session is
// left out: over HTTP the call made again is another session.
func (g *Gateway) formState(principal *abi.Principal, b approval.Binding, now time.Time) string {
	nonce := randomHex(16)
	until := strconv.FormatInt(now.Add(g.opts.ApprovalTTL).Unix(), 10)
	return stateForm + nonce + "." + until + "." + g.formMAC(principal, b, nonce, until)
}

func (g *Gateway) formMAC(principal *abi.Principal, b approval.Binding, nonce, until string) string {
	m := hmac.New(sha256.New, g.stateKey[:])
	fields, _ := json.Marshal([]string{principalKey(principal), b.Pipeline, b.Tool, b.SchemaDigest, b.SubjectSHA256, nonce, until})
	m.Write(fields)
	return hex.EncodeToString(m.Sum(nil))
}

// formAnswered reports whether state is one formState issued for call b
// of principal, unexpired at now and not answered before; it is then
// spent. A state of another process, call or caller, a late one and a
// replayed one are not answers: the form is asked again.
func (g *Gateway) formAnswered(principal *abi.Principal, b approval.Binding, state string, now time.Time) bool {
	rest, ok := strings.CutPrefix(state, stateForm)
	if !ok || len(state) > maxStateBytes {
		return false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return false
	}
	nonce, until, mac := parts[0], parts[1], parts[2]
	if !hmac.Equal([]byte(mac), []byte(g.formMAC(principal, b, nonce, until))) {
		return false
	}
	t, err := strconv.ParseInt(until, 10, 64)
	if err != nil || now.Unix() > t {
		return false
	}
	return g.spent.spend(principalKey(principal), nonce, time.Unix(t, 0))
}

// spentNonces remembers the form states answered, until they expire, so
// that none approves twice. Bounded per principal and in all: when a
// caller's share (or the whole) is full of unexpired nonces, its answer is
// refused (the form is asked again) rather than remembered loosely; one
// caller filling its share delays only its own answers.
type spentNonces struct {
	mu  sync.Mutex
	m   map[string]spentNonce
	per map[string]int // unexpired nonces per principal key
}

type spentNonce struct {
	principal string
	expiry    time.Time
}

// maxSpentNonces bounds spentNonces; maxSpentPerPrincipal a caller's
// share.
const (
	maxSpentNonces       = 1 << 18
	maxSpentPerPrincipal = 1 << 10
)

// spend marks nonce, answered by principal, spent until expiry, and
// reports whether it was not before.
func (s *spentNonces) spend(principal, nonce string, expiry time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[nonce]; ok {
		return false
	}
	if s.m == nil {
		s.m, s.per = map[string]spentNonce{}, map[string]int{}
	}
	if len(s.m) >= maxSpentNonces || s.per[principal] >= maxSpentPerPrincipal {
		now := time.Now()
		for k, e := range s.m {
			if now.After(e.expiry) {
				delete(s.m, k)
				if s.per[e.principal]--; s.per[e.principal] <= 0 {
					delete(s.per, e.principal)
				}
			}
		}
		if len(s.m) >= maxSpentNonces || s.per[principal] >= maxSpentPerPrincipal {
			return false
		}
	}
	s.m[nonce] = spentNonce{principal: principal, expiry: expiry}
	s.per[principal]++
	return true
}

// pageAnswer reads the client's answer to gatehost's input request for
// request r, when the call comes again with r's state. On acceptance (the
// person was shown the page) it waits until an approver decides r, r
// expires or ctx ends, and returns r as it then is. answered reports that
// the client answered r's input request, whatever it answered: the call is
// then not asked again but refused when r is not approved, so that a
// person's "no" is not met by the same question.
func (d *downstream) pageAnswer(ctx context.Context, r approval.Request) (_ approval.Request, answered bool) {
	rt := roundTripFrom(ctx)
	a := rt.elicitAnswer()
	if rt.state != statePage+r.ID || a == nil {
		return r, false
	}
	if r.State != approval.StatePending {
		return r, true
	}
	if a.Action != "accept" {
		d.g.opts.Logger.Info("mcp gateway: approval page not opened by the client", "request_id", r.ID, "answer", a.Action)
		return r, true
	}
	wctx, cancel := context.WithDeadline(ctx, r.ExpiresAt)
	defer cancel()
	got, err := d.g.desk.Wait(wctx, r.ID)
	if err != nil {
		d.g.opts.Logger.Info("mcp gateway: approval not decided", "request_id", r.ID, "reason", err)
		return r, true
	}
	return got, true
}

// pageInput is the input_required answer that sends the person to
// request r's page: a URL-mode elicitation (ElicitationID r.ID) and the
// state naming r. ok is false when the client cannot take it (no URL-mode
// elicitation declared, no page, r no longer open): the call is then
// refused with the page's URL (withApproval).
func (d *downstream) pageInput(r *approval.Request, runID string) (mcp.Result, bool) {
	g := d.g
	caps := d.clientCapabilities()
	u := g.desk.URL(r.ID)
	if r.State != approval.StatePending || !r.Open(g.approvals.Now()) || u == "" || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return nil, false
	}
	p := &mcp.ElicitParams{Mode: "url", URL: u, ElicitationID: r.ID, Meta: mcp.Meta{MetaApproval: true},
		Message: fmt.Sprintf("%s\nThe agent wants to run %s on the MCP server %q. An approver decides it on the approval page (open until %s); open it to review every argument.",
			approvalHeading, r.Tool, r.Upstream, r.ExpiresAt.Format(time.RFC3339))}
	view := map[string]any{"request_id": r.ID, "state": r.State, "expires_at": r.ExpiresAt, "url": u}
	res, err := inputRequired(p, statePage+r.ID, runID, view)
	return res, err == nil
}

// formInput is the input_required answer that asks the person, through
// the client's form, to approve call b (Options.Elicitation ElicitForm).
func (d *downstream) formInput(msg string, b approval.Binding, runID string) (mcp.Result, error) {
	return inputRequired(&mcp.ElicitParams{Message: msg, Meta: mcp.Meta{MetaApproval: true}, RequestedSchema: approveSchema()},
		d.g.formState(d.principal, b, d.g.approvals.Now()), runID, nil)
}

// inputRequired is a tools/call answer of resultType input_required with
// gatehost's one input request p, the request state and, under _meta, the
// run id and the approval request (view, when there is one).
func inputRequired(p *mcp.ElicitParams, state, runID string, view map[string]any) (mcp.Result, error) {
	meta := withRunID(nil, runID)
	if view != nil {
		if meta == nil {
			meta = mcp.Meta{}
		}
		meta[MetaApproval] = view
	}
	return inputRequiredResult(mcp.InputRequestMap{inputApproval: p}, state, meta)
}

// inputRequiredResult is an answer of resultType input_required: the
// input requests, the request state (none when "") and _meta.
func inputRequiredResult(reqs mcp.InputRequestMap, state string, meta mcp.Meta) (mcp.Result, error) {
	b, err := json.Marshal(reqs)
	if err != nil {
		return nil, fmt.Errorf("an input request cannot be encoded: %w", err)
	}
	m := map[string]any{"resultType": "input_required", "inputRequests": json.RawMessage(b)}
	if state != "" {
		m["requestState"] = state
	}
	if len(meta) > 0 {
		m["_meta"] = meta
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &wireResult{raw: raw, complete: true}, nil
}

// approveSchema is the form of gatehost's approval prompt.
func approveSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve this call",
				"description": "true runs this exact call once; anything else refuses it"},
		},
		"required": []string{"approve"},
	}
}
