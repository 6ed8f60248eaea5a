package host_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/testing/hosttest"
)

// Embed the host: load the GitHub MCP catalog and the static-verify gate, run
// the admission pipeline on an OpenAI assistant message, read the Decision.
func Example() {
	ctx := context.Background()
	tools, err := catalog.Load(repoRoot+"/testdata/catalogs/github-mcp-server", catalog.ImportOptions{Server: "github"})
	if err != nil {
		log.Fatal(err)
	}
	store, err := catalog.NewStore(tools...)
	if err != nil {
		log.Fatal(err)
	}
	h, err := host.New(ctx, host.Config{
		Catalog: store,
		Plugins: map[string]host.PluginConfig{"static-verify": {Path: staticVerifyWasm}},
		Pipelines: map[string]host.PipelineConfig{"admission": {
			Subject: "proposal",
			Stages:  []host.StageConfig{{Plugin: "static-verify", Capabilities: []string{"catalog", "schema"}, Timeout: hosttest.Timeout}},
		}},
		CacheDir: cacheDir,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)

	msg := `{"role":"assistant","tool_calls":[{"id":"c1","type":"function",
	  "function":{"name":"create_issue","arguments":"{\"owner\":\"octo\",\"repo\":\"demo\"}"}}]}`
	// The raw message: its format is detected (RunOptions.Format names it
	// instead), and it is read and validated once.
	d, err := h.Check(ctx, "admission", []byte(msg), host.RunOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Verdict)
	for _, f := range d.Findings {
		fmt.Println(f.Severity, f.Code, f.Keyword, *f.ActionIndex)
	}
	// Output:
	// rejected
	// blocking schema_violation required 0
}
