package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sse "github.com/tmaxmax/go-sse"
)

// A Streamable HTTP server sends what is not the answer to a request (a
// list change, a log message, a request of its own) on the GET stream the
// client holds open to it (MCP 2025-11-25, basic/transports, "Listening for
// Messages from the Server"). The SDK's client opens that stream only on a
// connection of its own type, which the gateway's wire layer wraps
// (upwire.go), so the gateway holds it itself: listen reads its events and
// passes each message into the connection (upstreamConn.inject), where the
// SDK handles it as one it read. While the stream is not open a change
// can pass unheard, and a call to the upstream lists its tools again
// before it is decided (upconn.hearsChanges).

// standingRetry bounds the wait before the stream is opened again after it
// ended or could not be opened.
const (
	standingRetryMin = 100 * time.Millisecond
	standingRetryMax = 10 * time.Second
)

// listen holds the GET stream of the connection's session cs (whose wire
// connection is w) until the session is dropped, opening it again when it
// ends. An upstream that answers the GET with 405, or with anything but
// an event stream, offers none: listen returns and calls list first.
func (c *upconn) listen(cs *mcp.ClientSession, w *upstreamConn) {
	ctx := c.liveContext(cs)
	client := &http.Client{Transport: credTransport{c: c, base: c.g.upstreamHTTP}}
	version := sessionRevision
	if r := cs.InitializeResult(); r != nil {
		version = r.ProtocolVersion
	}
	last, wait := "", standingRetryMin
	for ctx.Err() == nil {
		resp, err := c.openStanding(ctx, client, cs.ID(), version, last)
		if errors.Is(err, errSessionGone) {
			// The upstream ended the session: the connection is dropped
			// (and not kept), and its next use connects anew.
			if c.current() == cs {
				c.close()
			}
			return
		}
		if errors.Is(err, errNoStanding) {
			c.g.opts.Logger.Info("mcp gateway: upstream holds no stream open to the gateway; each call lists its tools first",
				"upstream", c.u.Name, "reason", err)
			return
		}
		if err == nil {
			// Open: from now on a change is announced here. One made
			// before it opened is seen by the next call, which lists
			// again first (hearsChanges).
			c.streamOpens.Add(1)
			w.hearing.Store(true)
			var got bool
			last, got, err = c.readStanding(resp, w, last)
			w.hearing.Store(false)
			_ = resp.Body.Close()
			if got {
				wait = standingRetryMin
			}
		}
		if ctx.Err() != nil {
			return
		}
		c.g.opts.Logger.Debug("mcp gateway: upstream stream ended; opened again", "upstream", c.u.Name, "error", err, "after", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, standingRetryMax)
	}
}

var (
	// errNoStanding: the upstream offers no GET stream.
	errNoStanding = errors.New("no GET stream offered")
	// errSessionGone: the upstream answered 404 for the session, which
	// it ended (basic/transports, "Session Management").
	errSessionGone = errors.New("the upstream ended the session")
)

// openStanding sends the GET that opens the stream of session id, resuming
// after the event last when there is one.
func (c *upconn) openStanding(ctx context.Context, client *http.Client, id, version, last string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(withoutClientRevision{ctx}, http.MethodGet, c.u.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK && ct == "text/event-stream":
		return resp, nil
	case resp.StatusCode == http.StatusNotFound && id != "":
		_ = resp.Body.Close()
		return nil, errSessionGone
	case resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusOK,
		resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusTooManyRequests:
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: HTTP %d, %q", errNoStanding, resp.StatusCode, ct)
	}
	_ = resp.Body.Close()
	return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// readStanding passes the messages of the open stream resp into w until
// the stream ends, and returns the last event id seen and whether any
// message came. An event larger than MaxResultBytes, or one that is not a
// JSON-RPC message, ends the stream: it is opened again, and the calls
// meanwhile list first.
func (c *upconn) readStanding(resp *http.Response, w *upstreamConn, last string) (string, bool, error) {
	got := false
	for ev, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: c.g.opts.MaxResultBytes}) {
		if err != nil {
			return last, got, err
		}
		last = ev.LastEventID
		if ev.Data == "" {
			continue // a keep-alive, or a priming event
		}
		m, err := jsonrpc.DecodeMessage([]byte(ev.Data))
		if err != nil {
			return last, got, fmt.Errorf("event %q: %w", ev.LastEventID, err)
		}
		if !w.inject(m) {
			return last, got, mcp.ErrConnectionClosed
		}
		got = true
	}
	return last, got, errors.New("stream ended")
}
