#!/usr/bin/env bash
# Fails when the repository tracks a build output: a native executable or a
# WebAssembly module outside testdata/, or any file over 1 MiB outside
# testdata/ (real data sets live there, each with its SOURCE.md).
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
exit $bad
