package mcpgateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/mcpgateway"
)

// withHeader adds a header to every request.
type withHeader struct{ k, v string }

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}

// tokenServers serve g's Streamable HTTP endpoint twice: authed takes the
// bearer token ci-token-0123456789 (principal ci-bot of issuer ops), open
// takes none (anonymous callers).
func tokenServers(t *testing.T, g *mcpgateway.Gateway) (authed, open *httptest.Server) {
	t.Helper()
	tokens := identity.NewTokenSource("ops", func(tok string) (string, bool) { return "ci-bot", tok == "ci-token-0123456789" })
	authed = httptest.NewServer(identity.Require(tokens, "gatehost", g.Handler()))
	t.Cleanup(authed.Close)
	open = httptest.NewServer(g.Handler())
	t.Cleanup(open.Close)
	return authed, open
}

// connectVia opens a client session to a Streamable HTTP endpoint whose
// requests go through rt.
func connectVia(t *testing.T, url string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, sessionful)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestHTTPPrincipalReachesGates: the principal of each HTTP request
// reaches the exec gate's principals rules and the decision record; an
// anonymous caller may only read, and a forged principal reference is
// replaced.
func TestHTTPPrincipalReachesGates(t *testing.T) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixtureWith(t, json.RawMessage(`{"confirm_effects":[],"principals":[
		{"name":"ci","when":{"method":"token","subject":"ci-bot"},"allow_tools":["*"]},
		{"name":"anyone","when":{"anonymous":true},"read_only":true}]}`), nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})
	authed, open := tokenServers(t, g)
	connectHTTP := func(url string, rt http.RoundTripper) *mcp.ClientSession {
		cs := connectVia(t, url, rt)
		_, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		return cs
	}
	ci := connectHTTP(authed.URL, withHeader{"Authorization", "Bearer ci-token-0123456789"})
	w := call(t, ci, "write_note", map[string]any{"name": "a", "text": "by ci"})
	assert.False(t, w.IsError, text(w))

	anon := connectHTTP(open.URL, withHeader{"X-Gatehost-Principal-Ref", "forged"})
	r := call(t, anon, "read_note", map[string]any{"name": "a"})
	assert.False(t, r.IsError, text(r))
	w = call(t, anon, "write_note", map[string]any{"name": "a", "text": "by anyone"})
	require.True(t, w.IsError)
	assert.Equal(t, []string{"principal_not_allowed"}, findingCodes(t, w))

	// The decision records name the caller.
	fh, err := os.Open(f.logPath)
	require.NoError(t, err)
	defer fh.Close()
	var principals []*abi.Principal
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind string `json:"kind"`
			Data struct {
				Principal *abi.Principal `json:"principal"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Kind == "decision" {
			principals = append(principals, rec.Data.Principal)
		}
	}
	require.Len(t, principals, 3)
	assert.Equal(t, &abi.Principal{Issuer: "ops", Subject: "ci-bot", Method: abi.MethodToken}, principals[0])
	assert.Nil(t, principals[1])
	assert.Nil(t, principals[2])
}
