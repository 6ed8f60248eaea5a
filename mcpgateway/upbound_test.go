package mcpgateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// endlessAnswers answers the requests of the methods it is given with an
// answer that never completes: the start of a JSON-RPC result whose text
// grows until the reader stops reading, or upTo bytes were written (so
// that a gateway that reads everything is not brought down by the test),
// as a JSON body or as one event. Other requests go to next, a real MCP
// server.
func endlessAnswers(next http.Handler, sse bool, upTo int, methods ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		target := msg.Method
		if msg.Params.Name != "" {
			target += " " + msg.Params.Name
		}
		found := false
		for _, m := range methods {
			found = found || m == target
		}
		if !found {
			next.ServeHTTP(w, r)
			return
		}
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID)
		if msg.Method == "resources/read" {
			head = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"contents":[{"uri":%q,"text":"`, msg.ID, msg.Params.URI)
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			w.Header().Set("Mcp-Session-Id", sid)
		}
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for n := 0; n < upTo; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
}

// TestUpstreamMessageBound: an upstream's message is read only up to
// max_result_bytes plus MessageFraming, whatever carries it: a Streamable
// HTTP answer as one JSON body or as an event, a stdio line, for a
// tools/call or a resources/read. An answer that never ends (or ends
// far past the bound) fails at the bound, not at the call timeout: the
// request gets an error naming the upstream and the bound, the gateway
// logs it with the upstream's name, and the next call, on a new
// connection, runs.
func TestUpstreamMessageBound(t *testing.T) {
	const maxResult = 32 << 10
	bound := fmt.Sprint(maxResult + mcpgateway.MessageFraming)
	for _, tc := range []struct {
		name     string
		sse      bool // the HTTP upstream answers with an event stream
		stdio    bool // the upstream is the stdio test upstream
		resource bool // resources/read rather than tools/call
		via      string
	}{
		{name: "JSON answer to a call", via: "an HTTP answer"},
		{name: "event answering a call", sse: true, via: "an event"},
		{name: "JSON answer to resources/read", resource: true, via: "an HTTP answer"},
		{name: "event answering resources/read", sse: true, resource: true, via: "an event"},
		{name: "stdio line answering a call", stdio: true, via: "a line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := stdioUpstream(t, "notes")
			if !tc.stdio {
				real := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestUpstream(nil) }, nil)
				srv := httptest.NewServer(endlessAnswers(real, tc.sse, 20<<20, "tools/call big", "resources/read"))
				t.Cleanup(srv.Close)
				up = mcpgateway.Upstream{Name: "notes", URL: srv.URL}
			}
			logs := &syncBuffer{}
			f := newFixture(t, nil, nil)
			// The call timeout is far above what reading to the bound
			// takes: a call that waited for it failed the test.
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"},
				MaxResultBytes: maxResult, CallTimeout: time.Minute, RestartBackoff: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			cs := connect(t, g, nil)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)

			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var got string
			if tc.resource {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "note://readme"})
				require.Error(t, err)
				got = err.Error()
			} else {
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": 1 << 20}})
				require.NoError(t, err)
				require.True(t, r.IsError)
				got = text(r)
				assert.Regexp(t, `^[0-9a-f]{32}$`, r.Meta[mcpgateway.MetaRunID], "the accepted decision's run id")
			}
			assert.Less(t, time.Since(start), 30*time.Second, "the request ended at the bound, not at the call timeout")
			assert.Contains(t, got, "upstream notes sent "+tc.via+" over "+bound+" bytes")
			assert.Contains(t, logs.String(), `msg="mcp gateway: upstream message over the size bound; not read, connection closed" upstream=notes bound=`+bound)

			w := call(t, cs, "write_note", map[string]any{"name": "b", "text": "again"})
			require.False(t, w.IsError, text(w))
			assert.Equal(t, "note: again", text(call(t, cs, "read_note", map[string]any{"name": "b"})))
		})
	}
}

// TestUpstreamMessageUnderBound: a result under max_result_bytes reaches
// the client whole over each transport; one between max_result_bytes and
// the bound is read and dropped for its size, as before.
func TestUpstreamMessageUnderBound(t *testing.T) {
	const maxResult = 32 << 10
	for _, tc := range []struct {
		name, transport string
		size            int
		dropped         bool
	}{
		{"under max_result_bytes over HTTP", "http", maxResult / 2, false},
		{"under max_result_bytes over stdio", "stdio", maxResult / 2, false},
		{"over max_result_bytes, under the bound, over HTTP", "http", maxResult + 1000, true},
		{"over max_result_bytes, under the bound, over stdio", "stdio", maxResult + 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := stdioUpstream(t, "notes")
			if tc.transport == "http" {
				srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestUpstream(nil) },
					&mcp.StreamableHTTPOptions{JSONResponse: true}))
				t.Cleanup(srv.Close)
				up = mcpgateway.Upstream{Name: "notes", URL: srv.URL}
			}
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{up}, ActivateOnList: []string{"*"}, MaxResultBytes: maxResult})
			cs := connect(t, g, nil)
			_, err := cs.ListTools(context.Background(), nil)
			require.NoError(t, err)
			r := call(t, cs, "big", map[string]any{"size": tc.size})
			if tc.dropped {
				assert.True(t, r.IsError)
				assert.Contains(t, text(r), fmt.Sprintf("answered with a result over %d bytes", maxResult))
				return
			}
			require.False(t, r.IsError, text(r))
			assert.Equal(t, strings.Repeat("x", tc.size), text(r))
		})
	}
}
