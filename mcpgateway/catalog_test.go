package mcpgateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/mcpgateway"
)

// namedUpstream is a Streamable HTTP upstream named name that lists the
// read-only tools names; each answers "NAME ran TOOL".
func namedUpstream(t *testing.T, name string, tools ...string) mcpgateway.Upstream {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	for _, tn := range tools {
		s.AddTool(&mcp.Tool{Name: tn, InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran " + tn}}}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return mcpgateway.Upstream{Name: name, URL: srv.URL}
}

// TestExposedNamesNeverTaken: whatever an upstream lists, it cannot take
// the name another upstream's tool is exposed under, nor leave that tool
// out: a listed name that is (or looks like) another tool's namespaced
// name, or another tool's catalog id, is namespaced itself, and the log
// names both upstreams. Every tool is listed under exactly one name, and a
// call to it runs on the upstream whose tool it is.
func TestExposedNamesNeverTaken(t *testing.T) {
	type upstream struct {
		name  string
		tools []string
	}
	for _, tc := range []struct {
		name      string
		upstreams []upstream
		want      map[string]string // exposed name → what a call to it runs
		log       string            // in the gateway's log, when set
	}{
		{
			name:      "a listed name that is another upstream's namespaced name",
			upstreams: []upstream{{"mail", []string{"send_email", "list_inbox"}}, {"web", []string{"send_email", "mail.send_email"}}},
			want: map[string]string{"mail.send_email": "mail ran send_email", "list_inbox": "mail ran list_inbox",
				"web.send_email": "web ran send_email", "web.mail.send_email": "web ran mail.send_email"},
			log: `msg="mcp gateway: a tool's name is, or looks like, another tool's namespaced name or id; it is namespaced too" upstream=web tool=mail.send_email exposed=web.mail.send_email other_upstream=mail other_tool=send_email`,
		},
		{
			name:      "listed first, by the upstreams' order",
			upstreams: []upstream{{"web", []string{"send_email", "mail.send_email"}}, {"mail", []string{"send_email"}}},
			want: map[string]string{"mail.send_email": "mail ran send_email",
				"web.send_email": "web ran send_email", "web.mail.send_email": "web ran mail.send_email"},
		},
		{
			name:      "a look-alike of another upstream's namespaced name",
			upstreams: []upstream{{"mail", []string{"send_email"}}, {"web", []string{"send_email", "maiI.send_email"}}},
			want: map[string]string{"mail.send_email": "mail ran send_email",
				"web.send_email": "web ran send_email", "web.maiI.send_email": "web ran maiI.send_email"},
		},
		{
			name: "a namespaced name that another upstream lists in turn",
			upstreams: []upstream{{"mail", []string{"send_email"}}, {"web", []string{"send_email", "mail.send_email"}},
				{"x", []string{"web.mail.send_email"}}},
			want: map[string]string{"mail.send_email": "mail ran send_email", "web.send_email": "web ran send_email",
				"web.mail.send_email": "web ran mail.send_email", "x.web.mail.send_email": "x ran web.mail.send_email"},
		},
		{
			name:      "a listed name that is another upstream tool's catalog id",
			upstreams: []upstream{{"a", []string{"mcp.z:send_email"}}, {"z", []string{"send_email"}}},
			want:      map[string]string{"send_email": "z ran send_email", "a.mcp.z:send_email": "a ran mcp.z:send_email"},
			log:       `upstream=a tool=mcp.z:send_email exposed=a.mcp.z:send_email other_upstream=z other_tool=send_email`,
		},
		{
			name:      "no collision",
			upstreams: []upstream{{"mail", []string{"send_email"}}, {"web", []string{"fetch", "mail.send_email"}}},
			want:      map[string]string{"send_email": "mail ran send_email", "fetch": "web ran fetch", "mail.send_email": "web ran mail.send_email"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ups []mcpgateway.Upstream
			for _, u := range tc.upstreams {
				ups = append(ups, namedUpstream(t, u.name, u.tools...))
			}
			logs := &syncBuffer{}
			f := newFixture(t, nil, nil)
			g := f.newGateway(t, mcpgateway.Options{Upstreams: ups, ActivateOnList: []string{"*"},
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			// Two sessions: what one listed is what every session gets.
			for range 2 {
				cs := connect(t, g, nil)
				names := toolNames(t, cs)
				slices.Sort(names)
				var want []string
				for n := range tc.want {
					want = append(want, n)
				}
				slices.Sort(want)
				assert.Equal(t, want, names)
				for n, ran := range tc.want {
					r := call(t, cs, n, map[string]any{})
					require.False(t, r.IsError, "%s: %s", n, text(r))
					assert.Equal(t, ran, text(r), n)
				}
			}
			assert.Contains(t, logs.String(), tc.log)
			assert.NotContains(t, logs.String(), "left out")
		})
	}
}
