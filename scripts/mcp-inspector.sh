#!/usr/bin/env bash
# `gatehost mcp` driven end to end by a client gatehost did not write: the MCP
# Inspector CLI (@modelcontextprotocol/inspector --cli, pinned in testdata/mcp).
# Over stdio, in front of @modelcontextprotocol/server-filesystem on a
# temporary directory, with the demo config (./gatehost.yaml, pipeline
# mcp-fs): tools/list (every definition the server's own), a read
# (accepted), a write under public/ (accepted), a write outside public/
# (denied: precondition_failed) and an edit without a person's approval
# (denied: confirmation_required, since the inspector has no elicitation). Each call's result, the disk and the event log's decision are
# checked. Non-tool methods pass through: resources and prompts of
# server-everything through the gateway equal, exactly, the same CLI asking
# it directly. Then the same over Streamable HTTP (gatehost mcp --listen), and
# `gatehost log verify`. Needs `make build mcp-deps`; builds nothing. Exits 1
# on any mismatch, after running every step.
#
# The inspector's launcher parses its own options (among them --config) up to
# the first "--" and drops that "--"; so gatehost runs from the repository
# root and reads ./gatehost.yaml, and receives the server command as plain
# arguments after its flags.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/build/gatehost
bins=$root/testdata/mcp/node_modules/.bin
# The inspector wants node >= 22.7.5: testdata/mcp installs node 22 next to it.
export PATH=$bins:$PATH
events=var/events.jsonl # event_log.path of ./gatehost.yaml

for f in "$bin" "$bins/mcp-inspector" "$bins/mcp-server-filesystem" "$bins/mcp-server-everything"; do
  [ -x "$f" ] || { echo "mcp-inspector: $f missing: run make build mcp-deps" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "mcp-inspector: jq is required" >&2; exit 2; }

dir=$(mktemp -d)
out=$dir/out # inspector output, outside the served tree
gwpid=
cleanup() {
  [ -n "$gwpid" ] && kill "$gwpid" 2>/dev/null && wait "$gwpid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

srv=$dir/srv
mkdir -p "$out" "$srv/public" "$srv/private"
echo "served by server-filesystem, behind gatehost" >"$srv/README.txt"
printf 'draft\n' >"$srv/public/notes.txt"

failed=0
ok() { echo "  ok: $*"; }
bad() {
  echo "  FAIL: $*"
  failed=1
}

# inspect NAME TARGET... -- runs the inspector CLI; stdout to $out/NAME.json,
# stderr to $out/NAME.err; returns its exit code.
inspect() {
  local name=$1
  shift
  mcp-inspector --cli "$@" >"$out/$name.json" 2>"$out/$name.err"
}
# A target: gatehost mcp over stdio in front of the filesystem server.
gw_fs=("$bin" mcp --upstream-name fs -- "$bins/mcp-server-filesystem" "$srv")

# want_result NAME RC -- the call returned a result (exit 0, JSON on stdout).
want_result() {
  if [ "$2" -ne 0 ] || ! jq -e . "$out/$1.json" >/dev/null 2>&1; then
    bad "no result (inspector exit $2): $(grep -v -e '^$' -e 'deprecated' -e 'Upgrade:' -e 'security fixes' "$out/$1.err" | head -3 | tr '\n' ' ')"
    return 1
  fi
}

# decisions_since LINES -- the decision records appended to the event log
# after its first LINES lines, as a JSON array.
decisions_since() { tail -n "+$(($1 + 1))" "$events" | jq -s '[.[] | select(.kind == "decision")]'; }
log_lines() { if [ -f "$events" ]; then wc -l <"$events"; else echo 0; fi; }

# want_logged BEFORE VERDICT [CODE] -- exactly one decision was recorded since
# BEFORE, with VERDICT and (if given) a finding CODE.
want_logged() {
  local d
  d=$(decisions_since "$1")
  if ! jq -e --arg v "$2" 'length == 1 and .[0].verdict == $v' <<<"$d" >/dev/null; then
    bad "event log: want one $2 decision, got $(jq -c '[.[] | .verdict]' <<<"$d")"
    return
  fi
  if [ -n "${3:-}" ] && ! jq -e --arg c "$3" '[.[0].data.findings[].code] | index($c)' <<<"$d" >/dev/null; then
    bad "event log: decision $(jq -r '.[0].run_id' <<<"$d") lacks finding $3"
    return
  fi
  ok "event log: decision $(jq -r '.[0].run_id' <<<"$d") $2${3:+ ($3)}"
}

# want_accepted NAME RC -- an accepted, forwarded call: not an error, with
# the run id in _meta.
want_accepted() {
  want_result "$1" "$2" || return 1
  if jq -e '.isError != true and (._meta["gatehost/run_id"] | type == "string")' "$out/$1.json" >/dev/null; then
    ok "accepted, run $(jq -r '._meta["gatehost/run_id"]' "$out/$1.json")"
  else
    bad "want an accepted result with _meta[\"gatehost/run_id\"], got $(jq -c . "$out/$1.json")"
    return 1
  fi
}

# want_denied NAME RC CODE -- a denied call: isError true, the finding code in
# the text, the Decision (rejected) in _meta["gatehost/decision"] (and as
# structuredContent only for a tool without an output schema: the
# filesystem server's tools declare one).
want_denied() {
  want_result "$1" "$2" || return
  if jq -e --arg c "$3" '.isError == true
      and ([.content[] | select(.type == "text") | .text] | join("\n") | contains($c))
      and ._meta["gatehost/decision"].verdict == "rejected"
      and ([._meta["gatehost/decision"].findings[].code] | index($c) != null)
      and .structuredContent == null' "$out/$1.json" >/dev/null; then
    ok "denied: isError, $3 in the text, verdict rejected"
  else
    bad "want isError with $3 in the text, got $(jq -c . "$out/$1.json")"
  fi
}

want_file() { # path content
  if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then ok "disk: ${1#"$srv"/} holds \"$2\""; else bad "disk: ${1#"$srv"/} does not hold \"$2\""; fi
}
want_absent() { # path
  if [ -e "$1" ]; then bad "disk: ${1#"$srv"/} exists"; else ok "disk: ${1#"$srv"/} not written"; fi
}

# calls TRANSPORT TARGET... -- the gated calls against one gateway target.
calls() {
  local t=$1 n rc
  shift
  echo "[$t] tools/list"
  inspect "$t-list" "$@" --method tools/list
  rc=$?
  if want_result "$t-list" $rc; then
    # Every tool as the server lists it, field for field (the gateway
    # passes definitions on as sent, and the baseline pins them so).
    if diff <(jq -S '.tools | sort_by(.name)' "$out/direct-list.json") <(jq -S '.tools | sort_by(.name)' "$out/$t-list.json") >"$out/$t-list.diff"; then
      ok "$(jq '.tools | length' "$out/$t-list.json") tools, the server's own definitions"
    else
      bad "tools differ from the server's: $(head -5 "$out/$t-list.diff" | tr '\n' ' ')"
    fi
  fi

  echo "[$t] tools/call read_text_file README.txt (accepted)"
  n=$(log_lines)
  inspect "$t-read" "$@" --method tools/call --tool-name read_text_file --tool-arg "path=$srv/README.txt"
  rc=$?
  if want_accepted "$t-read" $rc; then
    if [ "$(jq -r '.content[0].text' "$out/$t-read.json")" = "$(cat "$srv/README.txt")" ]; then
      ok "the file's content came back"
    else
      bad "content $(jq -c .content "$out/$t-read.json"), want the file's"
    fi
  fi
  want_logged "$n" accepted

  echo "[$t] tools/call write_file public/$t.txt (accepted: under public/)"
  n=$(log_lines)
  inspect "$t-write-public" "$@" --method tools/call --tool-name write_file \
    --tool-arg "path=$srv/public/$t.txt" "content=written over $t"
  want_accepted "$t-write-public" $?
  want_file "$srv/public/$t.txt" "written over $t"
  want_logged "$n" accepted

  echo "[$t] tools/call write_file private/$t.txt (denied: outside public/)"
  n=$(log_lines)
  inspect "$t-write-private" "$@" --method tools/call --tool-name write_file \
    --tool-arg "path=$srv/private/$t.txt" "content=exfiltrated"
  want_denied "$t-write-private" $? precondition_failed
  want_absent "$srv/private/$t.txt"
  want_logged "$n" rejected precondition_failed
}

echo "\$ mcp-inspector --cli mcp-server-filesystem DIR --method tools/list   (the server directly)"
inspect direct-list "$bins/mcp-server-filesystem" "$srv" --method tools/list
want_result direct-list $? && ok "$(jq '.tools | length' "$out/direct-list.json") tools"
echo

echo "\$ mcp-inspector --cli gatehost mcp --upstream-name fs -- mcp-server-filesystem DIR   (stdio)"
calls stdio "${gw_fs[@]}"

echo "[stdio] tools/call edit_file public/notes.txt without approval (denied: no elicitation)"
n=$(log_lines)
inspect stdio-edit "${gw_fs[@]}" --method tools/call --tool-name edit_file \
  --tool-arg "path=$srv/public/notes.txt" 'edits=[{"oldText":"draft","newText":"final"}]'
want_denied stdio-edit $? confirmation_required
want_file "$srv/public/notes.txt" draft
want_logged "$n" rejected confirmation_required
echo

# server-filesystem serves no resources or prompts; server-everything does.
# The demo's mcp-fs pipeline names server-filesystem's tools, and the
# gateway refuses a config whose tool names match nothing the upstream
# lists: the pass-through checks run a config of their own, one exec stage
# that names no tool.
cat >"$out/passthrough.yaml" <<CFG
event_log: {path: $out/passthrough-events.jsonl}
plugins: {exec: {path: $root/build/plugins/exec.wasm}}
pipelines: {pt: {subject: tool_call, stages: [{plugin: exec, capabilities: [catalog, session]}]}}
mcp: {pipeline: pt}
CFG
# A wrapper, since the inspector takes --config as its own flag.
printf '#!/bin/sh\nexec "%s" mcp --config "%s" --upstream-name everything -- "%s"\n' "$bin" "$out/passthrough.yaml" "$bins/mcp-server-everything" >"$out/gw-passthrough"
chmod +x "$out/gw-passthrough"
echo "\$ mcp-inspector --cli gatehost mcp --config passthrough.yaml --upstream-name everything -- mcp-server-everything   (pass-through)"
for m in resources/list resources/templates/list prompts/list; do
  echo "[stdio] $m through gatehost = $m asked directly"
  f=${m//\//-}
  inspect "direct-$f" "$bins/mcp-server-everything" --method "$m"
  want_result "direct-$f" $? || continue
  inspect "gw-$f" "$out/gw-passthrough" --method "$m"
  want_result "gw-$f" $? || continue
  # The gateway passes the upstream's answer on as sent: nothing added
  # (no cache hints the server did not send), nothing dropped.
  if diff <(jq -S . "$out/direct-$f.json") <(jq -S . "$out/gw-$f.json") >"$out/$f.diff"; then
    ok "equal ($(jq -c '[.[] | arrays | length] | add' "$out/gw-$f.json") items)"
  else
    bad "differs from the server's own answer: $(head -5 "$out/$f.diff" | tr '\n' ' ')"
  fi
  extra=$(jq -r --slurpfile d "$out/direct-$f.json" 'keys - ($d[0] | keys) | join(", ")' "$out/gw-$f.json")
  [ -n "$extra" ] && echo "  note: the gateway's answer adds $extra"
done
echo

# Streamable HTTP: the kernel picks the port (127.0.0.1:0) and gatehost logs
# its URL once it listens, so there is no port to race for.
echo "\$ gatehost mcp --listen 127.0.0.1:0 --upstream-name fs -- mcp-server-filesystem DIR &"
"$bin" mcp --listen 127.0.0.1:0 --upstream-name fs -- "$bins/mcp-server-filesystem" "$srv" 2>"$out/gatehost-http.log" &
gwpid=$!
url=
for _ in $(seq 1 150); do
  url=$(grep -o 'url=http://127\.0\.0\.1:[0-9]*/mcp' "$out/gatehost-http.log" | head -1)
  [ -n "$url" ] && break
  kill -0 "$gwpid" 2>/dev/null || break
  sleep 0.2
done
url=${url#url=}
if [ -z "$url" ]; then
  bad "gatehost mcp --listen did not come up: $(tail -3 "$out/gatehost-http.log")"
else
  echo "  listening on $url"
  # Inspector 1.0.3's CLI takes the URL as its target (--server-url is the web UI's).
  calls http "$url" --transport http
  kill "$gwpid" && wait "$gwpid"
  rc=$?
  gwpid=
  [ $rc -eq 0 ] && ok "gatehost mcp --listen stopped cleanly on SIGTERM" || bad "gatehost mcp --listen exited $rc on SIGTERM"
fi
echo

echo "\$ gatehost log verify"
"$bin" log verify || failed=1
[ $failed -eq 0 ] && echo "mcp-inspector: every check held" || echo "mcp-inspector: some checks failed" >&2
exit $failed
