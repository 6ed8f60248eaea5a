package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/catalog"
	"github.com/gatehost/gatehost/internal/hostkit"
	"github.com/gatehost/gatehost/internal/testwasm"
)

// Modules built once for the whole test binary (docs/RATIONALE.md, Tests: compiling per test
// case does not fit CI's time).
var (
	staticVerifyWasm string
	execWasm         string
	flakyWasm        string
	probeWasm        string
	repoRoot         string
	cacheDir         = testwasm.CacheDir()
)

func TestMain(m *testing.M) {
	testwasm.Main(m, func() (err error) {
		if repoRoot, err = testwasm.Root(); err != nil {
			return err
		}
		for _, b := range []struct {
			dst *string
			pkg string
		}{
			{&staticVerifyWasm, "plugins/static-verify/wasm"},
			{&flakyWasm, "internal/testguests/flaky"},
			{&probeWasm, "internal/testguests/probe"},
			{&execWasm, "plugins/exec/wasm"},
		} {
			if *b.dst, err = testwasm.Go(b.pkg); err != nil {
				return err
			}
		}
		return nil
	})
}

func githubCatalog(t testing.TB) *catalog.Store {
	t.Helper()
	tools, err := catalog.Load(filepath.Join(repoRoot, "testdata/catalogs/github-mcp-server"), catalog.ImportOptions{Format: catalog.FormatMCP, Server: "github"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := catalog.NewStore(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stage returns a one-stage pipeline config.
func onePipeline(plugin string, caps ...string) map[string]host.PipelineConfig {
	return map[string]host.PipelineConfig{"p": {
		Subject: "proposal",
		Stages:  []host.StageConfig{{Plugin: plugin, Capabilities: caps}},
	}}
}

// testTimeout replaces the 1s default stage deadline: under -race on a busy
// 2-core machine a fresh instance alone can take longer. Timeouts are tested
// with explicit deadlines.
const testTimeout = 60 * time.Second

// newHost creates a host for a test, with the shared compilation cache and
// testTimeout on every stage that sets no deadline.
func newHost(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	return newHostCtx(t, context.Background(), cfg)
}

// newPartialHost is newHost for configs in which stages deliberately
// withhold capabilities their gate declares, to test a denied call.
func newPartialHost(t testing.TB, cfg host.Config) *host.Host {
	t.Helper()
	return newHostCtx(t, hostkit.WithPartialGrants(context.Background()), cfg)
}

func newHostCtx(t testing.TB, ctx context.Context, cfg host.Config) *host.Host {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = testwasm.CacheDir()
	}
	for name, p := range cfg.Pipelines {
		for i := range p.Stages {
			if p.Stages[i].Timeout == 0 {
				p.Stages[i].Timeout = testTimeout
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
