// Command benchsummary turns the output of `make bench` (go test -bench
// text, one file per engine, and `gatehost bench --output json` files) into
// the Markdown tables of docs/PERFORMANCE.md: medians over -count runs, and
// the wasm/native ratio of each gate.
//
//	go run ./internal/cmd/benchsummary DIR
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results maps benchmark name (without the -GOMAXPROCS suffix) → unit →
// values over the runs.
type results map[string]map[string][]float64

var procsSuffix = regexp.MustCompile(`-\d+$`)

func parse(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := results{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		if r[name] == nil {
			r[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			r[name][fields[i+1]] = append(r[name][fields[i+1]], v)
		}
	}
	return r, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r results) med(name, unit string) float64 { return median(r[name][unit]) }

func us(ns float64) string {
	switch {
	case ns == 0:
		return "–"
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.0f µs", ns/1e3)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

type gate struct{ title, bench, native, wasm string }

var gates = []gate{
	{"static-verify (10 actions, 2.8 KB, 117-tool catalog)", "StaticVerify10Actions", "native", "wasm"},
	{"exec (one create_pull_request call)", "Exec", "native", "wasm"},
	{"preconditions (one retail return, 2 queries)", "PreconditionsRetailReturn", "native", "wasm"},
	{"merge (2,000-line Go change)", "MergeExtract2000Lines", "native-gate", "wasm-gate"},
	{"admission: static-verify + preconditions (10 actions)", "Admission10Actions", "native", "wasm"},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: benchsummary DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	engines := []string{"wazy", "wazero"}
	res := map[string]results{}
	for _, e := range engines {
		r, err := parse(filepath.Join(dir, "host-"+e+".txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchsummary:", err)
			continue
		}
		res[e] = r
	}
	fmt.Println("### Gate calls: median ns/op per decision through Host.Check (one stage), native = the same gate's Go code through the SDK's JSON path")
	fmt.Println()
	fmt.Println("| gate | native (default build's run) | wazero, no deadline | wazero, runtime check (WithCloseOnContextDone) | wazero, interrupt rewrite (default) | wazy (own check + rewrite) | default / native | runtime check / native | wazy / native |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, g := range gates {
		z, y := res["wazero"], res["wazy"]
		// Each engine's ratio uses the native figure of its own run: the
		// two runs are minutes apart, and the machine's load moves.
		nat := z.med(g.bench+"/"+g.native, "ns/op")
		ynat := y.med(g.bench+"/"+g.native, "ns/op")
		nd := z.med(g.bench+"/"+g.wasm+"-nodeadline", "ns/op")
		rc := z.med(g.bench+"/"+g.wasm+"-runtimecheck", "ns/op")
		dl := z.med(g.bench+"/"+g.wasm, "ns/op")
		wy := y.med(g.bench+"/"+g.wasm, "ns/op")
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", g.title, us(nat), us(nd), us(rc), us(dl), us(wy), ratio(dl, nat), ratio(rc, nat), ratio(wy, ynat))
	}
	fmt.Println()
	fmt.Println("### Admission decision (static-verify + preconditions, 10 actions, 117-tool catalog), go test")
	fmt.Println()
	fmt.Println("| engine | serial p50 | serial p99 | parallel p50 | parallel p99 | parallel decisions/s |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, e := range engines {
		r := res[e]
		fmt.Printf("| %s | %.0f µs | %.0f µs | %.0f µs | %.0f µs | %.0f |\n", e,
			r.med("Admission10Actions/wasm", "p50-µs"), r.med("Admission10Actions/wasm", "p99-µs"),
			r.med("Admission10Actions/wasm-parallel", "p50-µs"), r.med("Admission10Actions/wasm-parallel", "p99-µs"),
			r.med("Admission10Actions/wasm-parallel", "decisions/s"))
	}
	fmt.Println()
	fmt.Println("### Runaway guest and memory")
	fmt.Println()
	fmt.Println("| engine | runaway overshoot past a 20 ms deadline (mean / max) | idle instance RSS | idle instance guest memory |")
	fmt.Println("|---|---|---|---|")
	for _, e := range engines {
		r := res[e]
		fmt.Printf("| %s | %.0f µs / %.0f µs | %.0f KiB | %.0f KiB |\n", e,
			r.med("RunawayLoop", "overshoot-µs"), r.med("RunawayLoop", "max-overshoot-µs"),
			r.med("IdleInstanceRSS", "KiB/instance"), r.med("IdleInstanceRSS", "guest-KiB/instance"))
	}
	for _, f := range []string{"cli.txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
			fmt.Println()
			fmt.Print(string(b))
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "bench-*.json"))
	if len(matches) > 0 {
		fmt.Println()
		fmt.Println("### `gatehost bench --pipeline admission-github testdata/static-verify/bench-10-actions.json`")
		fmt.Println()
		fmt.Println("| run | decisions | concurrency | p50 | p90 | p99 | decisions/s | allocs/decision | RSS after warm-up → after 1/10 → end (drift after 1/10) |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
	}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var rep struct {
			Decisions, Concurrency int
			P50                    int64   `json:"p50_us"`
			P90                    int64   `json:"p90_us"`
			P99                    int64   `json:"p99_us"`
			Throughput             float64 `json:"throughput_per_s"`
			Allocs                 float64 `json:"allocs_per_decision"`
			RSS                    []int64 `json:"rss_kib"`
			Drift                  float64 `json:"rss_drift"`
		}
		if json.Unmarshal(b, &rep) != nil {
			continue
		}
		rss := "–"
		if len(rep.RSS) > 2 {
			rss = fmt.Sprintf("%d → %d → %d KiB (%+.1f%%)", rep.RSS[0], rep.RSS[1], rep.RSS[len(rep.RSS)-1], 100*rep.Drift)
		}
		fmt.Printf("| %s | %d | %d | %d µs | %d µs | %d µs | %.0f | %.0f | %s |\n", strings.TrimSuffix(filepath.Base(m), ".json"),
			rep.Decisions, rep.Concurrency, rep.P50, rep.P90, rep.P99, rep.Throughput, rep.Allocs, rss)
	}
}
