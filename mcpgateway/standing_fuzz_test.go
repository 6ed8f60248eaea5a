package mcpgateway

import (
	"bytes"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStandingStream feeds a URL upstream's GET stream (untrusted bytes)
// to readStanding: it must never panic or hang, always end with an error
// (the stream is opened again), and pass on only the requests and
// responses the SDK's decoder made of its events.
func FuzzStandingStream(f *testing.F) {
	for _, s := range []string{
		"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"roots/list\"}\r\n\r\n: keep-alive\n\n",
		"data: {\"jsonrpc\":\"2.0\",\n data: \"method\":\"x\"}\n\n",
		"event: message\ndata:\n\nid: 2\n\n",
		"data: not json\n\n",
		"retry: 10\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, _, err := readStandingAll(bytes.NewReader(body), 4096)
		if err == nil {
			t.Fatal("readStanding ended without an error")
		}
		for _, m := range got {
			switch m := m.(type) {
			case *jsonrpc.Request:
				if m == nil {
					t.Fatal("passed on a nil request")
				}
			case *jsonrpc.Response:
				if m == nil {
					t.Fatal("passed on a nil response")
				}
			default:
				t.Fatalf("passed on %T", m)
			}
		}
	})
}
