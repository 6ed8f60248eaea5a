#!/usr/bin/env bash
# Fails when the repository tracks a build output: a native executable or a
# WebAssembly module outside testdata/, or any file over 1 MiB outside
# testdata/ (real data sets live there, each with its SOURCE.md).
# Also fails when a tracked file outside testdata/ cites the design or
# reference notes the repository does not contain (by section or file name)
# or a numbered seed document: the facts belong in docs/GATES.md,
# docs/RATIONALE.md or abi/SPEC.md, and citations point there.
set -euo pipefail
cd "$(dirname "$0")/.."
max=$((1 << 20))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the work tree, not yet committed
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
  7f454c46 | cafebabe | feedface | feedfacf | cefaedfe | cffaedfe | 4d5a*)
    echo "check-tree: $f is a native executable: build outputs are not tracked" >&2
    bad=1
    continue
    ;;
  esac
  case "$f" in testdata/*) continue ;; esac
  if [ "$magic" = 0061736d ]; then
    echo "check-tree: $f is a WebAssembly module outside testdata/: build outputs are not tracked" >&2
    bad=1
  elif [ "$(stat -c %s "$f")" -gt "$max" ]; then
    echo "check-tree: $f is over 1 MiB outside testdata/" >&2
    bad=1
  fi
done < <(git ls-files -z)

# Dangling citations. The patterns are spelled so that this file does not
# match itself; a citation wrapped after the note's name is caught by the
# last alternative (the capitalised name alone at the end of a line).
cites='(REFERENCE|DESIGN)[[:space:]]*§|(REFERENCE|DESIGN)\.md|[Ss]eed[[:space:]]+[0-9]{3}([^0-9]|$)|(^|[^A-Za-z_])(REFERENCE|DESIGN)[[:space:]]*$'
found=$(git grep -n -I -E "$cites" -- . ':(exclude)testdata/') && rc=0 || rc=$?
case $rc in
0)
  while IFS= read -r line; do
    echo "check-tree: $line: cites a document outside the repository; point at docs/GATES.md, docs/RATIONALE.md or abi/SPEC.md" >&2
  done <<<"$found"
  bad=1
  ;;
1) ;; # no match
*)
  echo "check-tree: git grep failed (exit $rc); citations not checked" >&2
  bad=1
  ;;
esac
exit $bad
