#!/usr/bin/env bash
# make install into a temporary prefix, then use the installed gatehost as an
# operator would, with the files of examples/gateway and nothing of the
# checkout's build/: the install holds exactly PREFIX/bin/gatehost and
# PREFIX/lib/gatehost/plugins/<gate>.wasm; `gatehost version` runs;
# `gatehost plugin inspect` resolves the example's `builtin: exec` to the
# installed module (with $GATEHOST_PLUGIN_DIR unset) and prints its sha256;
# and the command of examples/gateway/mcp.json — paths substituted, npx
# replaced by the same server-filesystem version installed by make mcp-deps —
# answers initialize and tools/list over stdio, and its event log verifies.
# Run by make test; needs make mcp-deps. About 10 s once the build is cached.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bins=$root/testdata/mcp/node_modules/.bin
[ -x "$bins/mcp-server-filesystem" ] || { echo "install-check: $bins/mcp-server-filesystem missing: run make mcp-deps" >&2; exit 2; }
export PATH=$bins:$PATH # server-filesystem runs on the node testdata/mcp installs
unset GATEHOST_PLUGIN_DIR

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install-check: $*" >&2; exit 1; }

make -s install PREFIX="$prefix" >/dev/null
got=$(cd "$prefix" && find . -type f | sort | tr '\n' ' ')
want="./bin/gatehost ./lib/gatehost/plugins/exec.wasm ./lib/gatehost/plugins/merge.wasm ./lib/gatehost/plugins/policy.wasm ./lib/gatehost/plugins/preconditions.wasm ./lib/gatehost/plugins/static-verify.wasm "
[ "$got" = "$want" ] || fail "make install put: $got; want: $want"
gatehost=$prefix/bin/gatehost
echo "install-check: $("$gatehost" version | head -1)"

# The example config, as an operator copies it.
mkdir -p "$tmp/etc" "$tmp/shared"
cp examples/gateway/gatehost.yaml "$tmp/etc/gatehost.yaml"
echo hello >"$tmp/shared/hello.txt"
inspect=$("$gatehost" plugin inspect --config "$tmp/etc/gatehost.yaml" exec) || fail "plugin inspect: $inspect"
module=$prefix/lib/gatehost/plugins/exec.wasm
sum=$(sha256sum "$module" | cut -d' ' -f1)
grep -qx "builtin  exec" <<<"$inspect" || fail "plugin inspect does not say builtin exec: $inspect"
grep -qx "module   $module" <<<"$inspect" || fail "plugin inspect does not resolve to $module: $inspect"
grep -qx "sha256   $sum" <<<"$inspect" || fail "plugin inspect does not print the module's sha256 $sum: $inspect"

# The command of examples/gateway/mcp.json, its paths substituted.
version=$(jq -r '.dependencies["@modelcontextprotocol/server-filesystem"]' testdata/mcp/package.json)
[ "$(jq -r '.mcpServers.filesystem.command' examples/gateway/mcp.json)" = gatehost ] || fail "mcp.json: command is not gatehost"
argv=("$gatehost")
while IFS= read -r a; do
  case $a in
  /etc/gatehost/gatehost.yaml) argv+=("$tmp/etc/gatehost.yaml") ;;
  /home/me/shared) argv+=("$tmp/shared") ;;
  npx | -y) ;;
  @modelcontextprotocol/server-filesystem@*)
    [ "$a" = "@modelcontextprotocol/server-filesystem@$version" ] || fail "mcp.json names $a; testdata/mcp has $version"
    argv+=("$bins/mcp-server-filesystem")
    ;;
  *) argv+=("$a") ;;
  esac
done < <(jq -r '.mcpServers.filesystem.args[]' examples/gateway/mcp.json)

# initialize, notifications/initialized, tools/list; stdin stays open until
# the answer to tools/list (or 30 s).
coproc GW { timeout 30 "${argv[@]}" 2>"$tmp/stderr"; }
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-check","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&"${GW[1]}"
list=""
while IFS= read -r -t 30 line <&"${GW[0]}"; do
  if [ "$(jq -r '.id // empty' <<<"$line" 2>/dev/null)" = 2 ]; then
    list=$line
    break
  fi
done
exec {GW[1]}>&-
wait "$GW_PID" || true
[ -n "$list" ] || fail "no answer to tools/list; gatehost mcp said: $(cat "$tmp/stderr")"
n=$(jq '.result.tools | length' <<<"$list")
jq -e '.result.tools | map(.name) | index("read_text_file") != null' <<<"$list" >/dev/null ||
  fail "tools/list does not list read_text_file: $list"
"$gatehost" log verify --config "$tmp/etc/gatehost.yaml" >/dev/null || fail "log verify failed"
echo "install-check: ok: $prefix holds gatehost and 4 gates; builtin exec is $module (sha256 $sum); gatehost mcp lists $n tools of server-filesystem $version"
