package mcpgateway

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRouter sends an upstream's progress notifications to the
// session whose call they are about, related to that call: over Streamable
// HTTP they travel on the call's own response stream (the only one a
// sessionless client has). Two sessions may well give their calls the
// same progress token, so a call carries a token of the gateway's instead
// (random, unique while the call runs), mapped back to the session, the
// call and the client's own token.
type progressRouter struct {
	m sync.Map // gateway token → progressRoute
}

type progressRoute struct {
	d     *downstream
	token any
	// call carries the downstream call's values (not its cancellation):
	// the SDK relates a notification to the request whose context it is
	// sent with.
	call context.Context
}

// swap returns meta with its progress token replaced by a new one of the
// gateway's, and the function that forgets it; meta unchanged when it has
// no progress token.
func (r *progressRouter) swap(ctx context.Context, d *downstream, meta mcp.Meta) (mcp.Meta, func()) {
	tok, ok := meta["progressToken"]
	if !ok {
		return meta, func() {}
	}
	mine := "gatehost-progress-" + randomHex(16)
	r.m.Store(mine, progressRoute{d: d, token: tok, call: context.WithoutCancel(ctx)})
	out := make(mcp.Meta, len(meta))
	for k, v := range meta {
		out[k] = v
	}
	out["progressToken"] = mine
	// Forgotten a while after the call: the SDK handles notifications
	// on goroutines of their own, so one the upstream sent before its
	// answer may be handled after it.
	return out, func() { time.AfterFunc(progressGrace, func() { r.m.Delete(mine) }) }
}

// progressGrace is how long a call's progress token is kept after the
// call returned.
const progressGrace = 10 * time.Second

// deliver relays p to the session of the call its token names, with the
// client's own token, related to that call; a token the gateway did not
// give is not delivered (false).
func (r *progressRouter) deliver(p *mcp.ProgressNotificationParams) bool {
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return false
	}
	v, ok := r.m.Load(tok)
	if !ok {
		return false
	}
	rt := v.(progressRoute)
	if ss := rt.d.serverSession(); ss != nil {
		q := *p
		q.ProgressToken = rt.token
		_ = ss.NotifyProgress(rt.call, &q)
	}
	return true
}
