package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/oidctest"
)

// freeAddr is a loopback address no one listens on now: the resource URI
// names the port before gatehost binds it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestMCPListenOAuthClient: the official TypeScript SDK's client, given
// only the URL of gatehost mcp --listen with auth.resource, authorizes
// itself as the MCP authorization spec has it (the 401's
// resource_metadata, the protected resource metadata, the authorization
// server's metadata, dynamic registration, PKCE, the resource indicator),
// a scripted user signing in, and calls a tool of server-memory through
// the gateway with the token it got: a token for the gateway's resource
// URI, with the scope the gateway needs. A token of the same issuer for
// another audience is refused.
func TestMCPListenOAuthClient(t *testing.T) {
	server := memoryServer(t)
	node := filepath.Join(repoRoot, "testdata/mcp/node_modules/.bin/node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s is not installed: run make mcp-deps (npm ci --prefix testdata/mcp)", node)
	}
	idp := oidctest.New(t, oidctest.Options{Users: map[string]oidctest.User{"alice": {}}})
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	cfg := writeMCPConfig(t, fmt.Sprintf(`  pipeline: gated
  upstreams: {}
  sessions: {activate_on_list: ["*"]}
auth:
  oidc: {issuer: %q}
  resource:
    uri: %q
    scopes_required: [mcp:tools]
`, idp.URL, resource))
	_, base, stderr := listenMCP(t, []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")},
		"--config", cfg, "--listen", addr, "--watch-interval", "0", "--upstream-name", "memory", "--", server)
	require.Equal(t, "http://"+addr, base)

	args := `{"entities":[{"name":"alice","entityType":"person","observations":["signed in"]}]}`
	cmd := exec.Command(node, filepath.Join(repoRoot, "testdata/mcp/oauth-client.mjs"), resource, "alice", "create_entities", args)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
	}
	require.NoError(t, err, "client stderr:\n%s\ngatehost stderr:\n%s", errb.String(), stderr.String())

	events := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		events[e["event"].(string)] = e
	}
	require.Contains(t, events, "authorize", string(out))
	au := events["authorize"]["url"].(string)
	assert.True(t, strings.HasPrefix(au, idp.URL+"/authorize?"), au)
	for _, want := range []string{"resource=" + url.QueryEscape(resource), "scope=mcp%3Atools", "code_challenge_method=S256"} {
		assert.Contains(t, au, want)
	}
	assert.Equal(t, []any{resource}, events["token"]["aud"])
	assert.Equal(t, "mcp:tools", events["token"]["scope"])
	var fetched []string
	for _, u := range events["fetched"]["urls"].([]any) {
		fetched = append(fetched, u.(string))
	}
	for _, want := range []string{
		"GET http://" + addr + "/.well-known/oauth-protected-resource/mcp",
		"POST " + idp.URL + "/register",
		"POST " + idp.URL + "/token",
	} {
		assert.Contains(t, fetched, want)
	}
	result, _ := events["result"]["result"].(map[string]any)
	require.NotNil(t, result, string(out))
	assert.NotEqual(t, true, result["isError"], fmt.Sprint(result))
	assert.Contains(t, fmt.Sprint(result["content"]), "alice")
	assert.Len(t, idp.Registered(), 1)
	assert.Equal(t, []string{"alice"}, idp.Logins())

	// The same issuer's token for another audience is refused.
	other := idp.Sign(map[string]any{"iss": idp.URL, "sub": "alice", "aud": "http://" + addr + "/other",
		"scope": "mcp:tools", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	req, err := http.NewRequest(http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+other)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.Equal(t, `Bearer realm="gatehost", resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp", `+
		`error="invalid_token", error_description="the token is not for this audience", scope="mcp:tools"`, res.Header.Get("WWW-Authenticate"))
}
