#!/usr/bin/env bash
# The main job on real input: the static-verify gate, sandboxed in wasm,
# checks agent proposals against the real GitHub MCP server catalog (117
# tools), the exec gate authorizes single tool calls against an agent
# session's grants, and the preconditions gate checks retail and airline writes
# against the tau2 databases (dry on a proposal, execute on one tool call); each
# decision is appended to the hash-chained event log, and the log is verified at
# the end. Each check's exit code is asserted.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/gatehost
failed=0

check() { # want_exit file [flags…]
  local want=$1 file=$2
  shift 2
  echo "\$ gatehost check${*:+ $*} $file"
  "$bin" check "$@" "$file"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "demo: $file: exit $got, want $want" >&2
    failed=1
  fi
  echo
}

check 0 testdata/proposals/read-then-write.json --pipeline admission
check 1 testdata/proposals/bad-args-and-unknown-tool.json --pipeline admission
check 0 testdata/proposals/openai-repeated-calls.json --pipeline admission
check 0 testdata/proposals/anthropic-tool-use.json --pipeline admission
check 1 testdata/proposals/openai-bad-arguments.json --pipeline admission

# The exec gate authorizes single tool calls against the session's grants.
session="demo-$(date +%s)-$$"
echo "\$ gatehost session activate --session $session create_pull_request merge_pull_request"
"$bin" session activate --session "$session" create_pull_request merge_pull_request || failed=1
echo
check 0 testdata/exec/calls/openai-tool-call.json --pipeline exec --session "$session"
check 1 testdata/exec/calls/mcp-request.json --pipeline exec --session "$session"
check 0 testdata/exec/calls/mcp-request.json --pipeline exec --session "$session" --confirm approved-by-operator
check 1 testdata/exec/calls/mcp-params.json --pipeline exec --session "$session-other"

# Domain write guards: the tau2 airline policy's clock is 2024-05-15 15:00 EST.
ex=testdata/domains/examples
check 1 $ex/retail-cancel-processed.json --pipeline retail-dry
check 0 $ex/retail-return-ok.json --pipeline retail-exec
check 1 $ex/retail-return-wrong-refund.json --pipeline retail-exec
check 1 $ex/airline-basic-economy-change.json --pipeline airline-exec --now 2024-05-15T15:00:00-05:00
check 1 $ex/airline-cancel-plan.json --pipeline airline-dry --now 2024-05-15T15:00:00-05:00

echo "\$ gatehost domain validate testdata/domains/*/domain.yaml"
"$bin" domain validate testdata/domains/*/domain.yaml || failed=1
echo

# gatehost mcp in front of server-filesystem: a scripted agent (the MCP Go
# SDK's client) reads, writes where the Cedar policies allow and where they
# do not, and edits with and without a person's approval; the disk is
# checked after each call. The policies are written for the served tree
# /srv/share (Cedar has no variables): copies rooted at the directory served
# here go to var/mcp-demo/, where examples/mcp-agent/gatehost.yaml reads them.
mcpdir=$(mktemp -d)
mkdir -p "$mcpdir/public" "$mcpdir/private" var/mcp-demo
echo "served by server-filesystem, behind gatehost" >"$mcpdir/README.txt"
# The person who approves edits signs in to the approval page with this
# approver token (a fresh one each run; only the owner may read it).
(umask 077 && echo "demo-approver-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') name=alice" >var/mcp-demo/approvers) || failed=1
for p in examples/policies/filesystem.cedar examples/mcp-agent/writes-outside-public.cedar; do
  sed "s#/srv/share/#$mcpdir/#g" "$p" >"var/mcp-demo/$(basename "$p")" || failed=1
done
echo "\$ gatehost policy validate --catalog examples/policies/server-filesystem.tools.json --server fs var/mcp-demo/*.cedar"
"$bin" policy validate --catalog examples/policies/server-filesystem.tools.json --server fs var/mcp-demo/*.cedar || failed=1
echo "\$ gatehost mcp --config examples/mcp-agent/gatehost.yaml -- mcp-server-filesystem $mcpdir   (driven by examples/mcp-agent)"
GATEHOST_PLUGIN_DIR="$PWD/build/plugins" go run ./examples/mcp-agent --gatehost "$bin" --config examples/mcp-agent/gatehost.yaml \
  --approver-token-file var/mcp-demo/approvers \
  --server testdata/mcp/node_modules/.bin/mcp-server-filesystem --dir "$mcpdir" || failed=1
rm -rf "$mcpdir"
echo

echo "\$ gatehost log verify"
"$bin" log verify || failed=1
exit $failed
