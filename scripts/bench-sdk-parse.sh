#!/usr/bin/env bash
# Measures what the MCP Go SDK's JSON decoding costs the gateway.
#
# The SDK's internal/json.Unmarshal reads its bytes through a
# segmentio/encoding Decoder, which allocates and clears a 32 KB buffer
# for every call: a few times per message, in the gateway, its upstream
# connections and any Go SDK client or server. This script builds
# BenchmarkGatewayThroughput twice, against the SDK as released (A) and
# against a temporary copy whose Unmarshal parses the bytes it is given
# (segmentio/encoding's Parse, same flags) instead (B), and runs the two
# in turn, ROUNDS times. Nothing in the module changes: the copy lives in
# a temporary directory, used through -modfile.
#
#   scripts/bench-sdk-parse.sh                       # 3 rounds, 32 clients
#   ROUNDS=5 BENCH='GatewayThroughput/.*/clients=1$' scripts/bench-sdk-parse.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ROUNDS=${ROUNDS:-3}
BENCH=${BENCH:-'GatewayThroughput/revision=(2025-11-25|2026-07-28)/clients=32'}
BENCHTIME=${BENCHTIME:-4000x}

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
sdk=github.com/modelcontextprotocol/go-sdk
ver=$($GO list -m -f '{{.Version}}' "$sdk")
src=$($GO list -m -f '{{.Dir}}' "$sdk")
cp -r "$src" "$tmp/sdk"
chmod -R u+w "$tmp/sdk"
f="$tmp/sdk/internal/json/json.go"
# The one statement changed; fail loudly if the SDK no longer has it.
grep -q 'return NewDecoder(bytes.NewReader(data)).Decode(v)' "$f"
sed -i 's|return NewDecoder(bytes.NewReader(data)).Decode(v)|_, err := json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields); return err|' "$f"
sed -i 's|^\t"bytes"$|\t_ "bytes"|' "$f"
cp go.mod "$tmp/go.mod"
cp go.sum "$tmp/go.sum"
$GO mod edit -modfile "$tmp/go.mod" -replace "$sdk=$tmp/sdk"

echo "SDK $sdk $ver; A: as released, B: Unmarshal parses in place" >&2
$GO test -c -o "$tmp/a.test" ./mcpgateway
$GO test -c -modfile "$tmp/go.mod" -o "$tmp/b.test" ./mcpgateway
cd mcpgateway
for r in $(seq "$ROUNDS"); do
  for v in a b; do
    echo "round $r, ${v^^} (load $(cut -d' ' -f1 /proc/loadavg))"
    "$tmp/$v.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" | grep '^Benchmark'
  done
done
