package approvale2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gatehost/gatehost/internal/testing/browsertest"
	"github.com/gatehost/gatehost/internal/testing/oidctest"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

func TestMain(m *testing.M) { testwasm.Main(m, nil) }

// event is one line the TypeScript client prints.
type event struct {
	Event         string `json:"event"`
	Mode          string `json:"mode"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
	Result        *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// TestURLElicitationThroughThePage: the TypeScript SDK's client is sent to
// the approval page; a person in a real browser signs in with OIDC, reads
// the call, and approves (the file is written) or denies (nothing is sent).
// The client's own "accept" approves nothing.
func TestURLElicitationThroughThePage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser, node and gatehost (-short)")
	}
	root, err := testwasm.Root()
	require.NoError(t, err)
	node := filepath.Join(root, "testdata/mcp/node_modules/.bin/node")
	fsServer := filepath.Join(root, "testdata/mcp/node_modules/.bin/mcp-server-filesystem")
	for _, p := range []string{node, fsServer} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is not installed: run make mcp-deps (npm ci --prefix testdata/mcp)", p)
		}
	}
	bin, err := testwasm.Binary("cmd/gatehost")
	require.NoError(t, err)
	execWasm, err := testwasm.Go("plugins/exec/wasm")
	require.NoError(t, err)
	browser := browsertest.New(t)

	idp := oidctest.New(t, oidctest.Options{
		Users: map[string]oidctest.User{
			"alice": {Claims: map[string]any{"groups": []any{"approvers"}}},
			"bob":   {},
		},
		Clients: []oidctest.Client{{ID: "gatehost-approvals"}},
	})
	dir := t.TempDir()
	served := filepath.Join(dir, "srv")
	require.NoError(t, os.MkdirAll(filepath.Join(served, "public"), 0o755))
	notes := filepath.Join(served, "public", "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("draft\n"), 0o644))
	cfg := filepath.Join(dir, "gatehost.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
event_log: {path: events.jsonl}
sessions: {path: sessions.json}
cache_dir: %s
approvals:
  ttl: 10m
  approvers: [{claims: {groups: approvers}}]
  page:
    listen: 127.0.0.1:0
    oidc: {issuer: %q, client_id: gatehost-approvals, claims: [groups]}
plugins:
  exec: {path: %s}
pipelines:
  gw:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 60s
        capabilities: [catalog, session]
        config: {confirm_tools: ["mcp.fs:write_file"]}
mcp:
  pipeline: gw
  sessions: {activate_on_list: ["*"]}
`, testwasm.CacheDir(), idp.URL, execWasm)), 0o644))

	// call runs the client once: it writes content to notes.txt, and the
	// person decides with decide (approve or deny) on the page.
	call := func(t *testing.T, content string, approve bool, who string) event {
		args, _ := json.Marshal(map[string]string{"path": notes, "content": content})
		cmd := exec.Command(node, filepath.Join(root, "testdata/mcp/url-elicitation-client.mjs"), "write_file", string(args), "--",
			bin, "mcp", "--config", cfg, "--log-level", "warn", "--upstream-name", "fs", "--", fsServer, served)
		cmd.Stderr = os.Stderr
		// The client holds gatehost (and its page) up until the person's
		// browser is done with it: stdin is closed after the result.
		cmd.Env = append(os.Environ(), "HOLD_UNTIL_STDIN_CLOSES=1")
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var result event
		elicited := false
		for sc.Scan() {
			var e event
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
			switch e.Event {
			case "elicitation":
				elicited = true
				require.Equal(t, "url", e.Mode)
				require.True(t, strings.HasSuffix(e.URL, "/approvals/requests/"+e.ElicitationID), e.URL)
				decide(t, browser, e.URL, e.ElicitationID, approve, who)
			case "result":
				result = e
				// decide, above, has returned: the person is done.
				require.NoError(t, in.Close())
			}
		}
		require.NoError(t, cmd.Wait())
		require.True(t, elicited, "the client was sent to the approval page")
		require.NotNil(t, result.Result, "the client printed the call's result")
		return result
	}

	t.Run("denied: nothing is sent", func(t *testing.T) {
		r := call(t, "denied\n", false, "alice")
		assert.True(t, r.Result.IsError)
		b, err := os.ReadFile(notes)
		require.NoError(t, err)
		assert.Equal(t, "draft\n", string(b))
	})
	t.Run("approved: the call runs", func(t *testing.T) {
		r := call(t, "approved\n", true, "alice")
		assert.False(t, r.Result.IsError, r.Result.Content)
		b, err := os.ReadFile(notes)
		require.NoError(t, err)
		assert.Equal(t, "approved\n", string(b))
	})
	t.Run("who approved is in the log", func(t *testing.T) {
		out, err := exec.Command(bin, "log", "verify", "--config", cfg).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), "mcp.fs:write_file approved by oidc:"+idp.URL+"/alice")
		assert.Contains(t, string(out), "mcp.fs:write_file denied by oidc:"+idp.URL+"/alice")
	})
}

// decide is the person: opens url, signs in as who through the OIDC
// provider (each gatehost process signs its own cookies, and each call
// here starts one), reads the call and approves or denies it.
func decide(t *testing.T, browser context.Context, url, id string, approve bool, who string) {
	t.Helper()
	sel := "#" + id
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(url),
		chromedp.WaitVisible(css("#signin-oidc")),
		chromedp.Click(css("#signin-oidc")),
		chromedp.WaitVisible(css("#username")),
		chromedp.SendKeys(css("#username"), who),
		chromedp.Click(css("#signin"))}
	button, badge := sel+"-deny", sel+" .badge-denied"
	if approve {
		button, badge = sel+"-approve", sel+" .badge-approved, "+sel+" .badge-used"
	}
	steps = append(steps, chromedp.WaitVisible(css(button)))
	require.NoError(t, chromedp.Do(browser, steps...))
	args, err := chromedp.Run(browser, chromedp.Text(css(sel+" pre.json")))
	require.NoError(t, err)
	assert.Contains(t, args, `"content"`, "the person sees every argument")
	require.NoError(t, chromedp.Do(browser,
		chromedp.SendKeys(css(sel+"-note"), "checked in the browser"),
		chromedp.Click(css(button)),
		chromedp.WaitVisible(css(badge))))
}
