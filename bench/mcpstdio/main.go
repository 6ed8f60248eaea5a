// Command mcpstdio times a tools/call over stdio, side by side in one run:
// an MCP server's tool called directly (the client starts the server) and
// through `gatehost mcp` (the client starts gatehost, which starts the
// server), with the exec pipeline deciding each call and the file event
// log on disk, and again with the event log on tmpfs (/dev/shm) to
// separate the fsync. The calls of the three sides are interleaved, after
// a warm-up. It prints p50 and p99 of each side in µs. -only times one
// side alone (with -warmup 0 -n 1, a whole process under farm-bench is a
// gateway's start and first call).
//
//	go run ./bench/mcpstdio -n 300 -- testdata/mcp/node_modules/.bin/mcp-server-everything
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const config = `event_log: {path: %[1]s/events.jsonl, head_interval: %[4]s}
sessions: {path: %[1]s/sessions.json}
plugins:
  exec: {path: %[2]s}
pipelines:
  gated:
    subject: tool_call
    stages:
      - plugin: exec
        timeout: 5s
        capabilities: [catalog, session]
        config: {confirm_effects: []}
mcp:
  pipeline: gated
  upstreams: {}
  sessions: {core: ["*"]}
warm_pools: %[3]t
`

func main() {
	gatehost := flag.String("gatehost", "build/gatehost", "the gatehost binary")
	plugin := flag.String("exec", "build/plugins/exec.wasm", "the exec gate's module")
	diskDir := flag.String("disk", "build/mcpstdio", "directory of the on-disk event log")
	shmDir := flag.String("shm", "/dev/shm/gatehost-mcpstdio", "directory of the tmpfs event log")
	n := flag.Int("n", 300, "timed calls per side")
	warm := flag.Int("warmup", 50, "untimed calls per side first")
	tool := flag.String("tool", "echo", "the tool called")
	warmPools := flag.Bool("warm-pools", false, "warm_pools: true in gatehost's config")
	only := flag.String("only", "", "time this side alone (direct, gateway-disk, gateway-disk-head or gateway-tmpfs)")
	flag.Parse()
	upstream := flag.Args()
	if len(upstream) == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpstdio [flags] -- UPSTREAM-COMMAND [ARGS...]")
		os.Exit(2)
	}
	if err := run(*gatehost, *plugin, *diskDir, *shmDir, *tool, *only, *n, *warm, *warmPools, upstream); err != nil {
		fmt.Fprintln(os.Stderr, "mcpstdio:", err)
		os.Exit(1)
	}
}

type side struct {
	name string
	cs   *mcp.ClientSession
	lat  []time.Duration
}

func run(gatehost, plugin, diskDir, shmDir, tool, only string, n, warm int, warmPools bool, upstream []string) error {
	ctx := context.Background()
	absPlugin, err := filepath.Abs(plugin)
	if err != nil {
		return err
	}
	connect := func(name string, argv ...string) (*side, error) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpstdio", Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &side{name: name, cs: cs}, nil
	}
	gateway := func(name, dir, headInterval string) (*side, error) {
		dir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cfg := filepath.Join(dir, "gatehost.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, config, dir, absPlugin, warmPools, headInterval), 0o644); err != nil {
			return nil, err
		}
		argv := append([]string{gatehost, "mcp", "--config", cfg, "--log-level", "warn", "--"}, upstream...)
		return connect(name, argv...)
	}
	var sides []*side
	for _, mk := range []struct {
		name string
		mk   func() (*side, error)
	}{
		{"direct", func() (*side, error) { return connect("direct", upstream...) }},
		// The default: the log's head checkpoint trails the appends.
		{"gateway-disk", func() (*side, error) { return gateway("gateway-disk", diskDir, "1s") }},
		// The head replaced in every append: two more fsyncs per call.
		{"gateway-disk-head", func() (*side, error) { return gateway("gateway-disk-head", diskDir+"-head", "0s") }},
		{"gateway-tmpfs", func() (*side, error) { return gateway("gateway-tmpfs", shmDir, "1s") }},
	} {
		if only != "" && only != mk.name {
			continue
		}
		s, err := mk.mk()
		if err != nil {
			return err
		}
		defer s.cs.Close()
		sides = append(sides, s)
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "hello"}}
	for i := range warm + n {
		for _, s := range sides {
			start := time.Now()
			r, err := s.cs.CallTool(ctx, params)
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error: %v", r.Content)
			}
			if err != nil {
				return fmt.Errorf("%s: call %d: %w", s.name, i, err)
			}
			if i >= warm {
				s.lat = append(s.lat, time.Since(start))
			}
		}
	}
	p := map[string][2]float64{}
	fmt.Printf("%-18s %10s %10s   (%d calls each after %d warm-up, interleaved)\n", "side", "p50-µs", "p99-µs", n, warm)
	for _, s := range sides {
		p[s.name] = [2]float64{pct(s.lat, 0.5), pct(s.lat, 0.99)}
		fmt.Printf("%-18s %10.0f %10.0f\n", s.name, p[s.name][0], p[s.name][1])
	}
	if only != "" {
		return nil
	}
	d, g, h, t := p["direct"], p["gateway-disk"], p["gateway-disk-head"], p["gateway-tmpfs"]
	fmt.Printf("added p50: disk log %.0f µs, disk log with the head in every append %.0f µs, tmpfs log %.0f µs; the disk's share of the default's %.0f%%\n",
		g[0]-d[0], h[0]-d[0], t[0]-d[0], 100*(g[0]-t[0])/(g[0]-d[0]))
	return nil
}

func pct(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)].Microseconds())
}
