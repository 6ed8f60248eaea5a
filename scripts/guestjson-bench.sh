#!/usr/bin/env bash
# Measures the guests' JSON candidates (bench/guestjson) where the guests
# run: compiled to wasip1 and run on stock wazero with the deadline check on
# (-timeout sets WithCloseOnContextDone, as the default build's host does).
# Arguments go to the test binary, e.g.
#   scripts/guestjson-bench.sh -test.bench . -test.benchtime 0.5s -test.count 5
# With NATIVE=1 the same benchmarks run natively, for the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
mkdir -p build
if [ "${NATIVE:-0}" = 1 ]; then
  cd bench/guestjson
  exec $GO test -run '^$' "${@/#-test./-}" .
fi
$GO build -o build/wazero github.com/tetratelabs/wazero/cmd/wazero
(cd bench/guestjson && GOOS=wasip1 GOARCH=wasm $GO test -c -o ../../build/guestjson.test.wasm .)
exec build/wazero run -timeout 1h build/guestjson.test.wasm -test.run '^$' "$@"
