// Command mcp-agent is the scripted agent of `make demo`'s gateway step: an
// MCP client (the official Go SDK) that starts `gatehost mcp` in front of
// @modelcontextprotocol/server-filesystem on a directory, makes the calls
// an agent would, and checks the disk after each one.
//
//	GATEHOST_PLUGIN_DIR=build/plugins go run ./examples/mcp-agent --gatehost build/gatehost \
//	    --config examples/mcp-agent/gatehost.yaml --approver-token-file var/mcp-demo/approvers \
//	    --server testdata/mcp/node_modules/.bin/mcp-server-filesystem --dir DIR
//
// Edits need a person's approval. The client declares URL-mode
// elicitation, so the gateway sends it the approval page's link; the
// person, a headless Chromium driven here (person.go), opens it, signs in
// with an approver token and decides: no the first time, yes the second.
//
// The config's Cedar policies name the served directory: scripts/demo.sh
// writes copies of them rooted at DIR first (examples/mcp-agent/gatehost.yaml).
//
// It exits 1 when a call's outcome or the disk differs from what the
// gateway's rules promise.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	gatehost := flag.String("gatehost", "build/gatehost", "the gatehost binary")
	config := flag.String("config", "examples/mcp-agent/gatehost.yaml", "gatehost config with an mcp: section")
	server := flag.String("server", "testdata/mcp/node_modules/.bin/mcp-server-filesystem", "the filesystem MCP server")
	dir := flag.String("dir", "", "directory the server serves (public/ is writable by the rules)")
	approverTokens := flag.String("approver-token-file", "var/mcp-demo/approvers", "the person's approver token (the config's approvals.page.approver_token_file)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "mcp-agent: --dir is required")
		os.Exit(2)
	}
	if err := run(*gatehost, *config, *server, *dir, *approverTokens); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-agent:", err)
		os.Exit(1)
	}
}

func run(gatehost, config, server, dir, approverTokens string) error {
	ctx := context.Background()
	who, err := newPerson(approverTokens)
	if err != nil {
		return err
	}
	defer who.stop()
	approve := false
	decided := make(chan error, 1)
	var asked atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-agent", Version: "1"}, &mcp.ClientOptions{
		// URL mode only: the client shows the person a link; it has no
		// answer of its own to give.
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			fmt.Printf("  [agent's client shows the person a link] %s\n", r.Params.URL)
			note := "not yet: the draft is still under review"
			if approve {
				note = "reviewed: publish the final text"
			}
			go func() { decided <- who.decide(r.Params.URL, r.Params.ElicitationID, approve, note) }()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cmd := exec.Command(gatehost, "mcp", "--config", config, "--log-level", "warn", "--upstream-name", "fs", "--", server, dir)
	cmd.Stderr = os.Stderr
	// The SDK's default revision, 2026-07-28: the gateway answers a call
	// that needs a person's approval input_required, with the approval
	// page's URL as the input request; the SDK's client shows it (the
	// handler above) and makes the call again, which waits for the
	// approver's decision on the page (docs/MCP-GATEWAY.md, "The
	// 2026-07-28 revision"). A 2025-11-25 client is sent the same URL
	// during the call instead.
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect to gatehost mcp: %w", err)
	}
	defer cs.Close()

	lr, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Printf("tools/list: %d tools from server-filesystem, through gatehost\n", len(lr.Tools))

	failed := false
	step := func(what, tool string, args map[string]any, wantAllowed bool, disk func() error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			fmt.Printf("FAIL %s: %v\n", what, err)
			failed = true
			return
		}
		verdict := "allowed"
		if res.IsError {
			verdict = "denied"
		}
		fmt.Printf("%s: %s → %s\n", what, tool, verdict)
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok && res.IsError {
				fmt.Printf("  %s\n", strings.ReplaceAll(t.Text, "\n", "\n  "))
			}
		}
		if res.IsError == wantAllowed {
			fmt.Printf("FAIL %s: want allowed=%v\n", what, wantAllowed)
			failed = true
		}
		if err := disk(); err != nil {
			fmt.Printf("FAIL %s: disk: %v\n", what, err)
			failed = true
		} else {
			fmt.Println("  disk checked")
		}
	}
	notes := filepath.Join(dir, "public", "notes.txt")
	secret := filepath.Join(dir, "private", "secret.txt")
	step("read a file", "read_text_file", map[string]any{"path": filepath.Join(dir, "README.txt")}, true, func() error { return nil })
	step("write under public/", "write_file", map[string]any{"path": notes, "content": "draft\n"}, true, content(notes, "draft\n"))
	step("write outside public/", "write_file", map[string]any{"path": secret, "content": "exfiltrated\n"}, false, absent(secret))
	edit := map[string]any{"path": notes, "edits": []map[string]any{{"oldText": "draft", "newText": "final"}}}
	// The call returns once the person decided; their browser may still
	// be showing the decision.
	personDone := func() {
		if asked.Swap(0) == 0 {
			fmt.Println("FAIL the person was never sent to the approval page")
			failed = true
			return
		}
		if err := <-decided; err != nil {
			fmt.Printf("FAIL the person: %v\n", err)
			failed = true
		}
	}
	step("edit, the person denies", "edit_file", edit, false, content(notes, "draft\n"))
	personDone()
	approve = true
	step("edit, the person approves", "edit_file", edit, true, content(notes, "final\n"))
	personDone()
	if failed {
		return fmt.Errorf("a step did not go as the rules say")
	}
	return nil
}

func content(path, want string) func() error {
	return func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(b) != want {
			return fmt.Errorf("%s holds %q, want %q", path, b, want)
		}
		return nil
	}
}

func absent(path string) func() error {
	return func() error {
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s exists", path)
		}
		return nil
	}
}
