package mcpgateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every byte an upstream sends is read under a bound, before it is
// decoded: one JSON-RPC message (the body of an HTTP answer, one event of
// an event stream, one line of a stdio server) is at most
// MaxResultBytes plus MessageFraming. A message that grows past it is not
// read further: the connection that carried it is closed, every request
// waiting on it ends with a *MessageTooLargeError, and the gateway logs it
// with the upstream's name. The table of every bound an upstream's bytes
// meet is in docs/MCP-GATEWAY.md, "Bounds on what an upstream sends".

// MessageFraming is what one upstream message may hold on top of a
// result of MaxResultBytes: the JSON-RPC envelope, the SSE field names
// and line ends, the escapes of the wire form.
const MessageFraming = 64 << 10

// maxUpstreamHeaderBytes bounds the header of an HTTP answer from a url
// upstream (net/http's own default is 10 MiB).
const maxUpstreamHeaderBytes = 1 << 20

// ErrMessageTooLarge is wrapped (with ErrUpstream) by the error of every
// request whose upstream connection was closed because the upstream sent
// a message over the bound (*MessageTooLargeError).
var ErrMessageTooLarge = errors.New("upstream message over the size bound")

// MessageTooLargeError: upstream Upstream sent a message over Bound bytes
// (MaxResultBytes plus MessageFraming) as Via ("an HTTP answer", "an
// event", "a line"); the gateway stopped reading it and closed the
// connection.
type MessageTooLargeError struct {
	Upstream string
	Bound    int
	Via      string
}

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("upstream %s sent %s over %d bytes (max_result_bytes plus %d of framing); it was not read and the connection was closed",
		e.Upstream, e.Via, e.Bound, MessageFraming)
}

func (e *MessageTooLargeError) Unwrap() []error { return []error{ErrUpstream, ErrMessageTooLarge} }

// messageBound is the bound on one message from an upstream.
func (o Options) messageBound() int { return o.MaxResultBytes + MessageFraming }

// messageLimit is one upstream connection's bound on a message, and the
// first message it refused. Once one is refused the connection reads
// nothing more (upstreamConn.Read) and is closed (closeConn).
type messageLimit struct {
	upstream string
	bound    int
	logger   *slog.Logger
	refused  atomic.Pointer[MessageTooLargeError]
	// closeConn closes the connection the limit is of, so that a reader
	// waiting on it learns the refusal now (set once it is connected).
	closeConn atomic.Pointer[func()]
}

func newMessageLimit(u Upstream, o Options) *messageLimit {
	return &messageLimit{upstream: u.Name, bound: o.messageBound(), logger: o.Logger}
}

// exceeded refuses a message that grew past the bound, via what carried
// it, and returns the connection's error.
func (l *messageLimit) exceeded(via string) error {
	e := &MessageTooLargeError{Upstream: l.upstream, Bound: l.bound, Via: via}
	if l.refused.CompareAndSwap(nil, e) {
		l.logger.Warn("mcp gateway: upstream message over the size bound; not read, connection closed",
			"upstream", l.upstream, "bound", l.bound, "via", via)
		if f := l.closeConn.Load(); f != nil {
			go (*f)()
		}
	}
	return l.refused.Load()
}

// err is the refusal, nil while none.
func (l *messageLimit) err() error {
	if l == nil {
		return nil
	}
	if e := l.refused.Load(); e != nil {
		return e
	}
	return nil
}

// boundBody wraps the body of an HTTP answer: an event stream is bounded per
// event, any other body whole (a JSON answer, an error status's body).
func (l *messageLimit) boundBody(resp *http.Response) {
	if l == nil || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		resp.Body = &eventBounded{ReadCloser: resp.Body, l: l, atLineStart: true}
		return
	}
	resp.Body = &bodyBounded{ReadCloser: resp.Body, l: l, left: l.bound}
}

// bodyBounded reads at most bound bytes of a body; one more is an error.
type bodyBounded struct {
	io.ReadCloser
	l    *messageLimit
	left int
}

func (b *bodyBounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.l.exceeded("an HTTP answer")
	}
	if len(p) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if n > b.left {
		n, b.left = b.left, -1
		return n, b.l.exceeded("an HTTP answer")
	}
	b.left -= n
	return n, err
}

// eventBounded reads an event stream whose events are each at most bound
// bytes (an event ends at a blank line; CR, LF and CRLF end lines).
type eventBounded struct {
	io.ReadCloser
	l                   *messageLimit
	event               int
	prevCR, atLineStart bool
	over                bool
}

func (e *eventBounded) Read(p []byte) (int, error) {
	if e.over {
		return 0, e.l.exceeded("an event")
	}
	n, err := e.ReadCloser.Read(p)
	for i, c := range p[:n] {
		if e.event++; e.event > e.l.bound {
			e.over = true
			return i, e.l.exceeded("an event")
		}
		if c == '\n' && e.prevCR {
			e.prevCR = false
			continue
		}
		e.prevCR = c == '\r'
		if c == '\r' || c == '\n' {
			if e.atLineStart {
				e.event = 0
			}
			e.atLineStart = true
		} else {
			e.atLineStart = false
		}
	}
	return n, err
}

// lineBounded reads newline-delimited messages each at most bound bytes.
type lineBounded struct {
	r    io.Reader
	l    *messageLimit
	line int
	over bool
}

func (b *lineBounded) Read(p []byte) (int, error) {
	if b.over {
		return 0, b.l.exceeded("a line")
	}
	n, err := b.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			b.line = 0
			continue
		}
		if b.line++; b.line > b.l.bound {
			b.over = true
			return i, b.l.exceeded("a line")
		}
	}
	return n, err
}

// commandTransport runs a stdio upstream as mcp.CommandTransport does
// (closing its stdin ends it; after terminate, SIGTERM, then SIGKILL),
// reading its stdout under the message bound.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	limit     *messageLimit
}

func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	// The SDK's own frame bound is above the gateway's, which is met
	// first and says whose message it was.
	return (&mcp.IOTransport{
		Reader:        io.NopCloser(&lineBounded{r: stdout, l: t.limit}),
		Writer:        &processInput{WriteCloser: stdin, cmd: t.cmd, terminate: t.terminate},
		MaxLineLength: t.limit.bound + MessageFraming,
	}).Connect(ctx)
}

// processInput is a stdio upstream's stdin; closing it ends the process.
type processInput struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
}

func (p *processInput) Close() error {
	if err := p.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(p.terminate)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the upstream process did not exit")
}
