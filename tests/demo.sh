#!/usr/bin/env bash
# demo.sh RLOCK: shows rlock at work on a throwaway redis-server: two runs of
# one lock taking turns, -n giving up with 75, and `rlock status`.
set -euo pipefail

rlock=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
# shellcheck source=tests/lib/redis.bash
source "$here/lib/redis.bash"

dir=$(mktemp -d)
cleanup() {
  redis_stop "$dir" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() {
  printf '$ %s\n' "$*"
  "$@"
}

step "Starting a throwaway redis-server on loopback"
redis_start "$dir"
export RLOCK_URL
# A server that has just started grants no lock for --restart-grace (30 s by
# default); this one has no holders from before a restart to wait for.
export RLOCK_RESTART_GRACE=0
echo "RLOCK_URL=$RLOCK_URL (pid $(cat "$REDIS_PIDFILE"))"

step "Two runs of the same lock contend and take turns"
# Expanded by the child's shell, not here.
# shellcheck disable=SC2016
job='echo "  [$JOB] start $(date +%T.%N | cut -c1-12), fence $RLOCK_FENCE"; sleep 1; echo "  [$JOB] end   $(date +%T.%N | cut -c1-12)"'
echo "$ rlock -v report -c '...sleep 1...' &   (twice)"
JOB=A "$rlock" -v report -c "$job" &
first=$!
sleep 0.2
JOB=B "$rlock" -v report -c "$job" &
second=$!

sleep 0.4
step "While it is held, -n gives up at once with exit code 75"
set +e
show "$rlock" -n report true
echo "exit code: $?"
set -e

step "rlock status shows the holder"
show "$rlock" status

wait "$first" "$second"
step "Both done; the lock is free again"
set +e
show "$rlock" status report
echo "exit code: $? (1: free)"
set -e

step "Stopping redis-server (pid $(cat "$REDIS_PIDFILE"))"
redis_stop "$dir"
echo "done"
