package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream spoken to at 2026-07-28 (Upstream.ProtocolVersion) asks for
// what it needs of the client in a call's answer (input_required, SEP-2322)
// instead of sending requests during the call. The gateway carries those
// input requests like the requests of an upstream at an older revision:
// each elicitation labelled with the upstream's name, one that imitates
// gatehost's approval prompt refused (and the upstream cut off), each
// recorded. To a 2026-07-28 client they go in the gateway's own answer,
// and the client's answers come back with the call made again; of an older
// client the gateway asks them itself, during the call, and calls the
// upstream again with the answers. They are attributable to the call even
// on a shared connection: they come in its answer.

// noAutoInput leaves input_required answers to the gateway: the SDK's
// client would answer them with the gateway's own handlers, which are not
// the client's.
var noAutoInput = &mcp.MultiRoundTripOptions{Disabled: true}

// stateUpstream prefixes an upstream's request state in the gateway's
// answer, so that the call made again is told from one answering
// gatehost's own input request; a state without it is not sent upstream.
const stateUpstream = "gatehost.up."

// maxInputRounds bounds the rounds of one call to an upstream whose input
// requests the gateway answers for an older client; maxInputRequests the
// input requests of one answer (each is recorded, and shown).
const (
	maxInputRounds   = 10
	maxInputRequests = 16
)

// errUndecodable: the SDK failed (panicked) decoding an upstream's answer.
// An upstream can reach such a failure with an answer of its choosing
// (an input request that is null, for one); it ends that request, never
// the gateway.
var errUndecodable = errors.New("its answer could not be decoded")

// recovered runs f, an SDK call that decodes an upstream's answer, and
// turns a panic in it into errUndecodable.
func recovered[T any](f func() (T, error)) (res T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			res, err = zero, fmt.Errorf("%w (%v)", errUndecodable, p)
		}
	}()
	return f()
}

// inputInAnswer reports whether the upstream asks for input in a call's
// answer (it is spoken to at the sessionless revision).
func (c *upconn) inputInAnswer() bool { return sessionless(c.u.ProtocolVersion) }

// upstreamPart is what of a call made again goes to the upstream: the
// answers to its input requests (not to gatehost's own) and its request
// state, when the gateway's answer carried one.
func (rt roundTrip) upstreamPart() (mcp.InputResponseMap, string) {
	var responses mcp.InputResponseMap
	for k, v := range rt.responses {
		if k == inputApproval {
			continue
		}
		if responses == nil {
			responses = mcp.InputResponseMap{}
		}
		responses[k] = v
	}
	state, _ := strings.CutPrefix(rt.state, stateUpstream)
	if state == rt.state {
		state = ""
	}
	return responses, state
}

// withClientCapabilities is m with the downstream client's capabilities
// under the sessionless revision's _meta key, so that an upstream at that
// revision asks only for what the client can answer (the SDK's client
// would send the gateway connection's own, which on a shared connection
// are none).
func (d *downstream) withClientCapabilities(m mcp.Meta) mcp.Meta {
	out := mcp.Meta{}
	maps.Copy(out, m)
	caps := d.clientCapabilities()
	b, err := json.Marshal(caps)
	var v map[string]any
	if err == nil && json.Unmarshal(b, &v) == nil {
		// ClientCapabilities always encodes roots; a client that did not
		// declare them gets no roots/list.
		if caps.RootsV2 == nil && !caps.Roots.ListChanged {
			delete(v, "roots")
		}
		out[mcp.MetaKeyClientCapabilities] = v
	}
	return out
}

// inputAsker is a result that may ask for input: the SDK's results of
// tools/call, prompts/get and resources/read.
type inputAsker interface {
	mcp.Result
	NeedsInput() bool
}

// inputOf is what res asks for: its input requests and request state.
func inputOf(res mcp.Result) (mcp.InputRequestMap, string) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.InputRequests, r.RequestState
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState
	case *mcp.ReadResourceResult:
		return r.InputRequests, r.RequestState
	}
	return nil, ""
}

// askingUpstream sends a prompts/get or resources/read (call, whose params
// hold responses and state) to an upstream that may ask for input in its
// answer, and carries what it asks (upstreamInput). A refusal is a
// JSON-RPC error.
func askingUpstream[R inputAsker](ctx context.Context, d *downstream, up *upconn, responses *mcp.InputResponseMap, state *string, call func() (R, error)) (mcp.Result, error) {
	if up.inputInAnswer() {
		*responses, *state = roundTripFrom(ctx).upstreamPart()
	}
	res, err := recovered(call)
	for round := 1; err == nil && res.NeedsInput(); round++ {
		answer, resp, ierr := d.upstreamInput(ctx, up, res, round, "")
		if ierr != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gatehost mcp gateway: " + ierr.Error()}
		}
		if answer != nil {
			return answer, nil
		}
		_, *state = inputOf(res)
		*responses = resp
		res, err = recovered(call)
	}
	if errors.Is(err, errUndecodable) {
		up.close() // an answer outside the protocol: start afresh
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("gatehost mcp gateway: upstream %s: %v", up.u.Name, err)}
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// upstreamInput carries what an upstream's answer res asks for, in the
// request's round: to a sessionless client, answer is the gateway's
// input_required answer to send; of an older client the gateway asks it,
// and responses are its answers, to call the upstream again with. err
// refuses the request (an input request the gateway does not carry, too
// many rounds, a client that did not answer).
func (d *downstream) upstreamInput(ctx context.Context, up *upconn, res mcp.Result, round int, runID string) (answer mcp.Result, responses mcp.InputResponseMap, err error) {
	in, state := inputOf(res)
	if len(in) > maxInputRequests {
		return nil, nil, fmt.Errorf("upstream %s asked for %d inputs at once, at most %d", up.u.Name, len(in), maxInputRequests)
	}
	if b, err := json.Marshal(in); err != nil || len(b)+len(state) > d.g.opts.MaxResultBytes {
		return nil, nil, fmt.Errorf("upstream %s asked for input over %d bytes, or not encodable", up.u.Name, d.g.opts.MaxResultBytes)
	}
	if d.isSessionless() {
		reqs, err := d.checkInputRequests(up, in, "passed to the client in the answer")
		if err != nil {
			return nil, nil, err
		}
		if state != "" {
			state = stateUpstream + state
		}
		answer, err := inputRequiredResult(reqs, state, withRunID(nil, runID))
		return answer, nil, err
	}
	if round > maxInputRounds {
		return nil, nil, fmt.Errorf("upstream %s asked for input more than %d times", up.u.Name, maxInputRounds)
	}
	reqs, err := d.checkInputRequests(up, in, "asked of the client by the gateway")
	if err != nil {
		return nil, nil, err
	}
	responses, err = d.answerInput(ctx, reqs)
	if err != nil {
		return nil, nil, fmt.Errorf("upstream %s asked for input the client did not give: %w", up.u.Name, err)
	}
	return nil, responses, nil
}

// errImitation: an upstream's input request imitates gatehost's approval
// prompt (or takes its key); the upstream is cut off.
var errImitation = errors.New("asked for input that imitates gatehost's approval prompt; refused, and the upstream was disconnected")

// checkInputRequests labels and records an upstream's input requests. An
// elicitation imitating gatehost's approval prompt, or one under its key,
// refuses them all (errImitation) and cuts the upstream off.
func (d *downstream) checkInputRequests(up *upconn, in mcp.InputRequestMap, outcome string) (mcp.InputRequestMap, error) {
	out := make(mcp.InputRequestMap, len(in))
	for _, id := range slices.Sorted(maps.Keys(in)) {
		ir := in[id]
		rec := map[string]any{"upstream": up.u.Name, "session": d.sessionID(), "input_request": quoted(id), "in_answer": true}
		if m := inputMethod(ir); m != "" {
			// Spent before anything else is done with it, as a request
			// made during a call (fromUpstream): over the budget, the
			// whole answer is refused and nothing reaches the person.
			if err := up.admitAsk(m); err != nil {
				return nil, fmt.Errorf("upstream %s: %w", up.u.Name, err)
			}
		}
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			rec["method"] = "elicitation/create"
			if imitatesApproval(p) {
				return nil, d.refuseInput(up, rec, "refused: imitates gatehost's approval prompt", errImitation)
			}
			labelled := *p
			labelled.Message = upstreamLabel(up.u.Name) + p.Message
			labelled.Meta = withoutGatehostMeta(p.Meta)
			ir = &labelled
		case *mcp.CreateMessageParams:
			rec["method"] = "sampling/createMessage"
			q := *p
			q.Meta = withoutGatehostMeta(p.Meta)
			ir = &q
		case *mcp.CreateMessageWithToolsParams:
			rec["method"] = "sampling/createMessage"
			q := *p
			q.Meta = withoutGatehostMeta(p.Meta)
			ir = &q
		case *mcp.ListRootsParams:
			rec["method"] = "roots/list"
		default:
			return nil, d.refuseInput(up, rec, "refused: unknown input request",
				fmt.Errorf("upstream %s asked for input of a kind the gateway does not carry", up.u.Name))
		}
		if id == inputApproval {
			return nil, d.refuseInput(up, rec, "refused: gatehost's own input request key", errImitation)
		}
		rec["outcome"] = outcome
		if err := d.g.recordEdge(kindUpstreamRequest, rec); err != nil {
			return nil, fmt.Errorf("upstream %s asked for input: %w", up.u.Name, err)
		}
		out[id] = ir
	}
	return out, nil
}

// inputMethod is the method of the request an input request stands for,
// or "" for a kind the gateway does not carry.
func inputMethod(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling/createMessage"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return ""
}

// withoutGatehostMeta is m without gatehost's namespace: only gatehost
// marks its own prompts.
func withoutGatehostMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, metaNamespace) {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// refuseInput records an upstream's refused input request and returns
// err; errImitation also cuts the upstream off.
func (d *downstream) refuseInput(up *upconn, rec map[string]any, outcome string, err error) error {
	rec["outcome"] = outcome
	d.g.recordEdge(kindUpstreamRequest, rec)
	if errors.Is(err, errImitation) {
		d.g.opts.Logger.Warn("mcp gateway: upstream input request imitating gatehost's approval refused; upstream disconnected", "upstream", up.u.Name)
		up.close()
		return fmt.Errorf("upstream %s %w", up.u.Name, err)
	}
	return err
}

// answerInput asks the downstream client (a revision with sessions) for
// the input requests, as the upstream would have during the call, and
// returns its answers. A client that did not declare roots is not asked:
// the answer is no roots.
func (d *downstream) answerInput(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ss := d.serverSession()
	if ss == nil {
		return nil, errors.New("no client session")
	}
	caps := d.clientCapabilities()
	out := make(mcp.InputResponseMap, len(reqs))
	for id, ir := range reqs {
		var (
			r   mcp.InputResponse
			err error
		)
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			r, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			r, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.CreateMessageParams:
			r, err = ss.CreateMessage(ctx, p)
		case *mcp.ListRootsParams:
			if caps.RootsV2 == nil && !caps.Roots.ListChanged {
				r = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
				break
			}
			r, err = ss.ListRoots(ctx, p)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		out[id] = r
	}
	return out, nil
}
