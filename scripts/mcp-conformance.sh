#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned
# in testdata/mcp), each server directly and through `gatehost mcp` (Streamable
# HTTP in front of the same server over stdio), for two revisions:
#   2025-11-25  suite 0.1.16 against @modelcontextprotocol/server-everything,
#               config testdata/mcp/conformance.yaml;
#   2026-07-28  suite 0.2.0-alpha.12 (`--requirements 2026-07-28`) against the
#               Go SDK's conformance server (server-everything does not serve
#               that revision), config testdata/mcp/conformance-2026.yaml, the
#               upstream spoken to at 2026-07-28.
# Prints each summary and fails when a scenario that passes directly does not
# pass through the gateway. Needs `make build mcp-deps` and Go (it builds the
# Go SDK's server into build/). Results: var/mcp-conformance/.
# REVISIONS="2026-07-28" runs one revision only.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mods=$root/testdata/mcp/node_modules
bins=$mods/.bin
out=$root/var/mcp-conformance
rm -rf "$out" && mkdir -p "$out"
# The suite needs node 22, which testdata/mcp installs next to it. Both
# releases name their command `conformance`: each is run by its path.
export PATH=$bins:$PATH
suite_2025=$mods/@modelcontextprotocol/conformance/dist/index.js
suite_2026=$mods/conformance-2026/dist/index.js
revisions=${REVISIONS:-2025-11-25 2026-07-28}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_port() { # port
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.2
  done
  echo "mcp-conformance: nothing listens on port $1" >&2
  return 1
}

run() { # dir name url suite [args…]
  local dir=$1 name=$2 url=$3 suite=$4
  shift 4
  echo "\$ conformance server --url $url $*"
  node "$suite" server --url "$url" "$@" -o "$dir/$name" >"$dir/$name.log" 2>&1 || true
  sed -n '/=== SUMMARY ===/,$p' "$dir/$name.log" | tee "$dir/$name.summary"
  echo
}

# Every scenario that passes directly must pass through the gateway.
passed() { grep '^✓' "$1" | sed 's/^✓ \([^:]*\):.*/\1/' | sort; }
compare() { # dir revision
  local missing
  missing=$(comm -23 <(passed "$1/direct.summary") <(passed "$1/gateway.summary"))
  if [ -n "$missing" ]; then
    echo "mcp-conformance $2: pass directly but not through gatehost mcp:" >&2
    echo "$missing" >&2
    return 1
  fi
  echo "mcp-conformance $2: $(passed "$1/direct.summary" | wc -l) scenarios pass directly, $(passed "$1/gateway.summary" | wc -l) through gatehost mcp; every one that passes directly passes through"
}

failed=0
for rev in $revisions; do
  dir=$out/$rev
  mkdir -p "$dir"
  case $rev in
  2025-11-25)
    direct_port=${DIRECT_PORT:-3911}
    gateway_port=${GATEWAY_PORT:-3912}
    PORT=$direct_port "$bins/mcp-server-everything" streamableHttp >"$dir/server.log" 2>&1 &
    pids+=($!)
    build/gatehost mcp --config testdata/mcp/conformance.yaml --listen "127.0.0.1:$gateway_port" --log-level warn \
      >"$dir/gatehost.log" 2>&1 &
    pids+=($!)
    suite=$suite_2025
    args=()
    ;;
  2026-07-28)
    direct_port=${DIRECT_PORT_2026:-3923}
    gateway_port=${GATEWAY_PORT_2026:-3924}
    go build -o build/mcp-conformance-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server
    build/mcp-conformance-server -http "127.0.0.1:$direct_port" >"$dir/server.log" 2>&1 &
    pids+=($!)
    build/gatehost mcp --config testdata/mcp/conformance-2026.yaml --listen "127.0.0.1:$gateway_port" --log-level warn \
      >"$dir/gatehost.log" 2>&1 &
    pids+=($!)
    suite=$suite_2026
    args=(--requirements 2026-07-28)
    ;;
  *)
    echo "mcp-conformance: no revision $rev (2025-11-25, 2026-07-28)" >&2
    exit 2
    ;;
  esac
  wait_port "$direct_port"
  wait_port "$gateway_port"
  run "$dir" direct "http://127.0.0.1:$direct_port/mcp" "$suite" "${args[@]}"
  run "$dir" gateway "http://127.0.0.1:$gateway_port/mcp" "$suite" "${args[@]}"
  compare "$dir" "$rev" || failed=1
  cleanup
  pids=()
done
exit $failed
