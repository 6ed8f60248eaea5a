package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPCredentials: an upstream's headers and token_exchange load with
// their secret files resolved against the config's directory, and what is
// wrong is refused naming the key.
func TestMCPCredentials(t *testing.T) {
	const base = "event_log: {path: e.jsonl}\nmcp:\n  upstreams:\n"
	p := write(t, "gatehost.yaml", base+`    github:
      url: https://api.example/mcp
      headers:
        Authorization: {secret_env: GH_TOKEN, prefix: "Bearer "}
        X-Api-Key: {secret_file: secrets/key}
    notes:
      url: https://notes.example/mcp
      token_exchange:
        token_endpoint: https://idp.example/token
        client_id: gatehost
        client_secret_file: /run/secrets/idp
        audience: notes-api
        resource: https://notes.example/mcp
        scopes: [notes.read, notes.write]
        timeout: 5s
`)
	l, err := Load(p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	assert.Equal(t, map[string]MCPSecretRef{
		"authorization": {SecretEnv: "GH_TOKEN", Prefix: "Bearer "},
		"x-api-key":     {SecretFile: filepath.Join(filepath.Dir(p), "secrets/key")},
	}, l.MCP.Upstreams["github"].Headers)
	assert.Equal(t, &MCPTokenExchange{TokenEndpoint: "https://idp.example/token", ClientID: "gatehost",
		ClientSecretFile: "/run/secrets/idp", Audience: "notes-api", Resource: "https://notes.example/mcp",
		Scopes: []string{"notes.read", "notes.write"}, SubjectToken: SubjectPrincipal, Timeout: 5 * time.Second},
		l.MCP.Upstreams["notes"].TokenExchange)

	s, err := Load(write(t, "gatehost.yaml", base+"    fs:\n      command: [srv]\n      processes: 3\n    st:\n      command: [srv]\n      session_scoped: true\n"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	assert.Equal(t, 3, s.MCP.Upstreams["fs"].Processes)
	assert.True(t, s.MCP.Upstreams["st"].SessionScoped)

	exchange := "      token_exchange: {token_endpoint: https://idp.example/token, client_id: gw, client_secret_env: IDP_SECRET}\n"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"headers on a command", "    fs:\n      command: [srv]\n      headers: {X-Api-Key: {secret_env: K}}\n",
			"mcp.upstreams.fs.headers: only a url upstream takes headers"},
		{"exchange on a command", "    fs:\n      command: [srv]\n" + exchange,
			"mcp.upstreams.fs.token_exchange: only a url upstream takes token_exchange"},
		{"no secret", "    gh:\n      url: https://x/mcp\n      headers: {X-Api-Key: {prefix: k}}\n",
			"mcp.upstreams.gh.headers.x-api-key: secret_file or secret_env is required"},
		{"two secrets", "    gh:\n      url: https://x/mcp\n      headers: {X-Api-Key: {secret_env: K, secret_file: f}}\n",
			"mcp.upstreams.gh.headers.x-api-key: secret_file and secret_env both set"},
		{"a literal value", "    gh:\n      url: https://x/mcp\n      headers: {X-Api-Key: literal}\n",
			"mcp.upstreams.gh.headers.x-api-key"},
		{"authorization and exchange", "    gh:\n      url: https://x/mcp\n      headers: {Authorization: {secret_env: K}}\n" + exchange,
			"mcp.upstreams.gh.headers.authorization: token_exchange sets Authorization"},
		{"no endpoint", "    gh:\n      url: https://x/mcp\n      token_exchange: {client_id: gw, client_secret_env: S}\n",
			"mcp.upstreams.gh.token_exchange.token_endpoint: required"},
		{"no client id", "    gh:\n      url: https://x/mcp\n      token_exchange: {token_endpoint: https://i/t, client_secret_env: S}\n",
			"mcp.upstreams.gh.token_exchange.client_id: required"},
		{"no client secret", "    gh:\n      url: https://x/mcp\n      token_exchange: {token_endpoint: https://i/t, client_id: gw}\n",
			"mcp.upstreams.gh.token_exchange: client_secret_file or client_secret_env is required"},
		{"two client secrets", "    gh:\n      url: https://x/mcp\n      token_exchange: {token_endpoint: https://i/t, client_id: gw, client_secret_env: S, client_secret_file: f}\n",
			"mcp.upstreams.gh.token_exchange: client_secret_file and client_secret_env both set"},
		{"other subject", "    gh:\n      url: https://x/mcp\n      token_exchange: {token_endpoint: https://i/t, client_id: gw, client_secret_env: S, subject_token: static}\n",
			`mcp.upstreams.gh.token_exchange.subject_token: "static": want principal`},
		{"unknown key", "    gh:\n      url: https://x/mcp\n      token_exchange: {token_endpoint: https://i/t, client_id: gw, client_secret_env: S, audiance: a}\n",
			"mcp.upstreams.gh.token_exchange.audiance"},
		{"processes on a url", "    gh:\n      url: https://x/mcp\n      processes: 2\n",
			"mcp.upstreams.gh.processes: only a command upstream takes processes"},
		{"too many processes", "    fs:\n      command: [srv]\n      processes: 65\n",
			"mcp.upstreams.fs.processes: 65 is not 1 to 64"},
		{"negative processes", "    fs:\n      command: [srv]\n      processes: -1\n",
			"mcp.upstreams.fs.processes: -1 is not 1 to 64"},
		{"processes and session_scoped", "    fs:\n      command: [srv]\n      processes: 2\n      session_scoped: true\n",
			"mcp.upstreams.fs.processes: a session_scoped upstream has one process per session"},
		{"session_scoped on a url", "    gh:\n      url: https://x/mcp\n      session_scoped: true\n",
			"mcp.upstreams.gh.session_scoped: only a command upstream takes session_scoped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, "gatehost.yaml", base+tc.body))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "config "), err.Error())
		})
	}
}
