package mcpgateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hearsChanges is true only when an announcement of a change cannot have
// passed unheard since the listing was read.
func TestHearsChanges(t *testing.T) {
	for _, tc := range []struct {
		name               string
		stdio, wire        bool
		announces, hearing bool
		opens, listedUnder uint64
		want               bool
	}{
		{name: "stdio", stdio: true, want: true},
		{name: "URL, no session yet"},
		{name: "URL, stream open, listed under it", wire: true, announces: true, hearing: true, opens: 2, listedUnder: 2, want: true},
		{name: "URL, no stream", wire: true, announces: true},
		{name: "URL, listed before the stream opened", wire: true, announces: true, hearing: true, opens: 1, listedUnder: 0},
		{name: "URL, listed under a stream since reopened", wire: true, announces: true, hearing: true, opens: 3, listedUnder: 2},
		{name: "URL, upstream declared no tools.listChanged", wire: true, hearing: true, opens: 1, listedUnder: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &upconn{u: Upstream{URL: "http://upstream.example/mcp"}}
			if tc.stdio {
				c.u = Upstream{Command: []string{"server"}}
			}
			if tc.wire {
				c.wire = &upstreamConn{announces: tc.announces}
				c.wire.hearing.Store(tc.hearing)
			}
			c.streamOpens.Store(tc.opens)
			c.listedUnder.Store(tc.listedUnder)
			assert.Equal(t, tc.want, c.hearsChanges())
		})
	}
}

// readStanding passes on the stream's message events, skips events of
// other types and events without data, keeps the last event id, and ends
// the stream at an event that is not a message or is over the bound.
func TestReadStanding(t *testing.T) {
	read := func(t *testing.T, stream string, maxResult int) ([]jsonrpc.Message, string, error) {
		return readStandingAll(strings.NewReader(stream), maxResult)
	}
	const changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	got, last, err := read(t, "id: 1\ndata: "+changed+"\n\nid: 2\nevent: other\ndata: "+changed+"\n\n: ping\n\nid: 3\ndata: "+changed+"\n\n", 1<<20)
	require.Error(t, err, "a stream that ends is reported")
	assert.Len(t, got, 2, "the message events only")
	assert.Equal(t, "3", last)

	got, _, err = read(t, "data: "+changed+"\n\ndata: not json\n\ndata: "+changed+"\n\n", 1<<20)
	assert.ErrorContains(t, err, "event")
	assert.Len(t, got, 1, "nothing after the event that is not a message")

	big := "data: " + strings.Repeat(" ", 2048) + changed + "\n\n"
	got, _, err = read(t, big, 1024)
	assert.Error(t, err)
	assert.Empty(t, got, "an event over MaxResultBytes")
	got, _, err = read(t, "data: "+string(bytes.Repeat([]byte(" "), standingEventMax))+changed+"\n\n", 64<<20)
	assert.Error(t, err)
	assert.Empty(t, got, "an event over standingEventMax")
}

// failingConn is an upstream connection whose writes fail with err.
type failingConn struct {
	mcp.Connection
	err error
}

func (f failingConn) Write(context.Context, jsonrpc.Message) error { return f.err }

// Only a request's own POST refused with 404 marks it as not run (the
// ground forwardCall retries on): not another error, not a notification.
func TestPostRefusal(t *testing.T) {
	call, err := jsonrpc.MakeID(float64(1))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		err  error
		msg  jsonrpc.Message
		want bool
	}{
		{"call refused with 404", fmt.Errorf("POST: %w", mcp.ErrSessionMissing), &jsonrpc.Request{ID: call, Method: "tools/call"}, true},
		{"call failed otherwise", mcp.ErrConnectionClosed, &jsonrpc.Request{ID: call, Method: "tools/call"}, false},
		{"notification refused with 404", mcp.ErrSessionMissing, &jsonrpc.Request{Method: "notifications/cancelled"}, false},
		{"call written", nil, &jsonrpc.Request{ID: call, Method: "tools/call"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pr postRefusal
			w := &upstreamConn{Connection: failingConn{err: tc.err}}
			_ = w.Write(context.WithValue(context.Background(), postRefusalKey{}, &pr), tc.msg)
			assert.Equal(t, tc.want, pr.refused.Load())
		})
	}
}

// readStandingAll runs readStanding over body, with MaxResultBytes
// maxResult, and returns the messages it passed on, the last event id and
// why the stream ended.
func readStandingAll(body io.Reader, maxResult int) ([]jsonrpc.Message, string, error) {
	c := &upconn{g: &Gateway{opts: Options{MaxResultBytes: maxResult}}}
	w := &upstreamConn{injected: make(chan jsonrpc.Message), closed: make(chan struct{})}
	var got []jsonrpc.Message
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range w.injected {
			got = append(got, m)
		}
	}()
	last, err := c.readStanding(&http.Response{Body: io.NopCloser(body)}, w, "")
	close(w.injected)
	<-done
	return got, last, err
}
