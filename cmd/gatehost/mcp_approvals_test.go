package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/pageclient"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPListenAgentCannotApprove: over Streamable HTTP with the default
// approvals (the page, form mode off), an agent whose client accepts every
// elicitation, and who tries the approval page with its own token,
// approves nothing; an approver on the page does, and the waiting call
// then runs, once. A reload applies the approver tokens it reads, and is
// refused when an approver matches none of them.
func TestMCPListenAgentCannotApprove(t *testing.T) {
	const agentTok, approverTok = "agent-token-0123456789abcdef", "approver-token-0123456789abcdef"
	server := memoryServer(t)
	cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n  sessions: {activate_on_list: [\"*\"]}\n")
	dir := filepath.Dir(cfg)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agents"), []byte(agentTok+" name=agent1\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "approvers"), []byte(approverTok+" name=alice\n"), 0o600))
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("approvals:\n  ttl: 10m\n  page: {approver_token_file: approvers}\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	cmd, base, stderr := listenMCP(t, []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl"), "GATEHOST_APPROVER_TOKENS=", "GATEHOST_TOKENS="},
		"--config", cfg, "--listen", "127.0.0.1:0", "--watch-interval", "0", "--token-file", filepath.Join(dir, "agents"),
		"--upstream-name", "memory", "--", server)

	ctx := context.Background()
	connect := func(t *testing.T, caps *mcp.ClientCapabilities, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{Capabilities: caps, ElicitationHandler: elicit}).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{agentTok}}}, sessionfulClient)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		_, err = cs.ListTools(ctx, nil)
		require.NoError(t, err)
		return cs
	}
	remove := func(cs *mcp.ClientSession, name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_entities", Arguments: map[string]any{"entityNames": []string{name}}})
		require.NoError(t, err)
		return res
	}
	acceptAll := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}

	t.Run("a form-only client that accepts everything is never asked", func(t *testing.T) {
		cs := connect(t, nil, acceptAll)
		res := remove(cs, "alice")
		require.True(t, res.IsError)
		text := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
		assert.Contains(t, text, base+"/approvals/requests/rq-")
	})

	t.Run("URL mode: the agent's token cannot sign in; an approver's yes runs the call", func(t *testing.T) {
		results := make(chan *mcp.CallToolResult, 1)
		urls := make(chan string, 1)
		cs := connect(t, &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				urls <- r.Params.URL
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			})
		go func() { results <- remove(cs, "bob") }()
		u := <-urls
		pageBase, id, ok := strings.Cut(u, "/requests/")
		require.True(t, ok, u)
		assert.Equal(t, base+"/approvals", pageBase)
		_, err := pageclient.SignIn(nil, pageBase, agentTok)
		require.Error(t, err, "the agent's own token does not sign in to the approval page")
		alice, err := pageclient.SignIn(nil, pageBase, approverTok)
		require.NoError(t, err)
		status, body, err := alice.Decide(id, true, "ok")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, body)
		res := <-results
		assert.False(t, res.IsError, "approved on the page: the waiting call runs")
	})

	t.Run("a reload replaces the approver tokens", func(t *testing.T) {
		const rotated = "approver-token-rotated-0123456789"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "approvers"), []byte(rotated+" name=alice\n"), 0o600))
		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
		require.Eventually(t, func() bool {
			_, err := pageclient.SignIn(nil, base+"/approvals", rotated)
			return err == nil
		}, time.Minute, 50*time.Millisecond, "the rotated token signs in once the reload is done")
		_, err := pageclient.SignIn(nil, base+"/approvals", approverTok)
		require.Error(t, err, "the replaced token no longer signs in")
	})

	t.Run("a reload naming an approver no token has fails; the running rule stays", func(t *testing.T) {
		body, err := os.ReadFile(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(body), "  ttl: 10m\n", "  ttl: 10m\n  approvers: [{method: token, subject: alcie}]\n", 1)), 0o644))
		require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
		require.Eventually(t, func() bool {
			return strings.Contains(stderr.String(), `approvals.approvers[0].subject: \"alcie\": none of the approver tokens is named so; did you mean \"alice\"?`)
		}, time.Minute, 50*time.Millisecond, "the reload is refused, naming the entry")
		resp, err := (&http.Client{Transport: bearer{agentTok}}).Get(base + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Contains(t, string(b), `gatehost_config_reloads_total{result="failure"} 1`)
		assert.Contains(t, string(b), `gatehost_config_generation 2`, "the config of the token reload still serves")
	})
}

// TestApproverMatchesNobody: a config whose approvals.approvers names an
// approver no configured sign-in can match (a token name the approver
// token file lacks, an issuer or method nobody signs in with) is refused
// at start by every front end that decides approvals, naming the entry's
// field and the nearest name.
func TestApproverMatchesNobody(t *testing.T) {
	t.Setenv("GATEHOST_APPROVER_TOKENS", "")
	for _, tc := range []struct {
		name, approvers, want string
	}{
		{"a token name misspelt", "[{method: token, subject: alcie}]",
			`approvals.approvers[0].subject: "alcie": none of the approver tokens is named so; did you mean "alice"?`},
		{"an issuer nobody signs in with", "[{method: token, subject: alice}, {issuer: gatehost-approver}]",
			`approvals.approvers[1].issuer: "gatehost-approver": no approver signs in with it (the approver tokens: "gatehost-approvers"); did you mean "gatehost-approvers"?`},
		{"mtls: no approver signs in so", "[{method: mtls}]",
			`approvals.approvers[0].method: "mtls": no approver signs in with it (the approver tokens: token)`},
		{"oidc without approvals.page.oidc", "[{method: oidc, claims: {groups: ops}}]",
			`approvals.approvers[0].method: "oidc": no approver signs in with it (the approver tokens: token)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeMCPConfig(t, "  pipeline: gated\n  upstreams: {}\n")
			dir := filepath.Dir(cfg)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "approvers"), []byte("approver-token-0123456789abcdef name=alice\n"), 0o600))
			f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("approvals:\n  store: file\n  approvers: " + tc.approvers + "\n  page: {approver_token_file: approvers}\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			for _, args := range [][]string{{"mcp", "--config", cfg, "--listen", "127.0.0.1:0"}, {"approvals", "page", "--config", cfg, "--listen", "127.0.0.1:0"}} {
				// Bounded: a front end that starts serves until the
				// context ends, and exits 0.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				var out, errb bytes.Buffer
				code := run(ctx, args, strings.NewReader(""), &out, &errb)
				cancel()
				assert.Equal(t, 2, code, "%v: %s", args, errb.String())
				assert.Contains(t, errb.String(), "config "+cfg+": "+tc.want, args)
			}
		})
	}
}

// sessionfulClient has a client ask for 2025-11-25, the newest revision
// with sessions, at which the gateway elicits during a call (a 2026-07-28
// client is never sent a request during a call).
var sessionfulClient = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
