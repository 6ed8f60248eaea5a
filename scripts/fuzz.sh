#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME each (default 10s) and prints the
# executions per target. A crash fails the run; Go saves the input under the
# package's testdata/fuzz/<Target>/, where it stays as a regression case.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
targets=(
  "./host FuzzDecodeResponse"
  "./host FuzzValidateSubject"
  "./host/subject FuzzParseProposal"
  "./host/catalog FuzzParse"
  "./host/catalog FuzzCanonicalJSON"
  "./host/catalog FuzzMakeID"
  "./host/eventlog FuzzVerify"
  "./internal/abischema FuzzCheckMemberNames"
  "./sdk FuzzHandle"
  "./plugins/static-verify FuzzEvaluate"
  "./cmd/gatehost FuzzLoadConfig"
)
summary=()
status=0
for t in "${targets[@]}"; do
  set -- $t
  log=$(mktemp)
  echo "== $1 $2 ($FUZZTIME)"
  # Minimizing a new input is bounded too, or one slow input stalls the run.
  if ! $GO test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 2s -parallel 1 >"$log" 2>&1; then
    cat "$log"; status=1
  fi
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  summary+=("$(printf '%-26s %-22s %10s execs' "$1" "$2" "${execs:-?}")")
  rm -f "$log"
done
printf '%s\n' "${summary[@]}"
exit $status
