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

	"github.com/gatehost/gatehost/internal/sse"
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
	client := &http.Client{Transport: credTransport{c: c, base: c.g.upstreamHTTP, limit: w.limit}}
	version := sessionRevision
	if r := cs.InitializeResult(); r != nil {
		version = r.ProtocolVersion
	}
	last, wait := "", standingRetryMin
	for ctx.Err() == nil {
		resp, err := c.openStanding(ctx, client, cs.ID(), version, last)
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
			opened := time.Now()
			last, err = c.readStanding(resp, w, last)
			w.hearing.Store(false)
			_ = resp.Body.Close()
			if time.Since(opened) >= standingRetryMax {
				// Only a stream that held resets the wait: one that ends
				// after each event is opened again at most every
				// standingRetryMax.
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

// errNoStanding: the upstream offers no GET stream.
var errNoStanding = errors.New("no GET stream offered")

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
	// 405 is the answer the transport names; some servers answer 404 or
	// another 4xx to the GET while their POSTs work (as the SDK's client,
	// the gateway takes those for no stream: whether the session is
	// still known is for the next POST to say).
	case resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusOK,
		resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusTooManyRequests:
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: HTTP %d, %q", errNoStanding, resp.StatusCode, ct)
	}
	_ = resp.Body.Close()
	return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// standingEventMax bounds one event of the stream: what comes on it (list
// changes, log messages, the upstream's requests) is small next to a
// call's result.
const standingEventMax = 1 << 20

// readStanding passes the messages of the open stream resp into w until
// the stream ends, and returns the last event id seen and why it ended
// (never nil). An event larger than standingEventMax (or MaxResultBytes,
// if smaller), or one whose data is not a JSON-RPC message, ends the
// stream: it is opened again, and the calls meanwhile list first.
func (c *upconn) readStanding(resp *http.Response, w *upstreamConn, last string) (string, error) {
	max := min(standingEventMax, c.g.opts.MaxResultBytes)
	err := sse.Read(resp.Body, max, func(ev sse.Event) error {
		last = ev.LastID
		// As the SDK's client: only message events carry messages; an
		// event without data is a keep-alive or a priming event.
		if (ev.Type != "" && ev.Type != "message") || len(ev.Data) == 0 {
			return nil
		}
		m, err := jsonrpc.DecodeMessage(ev.Data)
		if err != nil {
			return fmt.Errorf("event %q: %w", last, err)
		}
		if !w.inject(m) {
			return mcp.ErrConnectionClosed
		}
		return nil
	})
	if err == nil {
		err = errors.New("stream ended")
	}
	return last, err
}
