package mcpgateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/identity/identitytest"
	"github.com/gatehost/gatehost/mcpgateway"
)

// TestServeProtectedResource: with a Resource, Serve publishes its
// metadata (RFC 9728) without a credential at both well-known paths; /mcp
// answers a request without a token 401 naming the metadata, a refused
// token (bad signature, another audience) 401 invalid_token, a token
// without the scope 403 insufficient_scope; a token for the resource with
// the scope reaches the tools. Refused requests leave no decision.
func TestServeProtectedResource(t *testing.T) {
	up := newTestUpstream(nil)
	upSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upSrv.Close)
	f := newFixture(t, nil, nil)
	g := f.newGateway(t, mcpgateway.Options{Upstreams: []mcpgateway.Upstream{{Name: "notes", URL: upSrv.URL}}, ActivateOnList: []string{"*"}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	iss := identitytest.NewIssuer(t)
	res := &identity.Resource{URI: base + "/mcp", AuthorizationServers: []string{iss.URL},
		ScopesSupported: []string{"mcp:tools", "mcp:admin"}, Scopes: []string{"mcp:tools"}}
	oidc, err := identity.NewOIDC(context.Background(), identity.OIDCConfig{Issuer: iss.URL, Audiences: []string{res.URI}, Scopes: res.Scopes})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- g.Serve(ctx, ln, mcpgateway.ServeOptions{Resource: res, ShutdownTimeout: 2 * time.Second,
			Require: func(h http.Handler) http.Handler {
				return identity.RequireResource(identity.Chain(oidc), "gatehost", res, nil, h)
			}})
	}()
	t.Cleanup(func() { cancel(); <-served })

	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		code, body := get(t, base+path)
		require.Equal(t, http.StatusOK, code, path)
		assert.JSONEq(t, `{"resource":"`+base+`/mcp","authorization_servers":["`+iss.URL+`"],
			"scopes_supported":["mcp:tools","mcp:admin"],"bearer_methods_supported":["header"]}`, body, path)
	}

	key := iss.Keys()[0]
	token := func(aud string, scope any) string {
		c := iss.Standard("alice", aud, time.Now())
		if scope != nil {
			c["scope"] = scope
		}
		return identitytest.Sign(t, key, c)
	}
	meta := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name       string
		token      string
		wantStatus int
		// wantChallenge are the parts the WWW-Authenticate header holds.
		wantChallenge []string
		// notChallenge are parts it must not hold.
		notChallenge []string
	}{
		{"no token", "", http.StatusUnauthorized, []string{`Bearer realm="gatehost"`, meta, `scope="mcp:tools"`}, []string{"error="}},
		{"not a JWT", "opaque", http.StatusUnauthorized, []string{meta, `error="invalid_token"`}, nil},
		{"bad signature", token(res.URI, "mcp:tools")[:40] + "x" + token(res.URI, "mcp:tools")[41:], http.StatusUnauthorized, []string{meta, `error="invalid_token"`}, nil},
		{"another audience", token("https://other.example/mcp", "mcp:tools"), http.StatusUnauthorized,
			[]string{meta, `error="invalid_token"`, `error_description="the token is not for this audience"`}, nil},
		{"no scope", token(res.URI, nil), http.StatusForbidden, []string{meta, `error="insufficient_scope"`, `scope="mcp:tools"`}, nil},
		{"another scope", token(res.URI, "mcp:admin"), http.StatusForbidden, []string{meta, `error="insufficient_scope"`, `scope="mcp:tools"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(initialize))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			ch := resp.Header.Get("WWW-Authenticate")
			for _, want := range tc.wantChallenge {
				assert.Contains(t, ch, want)
			}
			for _, not := range tc.notChallenge {
				assert.NotContains(t, ch, not)
			}
		})
	}

	// The resource's token with the scope (scp as a list) reaches a tool.
	c := iss.Standard("alice", res.URI, time.Now())
	c["scp"] = []string{"mcp:tools"}
	cs := connectVia(t, base+"/mcp", withHeader{"Authorization", "Bearer " + identitytest.Sign(t, key, c)})
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	w := call(t, cs, "write_note", map[string]any{"name": "a", "text": "by alice"})
	assert.False(t, w.IsError, text(w))

	// Only that call was decided.
	fh, err := os.Open(f.logPath)
	require.NoError(t, err)
	defer fh.Close()
	decisions := 0
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Kind == "decision" {
			decisions++
		}
	}
	assert.Equal(t, 1, decisions)
}
