package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaNamespace is the _meta key prefix that belongs to gatehost alone
// (MetaRunID, MetaDecision, ...): the gateway strips it from everything an
// upstream sends, so that an upstream cannot make a result it answered look
// like gatehost's denial, or a prompt look like gatehost's approval.
const metaNamespace = "gatehost/"

// upstreamTransport wraps the transport to one upstream. Every message
// the upstream sends passes through it, in wire order, before the SDK sees
// it:
//   - notifications/tools/list_changed marks the upstream's tools stale at
//     once (onToolsChanged), before any later message (such as the answer
//     to the call that triggered the change) is read: so no call is
//     decided on the old definitions once the change is announced;
//   - gatehost's _meta namespace is removed from every params and result;
//   - the result of a request sent with a rawCapture in its context is
//     kept as it came on the wire (after that removal), for the gateway
//     to pass on what the SDK's types would drop or add to (rawCall).
//
// With standing, messages also come from the GET stream the gateway holds
// (standing.go), merged with the connection's own in the order they are
// read.
type upstreamTransport struct {
	mcp.Transport
	onToolsChanged func()
	standing       bool
	// limit bounds each message the upstream sends (upbound.go).
	limit *messageLimit
	// conn is the connection Connect made.
	conn *upstreamConn
}

func (t *upstreamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &upstreamConn{Connection: c, onToolsChanged: t.onToolsChanged, limit: t.limit}
	if t.limit != nil {
		conn := t.conn
		closeConn := func() { _ = conn.Close() }
		t.limit.closeConn.Store(&closeConn)
	}
	if t.standing {
		t.conn.injected = make(chan jsonrpc.Message)
		t.conn.closed = make(chan struct{})
		t.conn.in = make(chan readResult)
	}
	return t.conn, nil
}

type upstreamConn struct {
	mcp.Connection
	onToolsChanged func()
	pending        sync.Map // jsonrpc.ID of a request sent → *rawCapture
	// limit bounds each message read; once it refused one, Read returns
	// its error and nothing more (upbound.go).
	limit *messageLimit

	// The standing stream (standing.go), when there is one: hearing while
	// it is open; its messages come in on injected, the connection's own
	// on in (pump); closed ends both.
	hearing   atomic.Bool
	announces bool // the upstream declared tools.listChanged
	injected  chan jsonrpc.Message
	in        chan readResult
	closed    chan struct{}
	pumpOnce  sync.Once
	closeOnce sync.Once
}

type readResult struct {
	m   jsonrpc.Message
	err error
}

// inject passes m, read from the standing stream, to the connection's
// reader; false once the connection is closed.
func (c *upstreamConn) inject(m jsonrpc.Message) bool {
	select {
	case c.injected <- m:
		return true
	case <-c.closed:
		return false
	}
}

// pump reads the connection's own messages into in until it fails.
func (c *upstreamConn) pump(ctx context.Context) {
	for {
		m, err := c.Connection.Read(ctx)
		select {
		case c.in <- readResult{m, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// refusal is the connection's refusal of a message over the bound, nil
// while there is none (c may be nil).
func (c *upstreamConn) refusal() error {
	if c == nil {
		return nil
	}
	return c.limit.err()
}

func (c *upstreamConn) Close() error {
	if c.closed != nil {
		c.closeOnce.Do(func() { close(c.closed) })
	}
	return c.Connection.Close()
}

func (c *upstreamConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		if rc, ok := ctx.Value(rawCaptureKey{}).(*rawCapture); ok {
			rc.register(c, r.ID)
		}
	}
	err := c.Connection.Write(ctx, m)
	if pr, ok := ctx.Value(postRefusalKey{}).(*postRefusal); ok && errors.Is(err, mcp.ErrSessionMissing) {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			pr.refused.Store(true)
		}
	}
	return err
}

// postRefusal, in a request's context, learns whether the upstream refused
// the request's own POST with 404 (mcp.ErrSessionMissing): then it ran
// nothing, which the same error read from elsewhere does not say
// (forwardCall).
type postRefusal struct{ refused atomic.Bool }

type postRefusalKey struct{}

func (c *upstreamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	var m jsonrpc.Message
	var err error
	if c.injected == nil {
		m, err = c.Connection.Read(ctx)
	} else {
		// The SDK reads from one loop whose context lives as long as the
		// connection: the pump reads under the first.
		c.pumpOnce.Do(func() { go c.pump(ctx) })
		select {
		case r := <-c.in:
			m, err = r.m, r.err
		case m = <-c.injected:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			err = mcp.ErrConnectionClosed
		}
	}
	if lerr := c.limit.err(); lerr != nil {
		// What was read after a message over the bound (such as the
		// SDK's own answer to the request it cut off) is not passed on.
		return nil, lerr
	}
	if err != nil {
		return m, err
	}
	switch m := m.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/tools/list_changed" && c.onToolsChanged != nil {
			c.onToolsChanged()
		}
		m.Params = stripGatehostMeta(m.Params)
	case *jsonrpc.Response:
		m.Result = stripGatehostMeta(m.Result)
		if rc, ok := c.pending.LoadAndDelete(m.ID); ok && m.Error == nil {
			rc.(*rawCapture).set(m.Result)
		}
	}
	return m, nil
}

type rawCaptureKey struct{}

// rawCapture receives the wire form of the result of the request sent
// with its context. The upstream connection fills it as it reads the
// response, before the SDK decodes it, so it is set when the SDK call
// returns.
type rawCapture struct {
	mu     sync.Mutex
	result json.RawMessage
	sent   []func() // unregister what was registered
}

func (rc *rawCapture) register(c *upstreamConn, id jsonrpc.ID) {
	c.pending.Store(id, rc)
	rc.mu.Lock()
	rc.sent = append(rc.sent, func() { c.pending.CompareAndDelete(id, rc) })
	rc.mu.Unlock()
}

func (rc *rawCapture) set(result json.RawMessage) {
	rc.mu.Lock()
	rc.result = bytes.Clone(result)
	rc.mu.Unlock()
}

// rawCall runs f, which sends one request upstream through the SDK, and
// returns the result as the upstream sent it (gatehost's _meta namespace
// removed). The SDK's reading of the same result is what f keeps; the wire
// form is what the gateway passes on and pins: the SDK's types drop
// fields they do not know and add defaults the upstream never sent.
func rawCall(ctx context.Context, f func(ctx context.Context) error) (json.RawMessage, error) {
	rc := &rawCapture{}
	err := f(context.WithValue(ctx, rawCaptureKey{}, rc))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, unregister := range rc.sent {
		unregister()
	}
	if err != nil {
		return nil, err
	}
	if rc.result == nil {
		return nil, errors.New("the upstream's answer was not seen on the wire")
	}
	return rc.result, nil
}

// stripGatehostMeta removes every key of gatehost's namespace from the
// _meta objects of raw (at any depth: results nest content blocks and
// tools that carry _meta of their own). raw is returned unchanged when it
// cannot hold such a key, which is the common case and costs one scan: a
// key of the namespace holds "gatehost" as written, or escapes some of it
// (\u0067atehost; "gatehost\/" holds "gatehost" too).
func stripGatehostMeta(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte("gatehost")) && !bytes.Contains(raw, []byte(`\u`)) {
		return raw
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return raw // the SDK refuses it as it would have
	}
	if !stripMeta(v) {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// stripMeta removes gatehost's keys from every "_meta" object in v and
// reports whether it removed any.
func stripMeta(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "_meta" {
				if m, ok := e.(map[string]any); ok {
					for mk := range m {
						if strings.HasPrefix(mk, metaNamespace) {
							delete(m, mk)
							changed = true
						}
					}
				}
			}
			if stripMeta(e) {
				changed = true
			}
		}
	case []any:
		for _, e := range x {
			if stripMeta(e) {
				changed = true
			}
		}
	}
	return changed
}
