#!/usr/bin/env bats
#
# Fences that never go back when Redis loses its data, a fence key that does
# not outlive its NAME, scripts whose writes an OOM server refuses before
# anything changed, a supervised lease that the job cannot cut, and a lease
# cut short by the Redis host's clock.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  unset RLOCK_TOKEN RLOCK_NAME RLOCK_SUPERVISED_TOKEN
  # Servers started here are fresh on purpose; no test is about the hold-back.
  export RLOCK_RESTART_GRACE=0
}
teardown() {
  common_teardown
  redis_cli config set maxmemory 0 >/dev/null
  [[ ! -d $BATS_TEST_TMPDIR/other ]] || redis_stop "$BATS_TEST_TMPDIR/other"
}

# fence_of NAME [URL]: the RLOCK_FENCE a run of NAME gets.
fence_of() {
  RLOCK_URL=${2:-$RLOCK_URL} rl "$1" sh -c 'echo "$RLOCK_FENCE"'
}

# other_server: start a second, empty redis-server (as after a restart without
# persistence, or a replica that missed the last write); sets OTHER_URL.
other_server() {
  (
    redis_start "$BATS_TEST_TMPDIR/other" >&2 || exit
    echo "$RLOCK_URL"
  ) >"$BATS_TEST_TMPDIR/other.url"
  OTHER_URL=$(<"$BATS_TEST_TMPDIR/other.url")
  [[ -n $OTHER_URL ]]
}

# kept_for_at_most_a_second KEY: KEY expires, within a second.
kept_for_at_most_a_second() {
  local left
  left=$(redis_cli pttl "$1")
  echo "$1: PTTL $left"
  ((left > 0 && left <= 1000))
}

@test "fences strictly increase across FLUSHALL" {
  local first second
  first=$(fence_of flushed)
  [[ $first =~ ^[0-9]+$ ]]
  redis_cli flushall >/dev/null
  second=$(fence_of flushed)
  echo "$first then $second"
  ((second > first))
}

@test "fences strictly increase onto an empty server (a restart, a failover to a replica that missed the write)" {
  local first second third
  first=$(fence_of moved)
  other_server
  second=$(fence_of moved "$OTHER_URL")
  third=$(fence_of moved)
  echo "$first then $second then $third"
  ((second > first))
  ((third > second))
}

@test "fences are exact JSON numbers and RLOCK_FENCE agrees with status" {
  local f=$BATS_TEST_TMPDIR/acquire.json fence
  run -0 --separate-stderr rl acquire --json exact
  printf '%s' "$output" >"$f"
  fence=$(jq '.fence' "$f")
  [[ $fence =~ ^[0-9]+$ ]]
  # Below 2^53: no JSON reader rounds it.
  ((fence < 9007199254740992))
  [ "$fence" = "$(redis_cli hget "$(lock_key 'exact')" fence)" ]
}

@test "a NAME used once leaves no key behind a second after its acquisition" {
  run -0 rl once true
  key_absent "$(lock_key 'once')"
  # The last fence stays for a second at most, then nothing is left.
  kept_for_at_most_a_second "$(fence_key 'once')"
  wait_until 5 eval '[ "$(dbsize)" = 0 ]'
}

@test "a fence key from an older rlock (no expiry) is given one" {
  redis_cli set "$(fence_key 'old')" 41 >/dev/null
  [ "$(redis_cli pttl "$(fence_key 'old')")" = -1 ]
  (($(fence_of old) > 41))
  kept_for_at_most_a_second "$(fence_key 'old')"
}

# --- a server over maxmemory with noeviction --------------------------------

oom() {
  redis_cli config set maxmemory-policy noeviction >/dev/null
  redis_cli config set maxmemory 1 >/dev/null
  [[ $(redis_cli set probe y) == OOM* ]]
}

@test "over maxmemory with noeviction, a running holder keeps renewing and exits 0" {
  bg "$RLOCK" -t 1s full sleep 3
  wait_until 5 key_exists "$(lock_key 'full')"
  oom
  # Several renewals (every 333 ms) happen under OOM.
  reap "$BG_PID" 20
  cat "$BG_ERR"
  [ ! -s "$BG_ERR" ]
}

@test "over maxmemory, --hold still sets its lease" {
  bg "$RLOCK" -t 1s --hold 20s held sleep 1.5
  wait_until 5 key_exists "$(lock_key 'held')"
  oom
  reap "$BG_PID" 20
  [ ! -s "$BG_ERR" ]
  (($(redis_cli pttl "$(lock_key 'held')") > 10000))
}

@test "over maxmemory, a --fair acquire behind dead queue entries writes nothing" {
  local before
  # A waiter that died in the queue: its liveness ran out long ago.
  redis_cli zadd "$(queue_key 'fair')" 1 dead >/dev/null
  redis_cli zadd "$(alive_key 'fair')" 1 dead >/dev/null
  redis_cli set "$(fence_key 'fair')" 41 >/dev/null
  oom
  before=$(redis_cli --scan | sort | while read -r key; do
    echo "$key $(redis_cli type "$key") $(redis_cli dump "$key" | od -An -tx1 | tr -d ' \n')"
  done)
  run -69 --separate-stderr rl -n --fair fair touch ran
  [ -z "$output" ]
  [[ $stderr == "rlock: "*OOM* ]]
  [ ! -e ran ]
  [ "$(redis_cli --scan | sort | while read -r key; do
    echo "$key $(redis_cli type "$key") $(redis_cli dump "$key" | od -An -tx1 | tr -d ' \n')"
  done)" = "$before" ]
}

# --- a supervised lease, from inside its job --------------------------------

@test "rlock extend -t SHORTER from inside the job does not shorten the lease" {
  run -0 --separate-stderr rl -t 5s cut sh -c '
    "$1" extend -t 200ms cut || exit
    sleep 0.6
    redis-cli -s "$2" pttl "$RLOCK_KEY"' sh "$RLOCK" "$REDIS_SOCKET"
  echo "$output $stderr"
  # Still the supervising run's lease, not 200 ms that ran out.
  ((output > 3000))
}

@test "rlock extend -t LONGER from inside the job lengthens the lease" {
  run -0 --separate-stderr rl -t 3s long sh -c '
    "$1" extend -t 60s long || exit
    redis-cli -s "$2" pttl "$RLOCK_KEY"' sh "$RLOCK" "$REDIS_SOCKET"
  ((output > 50000))
}

@test "another holder never runs inside a job that ran rlock extend -t 200ms (the review's F5)" {
  bg "$RLOCK" -t 3s ext sh -c '"$1" extend -t 200ms ext
    for i in $(seq 15); do date +%s%N >> A.beats; sleep 0.1; done' sh "$RLOCK"
  sleep 0.5
  run -0 rl -w 10s ext sh -c 'date +%s%N > B.start; sleep 0.5; date +%s%N > B.end'
  reap "$BG_PID" 20
  [ "$(awk -v s="$(cat B.start)" -v e="$(cat B.end)" '$1 > s && $1 < e' A.beats | wc -l)" = 0 ]
}

@test "rlock release from inside the job: 64, one line; the supervising run releases it" {
  run -0 --separate-stderr rl inside sh -c '
    "$1" release inside; echo "release $?"
    redis-cli -s "$2" exists "$RLOCK_KEY"' sh "$RLOCK" "$REDIS_SOCKET"
  echo "$output"
  echo "$stderr"
  [ "${lines[0]}" = 'release 64' ]
  [ "${lines[1]}" = 1 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: release: lock 'inside' is held by the rlock running this command, which releases it when the command ends" ]]
  key_absent "$(lock_key 'inside')"
}

@test "a lock taken with acquire --env inside a job is released with its own token" {
  run -0 --separate-stderr rl outer sh -c '
    eval "$("$1" acquire --env inner)" && "$1" release inner; echo "release $?"' sh "$RLOCK"
  [ "$output" = 'release 0' ]
  key_absent "$(lock_key 'inner')"
}

# --- the Redis host's clock -------------------------------------------------

# shifted_server: a second redis-server whose CLOCK_REALTIME is shifted by the
# seconds in $SHIFT_FILE (an LD_PRELOAD shim); sets OTHER_URL.
shifted_server() {
  cat >shift.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
static double off(void) {
  FILE *f = fopen(getenv("SHIFT_FILE"), "r");
  double v = 0;
  if (f) { if (fscanf(f, "%lf", &v) != 1) v = 0; fclose(f); }
  return v;
}
int clock_gettime(clockid_t c, struct timespec *t) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = dlsym(RTLD_NEXT, "clock_gettime");
  int x = real(c, t);
  if (!x && (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE)) {
    long long ns = t->tv_sec * 1000000000LL + t->tv_nsec + (long long)(off() * 1e9);
    t->tv_sec = ns / 1000000000LL; t->tv_nsec = ns % 1000000000LL;
  }
  return x;
}
int gettimeofday(struct timeval *tv, void *tz) {
  struct timespec t; (void)tz;
  clock_gettime(CLOCK_REALTIME, &t);
  tv->tv_sec = t.tv_sec; tv->tv_usec = t.tv_nsec / 1000;
  return 0;
}
C
  cc -shared -fPIC -o shift.so shift.c -ldl
  export SHIFT_FILE=$BATS_TEST_TMPDIR/offset
  echo 0 >"$SHIFT_FILE"
  LD_PRELOAD=$BATS_TEST_TMPDIR/shift.so other_server
}

@test "a forward clock step on the Redis host: the holder notices at its next renewal, stops its command and exits 70" {
  shifted_server
  export RLOCK_URL=$OTHER_URL
  # TTL 3 s, first renewal at 1 s, the command would run 4 s.
  bg "$RLOCK" -t 3s clk sh -c 'for i in $(seq 40); do date +%s%N >> A.beats; sleep 0.1; done'
  wait_until 5 test -s A.beats
  # The lease now ends 1.5 s early on the server: about 1.2 s from now.
  echo 1.5 >"$SHIFT_FILE"
  run -0 rl -w 10s clk sh -c 'date +%s%N > B.start; sleep 0.5; date +%s%N > B.end'
  run -70 reap "$BG_PID" 20
  cat "$BG_ERR"
  grep -q "clock stepped forward" "$BG_ERR"
  [ "$(awk -v s="$(cat B.start)" -v e="$(cat B.end)" '$1 > s && $1 < e' A.beats | wc -l)" = 0 ]
}
