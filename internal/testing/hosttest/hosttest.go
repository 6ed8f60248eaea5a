// Package hosttest is the fixture of the tests that run modules through
// package host: host's own tests and the end-to-end tests of the built-in
// gates (internal/testing/gatee2e). It builds the modules a test binary needs once,
// and makes hosts with the settings every test shares.
package hosttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/hostkit"
	"github.com/gatehost/gatehost/internal/testing/guestcalls"
	"github.com/gatehost/gatehost/internal/testing/testwasm"
)

// Module is a Go guest package (relative to the repository root, such as
// "plugins/exec/wasm") and where Main stores the built module's path.
type Module struct {
	Path *string
	Pkg  string
}

// Main runs the tests of m (call it from TestMain) after setting *root to
// the repository root and building each module once for the whole test
// binary (docs/RATIONALE.md, Tests: compiling per test case does not fit
// CI's time).
func Main(m *testing.M, root *string, modules ...Module) {
	testwasm.Main(m, func() (err error) {
		if *root, err = testwasm.Root(); err != nil {
			return err
		}
		for _, b := range modules {
			if *b.Path, err = testwasm.Go(b.Pkg); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadFile returns the content of the file rel, relative to the repository
// root.
func ReadFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// GitHubCatalog is the catalog of the GitHub MCP server's tools
// (testdata/catalogs/github-mcp-server), server name "github".
func GitHubCatalog(t testing.TB) *catalog.Store {
	t.Helper()
	tools, err := catalog.Load(filepath.Join(root(t), "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.NewStore(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func root(t testing.TB) string {
	t.Helper()
	r, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// OnePipeline returns a one-stage pipeline config, pipeline "p" on
// proposals.
func OnePipeline(plugin string, caps ...string) map[string]host.PipelineConfig {
	return map[string]host.PipelineConfig{"p": {
		Subject: "proposal",
		Stages:  []host.StageConfig{{Plugin: plugin, Capabilities: caps}},
	}}
}

// Timeout replaces the 1s default stage deadline: under -race on a busy
// 2-core machine a fresh instance alone can take longer. Timeouts are tested
// with explicit deadlines.
const Timeout = 60 * time.Second

// New creates a host for a test, with the shared compilation cache and
// Timeout on every stage that sets no deadline, closed when the test ends.
func New(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	return newCtx(t, context.Background(), cfg)
}

// NewCounted is New with c's function listeners on every guest (package
// guestcalls), for benchmarks counting guest function calls. Listeners are
// fixed when a module is compiled: the host gets a compilation cache of its
// own.
func NewCounted(t testing.TB, c *guestcalls.Counter, cfg host.Config) *host.Host {
	t.Helper()
	cfg.CacheDir = t.TempDir()
	return newCtx(t, c.Context(context.Background()), cfg)
}

// NewPartial is New for configs in which stages deliberately withhold
// capabilities their gate declares, to test a denied call.
func NewPartial(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	return newCtx(t, hostkit.WithPartialGrants(context.Background()), cfg)
}

func newCtx(t testing.TB, ctx context.Context, cfg host.Config) *host.Host {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = testwasm.CacheDir()
	}
	for name, p := range cfg.Pipelines {
		for i := range p.Stages {
			if p.Stages[i].Timeout == 0 {
				p.Stages[i].Timeout = Timeout
			}
		}
		cfg.Pipelines[name] = p
	}
	h, err := host.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}
