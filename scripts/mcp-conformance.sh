#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned
# in testdata/mcp) against @modelcontextprotocol/server-everything twice: over
# Streamable HTTP directly, and through `gatehost mcp` (Streamable HTTP in front
# of the same server over stdio, config testdata/mcp/conformance.yaml). Prints
# both summaries and fails when a scenario that passes directly does not pass
# through the gateway. Needs `make build mcp-deps`. Results: var/mcp-conformance/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bins=$root/testdata/mcp/node_modules/.bin
out=$root/var/mcp-conformance
rm -rf "$out" && mkdir -p "$out"
# The suite needs node 22, which testdata/mcp installs next to it.
export PATH=$bins:$PATH
direct_port=${DIRECT_PORT:-3911}
gateway_port=${GATEWAY_PORT:-3912}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

PORT=$direct_port "$bins/mcp-server-everything" streamableHttp >"$out/everything.log" 2>&1 &
pids+=($!)
build/gatehost mcp --config testdata/mcp/conformance.yaml --listen "127.0.0.1:$gateway_port" --log-level warn \
  -- "$bins/mcp-server-everything" >"$out/gatehost.log" 2>&1 &
pids+=($!)

wait_port() { # port
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.2
  done
  echo "mcp-conformance: nothing listens on port $1" >&2
  return 1
}
wait_port "$direct_port"
wait_port "$gateway_port"

run() { # name url
  echo "\$ conformance server --url $2"
  conformance server --url "$2" -o "$out/$1" >"$out/$1.log" 2>&1 || true
  sed -n '/=== SUMMARY ===/,$p' "$out/$1.log" | tee "$out/$1.summary"
  echo
}
run direct "http://127.0.0.1:$direct_port/mcp"
run gateway "http://127.0.0.1:$gateway_port/mcp"

# Every scenario that passes directly must pass through the gateway.
passed() { grep '^✓' "$1" | sed 's/^✓ \([^:]*\):.*/\1/' | sort; }
missing=$(comm -23 <(passed "$out/direct.summary") <(passed "$out/gateway.summary"))
if [ -n "$missing" ]; then
  echo "mcp-conformance: pass directly but not through gatehost mcp:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "mcp-conformance: every scenario that passes directly passes through gatehost mcp"
