package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/config"
	"github.com/gatehost/gatehost/mcpgateway"
)

const testSecret = "s3cret-cli-0042"

// TestMCPCredentialOptions: an upstream's header secrets and token
// exchange client secret are read from their file or variable into the
// gateway's options, with the prefix; what cannot be read or is refused
// is an error naming the key, never holding the secret.
func TestMCPCredentialOptions(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte(testSecret+"\n"), 0o600))
	t.Setenv("GH_TOKEN", testSecret)
	mcpOf := func(u config.MCPUpstream) config.MCP {
		return config.MCP{Upstreams: map[string]config.MCPUpstream{"gh": u}}
	}

	o, err := gatewayOptions(mcpOf(config.MCPUpstream{URL: "https://api.example/mcp",
		Headers: map[string]config.MCPSecretRef{
			"authorization": {SecretEnv: "GH_TOKEN", Prefix: "Bearer "},
			"x-api-key":     {SecretFile: keyFile},
		}}))
	require.NoError(t, err)
	assert.Equal(t, []mcpgateway.Header{{Name: "authorization", Value: "Bearer " + testSecret}, {Name: "x-api-key", Value: testSecret}},
		o.Upstreams[0].Headers)

	o, err = gatewayOptions(mcpOf(config.MCPUpstream{URL: "https://api.example/mcp",
		TokenExchange: &config.MCPTokenExchange{TokenEndpoint: "https://idp.example/token", ClientID: "gw", ClientSecretFile: keyFile,
			Audience: "a", Resource: "https://api.example/mcp", Scopes: []string{"s"}, SubjectToken: config.SubjectPrincipal, Timeout: time.Second}}))
	require.NoError(t, err)
	assert.Equal(t, &mcpgateway.TokenExchange{TokenEndpoint: "https://idp.example/token", ClientID: "gw", ClientSecret: testSecret,
		Audience: "a", Resource: "https://api.example/mcp", Scopes: []string{"s"}, Timeout: time.Second}, o.Upstreams[0].TokenExchange)

	exchange := func(endpoint string) *config.MCPTokenExchange {
		return &config.MCPTokenExchange{TokenEndpoint: endpoint, ClientID: "gw", ClientSecretEnv: "GH_TOKEN"}
	}
	for _, tc := range []struct {
		name string
		up   config.MCPUpstream
		want string
	}{
		{"reserved header", config.MCPUpstream{URL: "https://x/mcp", Headers: map[string]config.MCPSecretRef{"host": {SecretEnv: "GH_TOKEN"}}},
			"mcp.upstreams.gh.headers.host: Host is set by the transport or the protocol"},
		{"session header", config.MCPUpstream{URL: "https://x/mcp", Headers: map[string]config.MCPSecretRef{"mcp-session-id": {SecretEnv: "GH_TOKEN"}}},
			"mcp.upstreams.gh.headers.mcp-session-id: Mcp-Session-Id is set by the transport or the protocol"},
		{"unset variable", config.MCPUpstream{URL: "https://x/mcp", Headers: map[string]config.MCPSecretRef{"x-api-key": {SecretEnv: "GATEHOST_TEST_UNSET"}}},
			"mcp.upstreams.gh.headers.x-api-key.secret_env: $GATEHOST_TEST_UNSET is not set"},
		{"missing file", config.MCPUpstream{URL: "https://x/mcp", Headers: map[string]config.MCPSecretRef{"x-api-key": {SecretFile: filepath.Join(dir, "none")}}},
			"mcp.upstreams.gh.headers.x-api-key.secret_file: "},
		{"newline in value", config.MCPUpstream{URL: "https://x/mcp", Headers: map[string]config.MCPSecretRef{"x-api-key": {SecretEnv: "GH_TOKEN", Prefix: "a\nb "}}},
			"mcp.upstreams.gh.headers.x-api-key: the value of X-Api-Key is empty or holds a control character"},
		{"plain http endpoint", config.MCPUpstream{URL: "https://x/mcp", TokenExchange: exchange("http://idp.example/token")},
			"mcp.upstreams.gh.token_exchange.token_endpoint: http only on a loopback host"},
		{"unset client secret", config.MCPUpstream{URL: "https://x/mcp", TokenExchange: &config.MCPTokenExchange{TokenEndpoint: "https://i/t", ClientID: "gw", ClientSecretEnv: "GATEHOST_TEST_UNSET"}},
			"mcp.upstreams.gh.token_exchange.client_secret_env: $GATEHOST_TEST_UNSET is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gatewayOptions(mcpOf(tc.up))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), testSecret)
		})
	}

	// The options, printed or encoded, hold no secret.
	b, err := json.Marshal(o.Upstreams)
	require.NoError(t, err)
	for _, s := range []string{string(b), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o.Upstreams[0])} {
		assert.NotContains(t, s, testSecret)
	}
}
