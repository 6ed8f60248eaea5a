package mcpgateway

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressRouter sends a shared upstream's progress notifications to the
// session whose call they are about. Two sessions may well give their
// calls the same progress token, so a call sent on a shared connection
// carries a token of the gateway's instead (random, unique while the call
// runs), mapped back to the session and the client's own token.
type progressRouter struct {
	m sync.Map // gateway token → progressRoute
}

type progressRoute struct {
	d     *downstream
	token any
}

// swap returns meta with its progress token replaced by a new one of the
// gateway's, and the function that forgets it; meta unchanged when it has
// no progress token.
func (r *progressRouter) swap(d *downstream, meta mcp.Meta) (mcp.Meta, func()) {
	tok, ok := meta["progressToken"]
	if !ok {
		return meta, func() {}
	}
	mine := "gatehost-progress-" + randomHex(16)
	r.m.Store(mine, progressRoute{d: d, token: tok})
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
// client's own token; a token the gateway did not give is dropped.
func (r *progressRouter) deliver(ctx context.Context, p *mcp.ProgressNotificationParams) {
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := r.m.Load(tok)
	if !ok {
		return
	}
	rt := v.(progressRoute)
	ss := rt.d.serverSession()
	if ss == nil {
		return
	}
	q := *p
	q.ProgressToken = rt.token
	_ = ss.NotifyProgress(ctx, &q)
}
