#!/usr/bin/env bash
# make bench: every figure of docs/PERFORMANCE.md in one run, on both engines
# (default stock wazero; wazy with -tags gatehost_wazy). Raw output and the
# summary go to build/bench/. COUNT (default 5) repeats each go benchmark;
# the summary reports medians. N (default 2000) and NLONG (default 20000)
# are the decisions of the two `gatehost bench` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${COUNT:-5}
N=${N:-2000}
NLONG=${NLONG:-20000}
BENCHBIN=${BENCHBIN:-build/gatehost} # build/gatehost-wazy: the wazy engine
out=build/bench
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.json
{ echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3)"; echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$out/machine.txt"
cat "$out/machine.txt"

gates='StaticVerify10Actions|Exec$|PreconditionsRetailReturn|MergeExtract2000Lines|Admission10Actions'
for engine in wazero wazy; do
  tags=()
  [ "$engine" = wazy ] && tags=(-tags gatehost_wazy)
  echo "== go test benchmarks, $engine (count $COUNT)"
  $GO test "${tags[@]}" ./host -run '^$' -bench "$gates" -benchtime 0.5s -count "$COUNT" -benchmem | tee "$out/host-$engine.txt" | grep -E '^Benchmark'
  $GO test "${tags[@]}" ./host -run '^$' -bench 'RunawayLoop' -benchtime 25x -count "$COUNT" | tee -a "$out/host-$engine.txt" | grep -E '^Benchmark'
  $GO test "${tags[@]}" ./host -run '^$' -bench 'IdleInstanceRSS' -benchtime 1x -count 3 | tee -a "$out/host-$engine.txt" | grep -E '^Benchmark'
done

echo "== one-shot gatehost check (admission pipeline, testdata/proposals/read-then-write.json)"
$GO build -trimpath -o build/gatehost ./cmd/gatehost
$GO build -trimpath -tags gatehost_wazy -o build/gatehost-wazy ./cmd/gatehost
make -s build >/dev/null
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
med() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
  echo "### One-shot \`gatehost check --pipeline admission testdata/proposals/read-then-write.json\` (ms wall, whole process; medians of 5)"
  echo
  echo "| engine | cold compilation cache | warm compilation cache |"
  echo "|---|---|---|"
  for bin in gatehost gatehost-wazy; do
    cold=(); warm=()
    for _ in 1 2 3; do
      dir=$(mktemp -d)
      cold+=("$(GATEHOST_CACHE_DIR=$dir GATEHOST_EVENT_LOG_PATH=$dir/events.jsonl ms build/$bin check --pipeline admission testdata/proposals/read-then-write.json)")
      [ ${#warm[@]} -eq 0 ] && for _ in 1 2 3 4 5; do
        warm+=("$(GATEHOST_CACHE_DIR=$dir GATEHOST_EVENT_LOG_PATH=$dir/events.jsonl ms build/$bin check --pipeline admission testdata/proposals/read-then-write.json)")
      done
      rm -rf "$dir"
    done
    echo "| ${bin#gatehost-} | $(echo "${cold[*]}" | med) ms (runs: ${cold[*]}) | $(echo "${warm[*]}" | med) ms (runs: ${warm[*]}) |"
  done
} | tee "$out/cli.txt"

echo "== gatehost bench --pipeline admission-github ($BENCHBIN)"
"$BENCHBIN" bench --pipeline admission-github -n "$N" --concurrency 1 --output json testdata/static-verify/bench-10-actions.json > "$out/bench-serial.json"
"$BENCHBIN" bench --pipeline admission-github -n "$N" --concurrency 2 --output json testdata/static-verify/bench-10-actions.json > "$out/bench-parallel.json"
"$BENCHBIN" bench --pipeline admission-github -n "$NLONG" --concurrency 2 --output json testdata/static-verify/bench-10-actions.json > "$out/bench-long.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"

$GO run ./internal/cmd/benchsummary "$out" | tee "$out/summary.md"
cat "$out/machine.txt"
