#!/usr/bin/env bash
# Fails when the repository tracks a build output: a native executable or a
# WebAssembly module outside testdata/, or any file over 1 MiB outside
# testdata/ (real data sets live there, each with its SOURCE.md).
# Also fails when a tracked file outside testdata/ cites the design or
# reference notes the repository does not contain (by section or file name)
# or a numbered seed document: the facts belong in docs/GATES.md,
# docs/RATIONALE.md or abi/SPEC.md, and citations point there.
# Also fails when the README's Layout section does not name a package
# directory (go list ./...), or when a relative link of a tracked Markdown
# file outside testdata/ names a file that does not exist or an anchor that
# no heading of its Markdown target has (internal/cmd/doccheck).
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
# The README's Layout names every package directory of the module, and every
# relative link of the tracked Markdown outside testdata/ resolves (to a file,
# and for a #fragment into a Markdown file to one of its headings).
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
doccheck() {
  local out
  if ! out=$("$tmp/doccheck" "$@"); then
    while IFS= read -r line; do
      [ -n "$line" ] && echo "check-tree: $line" >&2
    done <<<"$out"
    bad=1
  fi
}
if ! "$GO" build -o "$tmp/doccheck" ./internal/cmd/doccheck; then
  echo "check-tree: go build ./internal/cmd/doccheck failed; the README's Layout and the Markdown links were not checked" >&2
  exit 1
fi
module=$("$GO" list -m)
if dirs=$("$GO" list ./... | sed -e "s#^$module\$#.#" -e "s#^$module/##"); then
  # shellcheck disable=SC2086 # one package directory per word
  doccheck layout README.md $dirs
else
  echo "check-tree: go list ./... failed; the README's Layout was not checked" >&2
  bad=1
fi
mapfile -d '' mds < <(git ls-files -z -- '*.md' ':(exclude)testdata/')
existing=()
for f in "${mds[@]}"; do
  [ -f "$f" ] && existing+=("$f") # deleted in the work tree, not yet committed
done
[ ${#existing[@]} -eq 0 ] || doccheck links "${existing[@]}"
exit $bad
