package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host"
	"github.com/gatehost/gatehost/host/subject"
	"github.com/gatehost/gatehost/internal/engine/wasmrt"
)

// benchReport is the result of `gatehost bench`. Latencies are of whole
// decisions (Host.Check), in microseconds; allocations are the host
// process's Go allocations per decision (guest memory is not Go heap).
type benchReport struct {
	Pipeline    string  `json:"pipeline"`
	Engine      string  `json:"engine"`
	GOMAXPROCS  int     `json:"gomaxprocs"`
	Decisions   int     `json:"decisions"`
	Concurrency int     `json:"concurrency"`
	Warmup      int     `json:"warmup"`
	Recorded    bool    `json:"recorded"`
	StartupMS   float64 `json:"startup_ms"`
	WallSeconds float64 `json:"wall_seconds"`
	// Throughput is decisions per second over the measured run.
	Throughput float64 `json:"throughput_per_s"`
	P50Micros  int64   `json:"p50_us"`
	P90Micros  int64   `json:"p90_us"`
	P99Micros  int64   `json:"p99_us"`
	MaxMicros  int64   `json:"max_us"`
	// AllocsPerDecision and BytesPerDecision are runtime.MemStats deltas
	// over the measured run divided by Decisions.
	AllocsPerDecision float64 `json:"allocs_per_decision"`
	BytesPerDecision  float64 `json:"bytes_per_decision"`
	// Verdicts counts decisions by verdict; Errors counts Check errors.
	Verdicts map[abi.Verdict]int `json:"verdicts"`
	Errors   int                 `json:"errors"`
	// RSS samples the process's resident set (KiB, Linux /proc) after
	// warm-up and then after every tenth of the run: a leak shows as a
	// climb, a steady state as a flat line.
	RSSKiB []int64 `json:"rss_kib,omitempty"`
	// RSSDrift is (last − second) / second of RSSKiB: the change after
	// the first tenth, by which the pools and the host's heap have grown
	// to their working size.
	RSSDrift float64 `json:"rss_drift"`
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", "Usage: gatehost bench [flags] --pipeline P SUBJECT|-\n", stderr,
		flagConfig|flagPipeline|flagOutput|flagFormat|flagSession|flagLogLevel)
	pipelineName, output, format, session := &fs.pipeline, &fs.output, &fs.format, &fs.session
	n := fs.IntP("n", "n", 1000, "decisions to time")
	concurrency := fs.Int("concurrency", runtime.GOMAXPROCS(0), "decisions in flight at once")
	warmup := fs.Int("warmup", 20, "untimed decisions first (fill the pools, warm the caches)")
	record := fs.Bool("record", false, "append every decision to the configured event log (default: no log, so the figure is the gates' cost)")
	if code, done := fs.parse(args, exactly(1)); done {
		return code
	}
	switch {
	case *n < 1:
		return fail(stderr, fmt.Errorf("%w: -n %d: want at least 1", errUsage, *n))
	case *concurrency < 1:
		return fail(stderr, fmt.Errorf("%w: --concurrency %d: want at least 1", errUsage, *concurrency))
	case *warmup < 0:
		return fail(stderr, fmt.Errorf("%w: --warmup %d: want 0 or more", errUsage, *warmup))
	}
	logger, cfg, err := fs.setup()
	if err != nil {
		return fail(stderr, err)
	}
	data, err := readSubject(ctx, fs.Arg(0), os.Stdin, cmp.Or(cfg.Host.MaxSubjectBytes, host.MaxSubjectBytes))
	if err != nil {
		return fail(stderr, err)
	}
	cfg.Host.Logger = logger
	*pipelineName = pipelineFlag(*pipelineName)
	onlyPipeline(&cfg.Host, *pipelineName)
	if !*record {
		cfg.Host.EventLogPath = ""
	}
	// Enough capacity that the bench measures the gates, not the queue;
	// full pools, so that no timed decision makes an instance.
	cfg.Host.MaxConcurrentRuns = max(cfg.Host.MaxConcurrentRuns, *concurrency)
	cfg.Host.WarmPools = true
	defer cfg.Close()
	start := time.Now()
	h, err := host.New(ctx, cfg.Host)
	if err != nil {
		return fail(stderr, cfg.HostError(err))
	}
	defer h.Close(context.WithoutCancel(ctx))
	// What every front end checks before deciding: the config's tool names
	// and policy stages against the catalog.
	if err := cfg.CheckToolReferences(h); err != nil {
		return fail(stderr, err)
	}
	startup := time.Since(start)
	info, err := pickPipeline(h.Pipelines(), *pipelineName)
	if err != nil {
		return fail(stderr, fmt.Errorf("config %s: %w", cfg.File, err))
	}
	// Refused once here rather than as n errors: every run reads the same
	// input, as check would.
	if _, err := h.NativeSubject(info.Name, data, subject.Format(*format)); err != nil {
		return fail(stderr, checkError(fs.Arg(0), err))
	}
	opts := host.RunOptions{Format: subject.Format(*format), Session: *session}
	rep := &benchReport{Pipeline: info.Name, Engine: wasmrt.Name, GOMAXPROCS: runtime.GOMAXPROCS(0),
		Decisions: *n, Concurrency: *concurrency, Warmup: *warmup, Recorded: *record,
		StartupMS: float64(startup.Microseconds()) / 1000, Verdicts: map[abi.Verdict]int{}}
	runBench(ctx, *warmup, *concurrency, nil, func(int) { _, _ = h.Check(ctx, info.Name, data, opts) })

	// Each worker tallies its own decisions, merged after the run: the
	// timed loop takes no lock but every tenth's RSS sample.
	tallies := make([]benchTally, *concurrency)
	lat := make([]time.Duration, *n)
	var mu sync.Mutex
	var before, after runtime.MemStats
	runtime.GC()
	rep.RSSKiB = appendRSS(rep.RSSKiB)
	runtime.ReadMemStats(&before)
	step := max(*n/10, 1)
	var done atomic.Int64
	t0 := time.Now()
	runBench(ctx, *n, *concurrency, lat, func(w int) {
		d, err := h.Check(ctx, info.Name, data, opts)
		tallies[w].add(d, err)
		if k := done.Add(1); k%int64(step) == 0 {
			mu.Lock()
			rep.RSSKiB = appendRSS(rep.RSSKiB)
			mu.Unlock()
		}
	})
	wall := time.Since(t0)
	runtime.ReadMemStats(&after)
	for _, t := range tallies {
		for i, v := range benchVerdicts {
			if t.verdicts[i] > 0 {
				rep.Verdicts[v] += t.verdicts[i]
			}
		}
		rep.Errors += t.errors
	}
	if err := ctx.Err(); err != nil {
		return fail(stderr, err)
	}
	rep.WallSeconds = wall.Seconds()
	rep.Throughput = float64(*n) / wall.Seconds()
	slices.Sort(lat)
	pct := func(q float64) int64 { return lat[int(q*float64(len(lat)-1))].Microseconds() }
	rep.P50Micros, rep.P90Micros, rep.P99Micros, rep.MaxMicros = pct(0.50), pct(0.90), pct(0.99), lat[len(lat)-1].Microseconds()
	rep.AllocsPerDecision = float64(after.Mallocs-before.Mallocs) / float64(*n)
	rep.BytesPerDecision = float64(after.TotalAlloc-before.TotalAlloc) / float64(*n)
	if len(rep.RSSKiB) > 2 && rep.RSSKiB[1] > 0 {
		rep.RSSDrift = float64(rep.RSSKiB[len(rep.RSSKiB)-1]-rep.RSSKiB[1]) / float64(rep.RSSKiB[1])
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(stderr, err)
		}
	} else {
		printBench(stdout, rep)
	}
	if rep.Errors > 0 {
		fmt.Fprintf(stderr, "gatehost: %d of %d decisions returned an error\n", rep.Errors, *n)
		return exitInconclusive
	}
	return 0
}

// benchVerdicts are the verdicts a benchTally counts, in its order.
var benchVerdicts = [...]abi.Verdict{abi.Accepted, abi.Rejected, abi.Inconclusive}

// benchTally counts one worker's decisions by verdict, and its errors.
type benchTally struct {
	verdicts [len(benchVerdicts)]int
	errors   int
}

func (t *benchTally) add(d *host.Decision, err error) {
	if d != nil {
		if i := slices.Index(benchVerdicts[:], d.Verdict); i >= 0 {
			t.verdicts[i]++
		}
	}
	if err != nil {
		t.errors++
	}
}

// runBench calls f n times from c goroutines, each passing its worker
// index (0 ≤ w < c). When lat is non-nil, lat[i] receives the duration of
// the i-th call.
func runBench(ctx context.Context, n, c int, lat []time.Duration, f func(w int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(c, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t := time.Now()
				f(w)
				if lat != nil {
					lat[i] = time.Since(t)
				}
			}
		})
	}
	wg.Wait()
}

// appendRSS appends the process's resident set size in KiB (VmRSS), when
// the platform tells it.
func appendRSS(s []int64) []int64 {
	if kib := rssKiB(); kib > 0 {
		return append(s, kib)
	}
	return s
}

func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return v
			}
		}
	}
	return 0
}

func printBench(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "pipeline %s  engine %s  GOMAXPROCS %d  decisions %d  concurrency %d  warmup %d  recorded %v\n",
		r.Pipeline, r.Engine, r.GOMAXPROCS, r.Decisions, r.Concurrency, r.Warmup, r.Recorded)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  startup\t%.1f ms\n", r.StartupMS)
	fmt.Fprintf(tw, "  wall\t%.2f s\n", r.WallSeconds)
	fmt.Fprintf(tw, "  throughput\t%.0f decisions/s\n", r.Throughput)
	fmt.Fprintf(tw, "  latency\tp50 %d µs  p90 %d µs  p99 %d µs  max %d µs\n", r.P50Micros, r.P90Micros, r.P99Micros, r.MaxMicros)
	fmt.Fprintf(tw, "  allocations\t%.0f allocs/decision  %.0f B/decision\n", r.AllocsPerDecision, r.BytesPerDecision)
	verdicts := ""
	for _, v := range benchVerdicts {
		if k := r.Verdicts[v]; k > 0 {
			verdicts += fmt.Sprintf("%s %d  ", v, k)
		}
	}
	fmt.Fprintf(tw, "  verdicts\t%serrors %d\n", verdicts, r.Errors)
	if len(r.RSSKiB) > 0 {
		fmt.Fprintf(tw, "  rss\t%v KiB (drift after the first tenth %+.1f%%)\n", r.RSSKiB, 100*r.RSSDrift)
	}
	tw.Flush()
}
