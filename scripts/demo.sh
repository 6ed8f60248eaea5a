#!/usr/bin/env bash
# The main job on real input: the static-verify gate, sandboxed in wasm,
# checks agent proposals against the real GitHub MCP server catalog (117
# tools), each decision is appended to the hash-chained event log, and the
# log is verified at the end. Each check's exit code is asserted.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/gatehost
failed=0

check() { # want_exit file [flags…]
  local want=$1 file=$2
  shift 2
  echo "\$ gatehost check --pipeline admission $* $file"
  "$bin" check --pipeline admission "$@" "$file"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "demo: $file: exit $got, want $want" >&2
    failed=1
  fi
  echo
}

check 0 testdata/proposals/read-then-write.json
check 1 testdata/proposals/bad-args-and-unknown-tool.json
check 0 testdata/proposals/openai-repeated-calls.json --format openai
check 0 testdata/proposals/anthropic-tool-use.json
check 1 testdata/proposals/openai-bad-arguments.json

echo "\$ gatehost log verify"
"$bin" log verify || failed=1
exit $failed
