#!/usr/bin/env bash
# worker.sh RUNS FAILURES LOCK-COMMAND...: runs LOCK-COMMAND RUNS times in a
# row; each run that exits non-zero adds a line to the file FAILURES.
runs=$1 failures=$2
shift 2
for ((i = 0; i < runs; i++)); do
  "$@" || echo "run $i: exit $?" >>"$failures"
done
