package mcpgateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrameFilter: a frame that is not a JSON-RPC message is answered
// with a JSON-RPC error and the next frame is read.
func TestFrameFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":7,"method":5}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		``,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	var out strings.Builder
	f := &frameFilter{src: io.NopCloser(nil), r: bufio.NewReader(strings.NewReader(in)), w: &out}
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n", string(got))
	answers := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, answers, 3)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, answers[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request"}}`, answers[1])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`, answers[2])
}

func TestStripGatehostMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"content":[]}`, `{"content":[]}`},
		{`{"_meta":{"gatehost/decision":{"verdict":"rejected"},"x":1},"content":[{"type":"text","text":"gatehost/ ok","_meta":{"gatehost/run_id":"r"}}]}`,
			`{"_meta":{"x":1},"content":[{"type":"text","text":"gatehost/ ok","_meta":{}}]}`},
		{`{"tools":[{"name":"a","_meta":{"gatehost/approval":true}}]}`, `{"tools":[{"name":"a","_meta":{}}]}`},
	} {
		assert.JSONEq(t, tc.want, string(stripGatehostMeta(json.RawMessage(tc.in))), tc.in)
	}
}

func TestTemplateMatches(t *testing.T) {
	for _, tc := range []struct {
		tpl, uri string
		want     bool
	}{
		{"note://{name}", "note://a", true},
		{"note://{name}", "note://a/b", false},
		{"file://{+path}", "file:///etc/x", true},
		{"demo://resource/{id}", "demo://other/1", false},
		{"x://a.b/{id}", "x://aXb/1", false},
	} {
		assert.Equal(t, tc.want, templateMatches(tc.tpl, tc.uri), tc.tpl+" "+tc.uri)
	}
}

func TestNames(t *testing.T) {
	same := []string{"read_file", "Read_File", "read_fiIe", "rеad_file", "read\u200b_file", "\uff52ead_file", "\uff52\uff45\uff41\uff44_file"}
	for _, n := range same[1:] {
		assert.Equal(t, nameSkeleton(same[0]), nameSkeleton(n), n)
	}
	assert.NotEqual(t, nameSkeleton("read_file"), nameSkeleton("write_file"))
	for _, n := range []string{"", "a\u202eb", "a\u200bb", "a\x00", "   ", "\xff", "@instructions"} {
		assert.NotEmpty(t, badToolName(n), "%q", n)
	}
	assert.Empty(t, badToolName("read_file"))
}

// TestApprovalPromptShowsEverything: every argument is shown, escaped;
// arguments too long to show whole cannot be approved.
func TestApprovalPromptShowsEverything(t *testing.T) {
	args := json.RawMessage(`{"path":"/srv/public/a\u202etxt.exe","content":"line1\nline2\u200b","n":1}`)
	msg, err := approvalMessage("mcp.fs:write_file", "non_idempotent", "fs", args, 4096)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(msg, approvalHeading))
	assert.Contains(t, msg, `a\u202etxt.exe`)
	assert.Contains(t, msg, `line2\u200b`)
	assert.NotContains(t, msg, "\u202e")
	assert.NotContains(t, msg, "\u200b")
	long := json.RawMessage(`{"content":"` + strings.Repeat("x", 5000) + `"}`)
	_, err = approvalMessage("mcp.fs:write_file", "non_idempotent", "fs", long, 4096)
	assert.True(t, errors.Is(err, errNotShowable))
}

// TestListAllBounds: pages, items, bytes and repeated cursors end a
// listing with an error.
func TestListAllBounds(t *testing.T) {
	o := Options{MaxListPages: 3, MaxListItems: 5, MaxListBytes: 1000}
	endless := func(cursor string) ([]int, string, error) { return []int{1}, cursor + "x", nil }
	_, err := listAll(context.Background(), o, "tools/list", endless)
	assert.ErrorContains(t, err, "pages")
	loop := func(string) ([]int, string, error) { return []int{1}, "same", nil }
	_, err = listAll(context.Background(), Options{MaxListPages: 10, MaxListItems: 10, MaxListBytes: 1000}, "tools/list", loop)
	assert.ErrorContains(t, err, "repeated a cursor")
	many := func(string) ([]int, string, error) { return []int{1, 2, 3, 4, 5, 6}, "", nil }
	_, err = listAll(context.Background(), o, "tools/list", many)
	assert.ErrorContains(t, err, "items")
	big := func(string) ([]string, string, error) { return []string{strings.Repeat("a", 2000)}, "", nil }
	_, err = listAll(context.Background(), o, "tools/list", big)
	assert.ErrorContains(t, err, "bytes")
	ok := func(c string) ([]int, string, error) {
		if c == "" {
			return []int{1}, "p2", nil
		}
		return []int{2}, "", nil
	}
	got, err := listAll(context.Background(), o, "tools/list", ok)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, got)
}
