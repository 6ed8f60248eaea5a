package mcpgateway

import (
	"context"
	"slices"
	"sync"
)

// callsInFlight are a connection's calls in flight, oldest first. What an
// upstream asks of the client during a call is sent to the client related
// to one of them: over Streamable HTTP the MCP SDK then writes it on that
// call's response stream, where the client is reading, rather than on the
// standalone SSE stream, which a client need not open (basic/transports,
// "Sending Messages to the Server": the server MAY send requests on the
// POST's stream) and which may not be open yet.
type callsInFlight struct {
	mu    sync.Mutex
	calls []*callInFlight
}

type callInFlight struct {
	d *downstream
	// ctx is the downstream call handler's context: the SDK relates a
	// request to the incoming request whose context it is sent with.
	ctx context.Context
}

// add records a call of d, with the handler context ctx, in flight until
// the returned function is called.
func (f *callsInFlight) add(ctx context.Context, d *downstream) (done func()) {
	c := &callInFlight{d: d, ctx: ctx}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if i := slices.Index(f.calls, c); i >= 0 {
			f.calls = slices.Delete(f.calls, i, i+1)
		}
	}
}

// relate returns a context for sending what the upstream asks of d's
// client: ctx's deadline and cancellation, and the values of d's newest
// call in flight (the SDK's request id among them), or none. Never ctx's
// own values: the upstream connection's contexts descend from the
// downstream request that connected it, whose id, long answered, would
// relate the request to a stream that is gone.
func (f *callsInFlight) relate(ctx context.Context, d *downstream) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].d == d {
			return relatedContext{Context: ctx, values: f.calls[i].ctx}
		}
	}
	return relatedContext{Context: ctx, values: context.Background()}
}

type relatedContext struct {
	context.Context
	values context.Context
}

func (r relatedContext) Value(key any) any { return r.values.Value(key) }
