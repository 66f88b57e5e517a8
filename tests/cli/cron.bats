#!/usr/bin/env bats
#
# Cron jobs on several hosts: --hold D (keep the lock at least D after it was
# acquired, so that a host whose clock or cron fires late still skips) and
# --once-per D (at most one successful run per D-long slot, aligned to the
# Unix epoch by the Redis server's clock; the mark is rlock:{NAME}:once).
#
# Slot edges: the --once-per tests use D = 1h and read the server's slot
# before the first run and after the last one; if a slot boundary fell in
# between (a test that started in the last seconds of an hour), the second
# run legitimately runs again, so such a test is skipped rather than failed.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

HOUR_MS=3600000

# pttl KEY: PTTL of KEY.
pttl() {
  redis_cli pttl "$1"
}

# server_ms: the redis server's clock in milliseconds.
server_ms() {
  local s us
  { read -r s && read -r us; } < <(redis_cli time)
  echo $((s * 1000 + us / 1000))
}

# slot_of D_MS: the number of the current D_MS-long slot by the server clock.
slot_of() {
  echo $(($(server_ms) / $1))
}

# hour_slot: the current 1h slot, after waiting (at most a minute) for the
# next one when less than a minute of it is left, so that no test that
# starts with it sees the hour turn.
hour_slot() {
  local left
  left=$((HOUR_MS - $(server_ms) % HOUR_MS))
  if ((left < 60000)); then
    sleep "$(((left + 100) / 1000)).$(((left + 100) % 1000 / 100))"
  fi
  slot_of "$HOUR_MS"
}

# same_slot SLOT D_MS: fails when the server's clock has left SLOT: the
# test took longer than hour_slot allows for.
same_slot() {
  local now
  now=$(slot_of "$2")
  if ((now != $1)); then
    echo "a --once-per slot boundary passed during the test (slot $1 -> $now)" >&2
    return 1
  fi
}

# marked NAME SLOT: NAME's --once-per mark is SLOT (of 1h); the test
# fails naming the boundary when an hour passed.
marked() {
  local got
  got=$(redis_cli get "$(once_key "$1")")
  [[ $got == "$2" ]] && return 0
  same_slot "$2" "$HOUR_MS"
  echo "the --once-per mark of $1 is '$got', expected '$2'" >&2
  return 1
}

# slot_passed SLOT D_MS: true once the server's clock has left SLOT.
slot_passed() {
  (($(slot_of "$2") != $1))
}

# lines_in FILE: number of lines in FILE (0 when it does not exist).
lines_in() {
  if [[ -e $1 ]]; then
    wc -l <"$1" | tr -d ' '
  else
    echo 0
  fi
}

# ---- --hold ----------------------------------------------------------------

@test "--hold: a child that ends sooner leaves the lock held; -n in that window exits 75" {
  local ttl token
  run -0 --separate-stderr rl --hold 20s nightly true
  [ -z "$output" ]
  key_exists "$(lock_key 'nightly')"
  token=$(redis_cli hget "$(lock_key 'nightly')" token)
  [[ $token =~ ^[0-9a-f]{32}$ ]]
  ttl=$(pttl "$(lock_key 'nightly')")
  echo "pttl: $ttl"
  ((ttl > 0 && ttl <= 20000))
  run -75 --separate-stderr rl -n nightly touch ran
  [ ! -e ran ]
  # The kept lock is the first run's, untouched by the second.
  [ "$(redis_cli hget "$(lock_key 'nightly')" token)" = "$token" ]
}

@test "--hold: the kept lease is D minus the time the child ran" {
  local ttl
  run -0 --separate-stderr rl --hold 6s nightly sleep 1
  ttl=$(pttl "$(lock_key 'nightly')")
  echo "pttl: $ttl"
  # At most 6 s - 1 s (the child ran at least 1 s), and still held.
  ((ttl > 0 && ttl <= 5000))
}

@test "--hold: the key is left to expire at D; then the next run runs" {
  run -0 --separate-stderr rl --hold 1s nightly true
  key_exists "$(lock_key 'nightly')"
  wait_until 10 key_absent "$(lock_key 'nightly')"
  run -0 rl -n nightly touch ran
  [ -e ran ]
}

@test "--hold shorter than the run: the lock is released when the child ends" {
  run -0 --separate-stderr rl --hold 100ms nightly sleep 0.5
  key_absent "$(lock_key 'nightly')"
}

@test "--hold: the child's failure status passes through and the lock is still kept" {
  run -3 --separate-stderr rl --hold 20s nightly sh -c 'exit 3'
  key_exists "$(lock_key 'nightly')"
  run -75 rl -n nightly true
}

@test "--hold: two hosts (two processes) with the same cron line, one after the other: the second skips" {
  local log=$BATS_TEST_TMPDIR/ran.log
  # Host B's cron fires after host A's run has already finished.
  run -0 --separate-stderr rl -n --hold 30s nightly sh -c 'echo "$1" >>"$2"' _ host-a "$log"
  run -75 --separate-stderr rl -n --hold 30s nightly sh -c 'echo "$1" >>"$2"' _ host-b "$log"
  [ "$(cat "$log")" = host-a ]
}

@test "--hold: two hosts (two processes) with the same cron line at the same time: exactly one runs" {
  local log=$BATS_TEST_TMPDIR/ran.log a b rc_a=0 rc_b=0
  bg "$RLOCK" -n --hold 30s nightly sh -c 'echo "$1" >>"$2"' _ host-a "$log"
  a=$BG_PID
  bg "$RLOCK" -n --hold 30s nightly sh -c 'echo "$1" >>"$2"' _ host-b "$log"
  b=$BG_PID
  reap "$a" 20 || rc_a=$?
  reap "$b" 20 || rc_b=$?
  echo "host-a: $rc_a, host-b: $rc_b, ran: $(cat "$log")"
  [ "$(lines_in "$log")" -eq 1 ]
  [[ "$rc_a $rc_b" == "0 75" || "$rc_a $rc_b" == "75 0" ]]
  key_exists "$(lock_key 'nightly')"
}

@test "--hold: the released event says when the kept lease expires" {
  local ev=$BATS_TEST_TMPDIR/events
  run -0 --separate-stderr rl --events "$ev" --hold 20s nightly true
  cat "$ev"
  jq -e 'type == "object"' "$ev" >/dev/null
  run -0 jq -r 'select(.event == "released") | "\(.expires_in_ms > 10000 and .expires_in_ms <= 20000)"' "$ev"
  [ "$output" = true ]
}

# ---- --once-per ------------------------------------------------------------

@test "--once-per: a successful run marks the slot; a second run in it skips with 75" {
  local slot log=$BATS_TEST_TMPDIR/ran.log ttl
  slot=$(hour_slot)
  run -0 --separate-stderr rl --once-per 1h daily sh -c 'echo first >>"$1"' _ "$log"
  # The mark: the slot's number by the server clock, kept past the slot.
  marked daily "$slot"
  ttl=$(pttl "$(once_key 'daily')")
  echo "once pttl: $ttl"
  ((ttl > HOUR_MS && ttl <= 2 * HOUR_MS))
  # The lock itself was released.
  key_absent "$(lock_key 'daily')"
  run -75 --separate-stderr rl --once-per 1h daily sh -c 'echo second >>"$1"' _ "$log"
  same_slot "$slot" "$HOUR_MS"
  [ -z "$output" ]
  [ "$(cat "$log")" = first ]
  key_absent "$(lock_key 'daily')"
}

@test "--once-per: the skip exits with -E's code" {
  local slot
  slot=$(hour_slot)
  run -0 rl --once-per 1h daily true
  run -9 rl -E 9 --once-per 1h daily touch ran
  same_slot "$slot" "$HOUR_MS"
  [ ! -e ran ]
  run -0 rl -E 0 --once-per 1h daily touch ran
  same_slot "$slot" "$HOUR_MS"
  [ ! -e ran ]
}

@test "--once-per: a failed first run (exit 3) does not mark the slot; a second run runs" {
  local slot log=$BATS_TEST_TMPDIR/ran.log
  slot=$(hour_slot)
  run -3 --separate-stderr rl --once-per 1h daily sh -c 'echo failed >>"$1"; exit 3' _ "$log"
  key_absent "$(once_key 'daily')"
  run -0 --separate-stderr rl --once-per 1h daily sh -c 'echo ok >>"$1"' _ "$log"
  [ "$(cat "$log")" = "$(printf '%s\n' failed ok)" ]
  marked daily "$slot"
  # Now it is marked: a third run skips.
  run -75 rl --once-per 1h daily sh -c 'echo third >>"$1"' _ "$log"
  same_slot "$slot" "$HOUR_MS"
  [ "$(lines_in "$log")" -eq 2 ]
}

@test "--once-per: two hosts (two processes) with the same cron line, one after the other: the second skips" {
  local slot log=$BATS_TEST_TMPDIR/ran.log
  slot=$(hour_slot)
  run -0 rl -n --once-per 1h daily sh -c 'echo "$1" >>"$2"' _ host-a "$log"
  run -75 rl -n --once-per 1h daily sh -c 'echo "$1" >>"$2"' _ host-b "$log"
  same_slot "$slot" "$HOUR_MS"
  [ "$(cat "$log")" = host-a ]
}

@test "--once-per: two hosts firing at the same time with -w: the one that waited skips" {
  local slot log=$BATS_TEST_TMPDIR/ran.log a b
  slot=$(hour_slot)
  bg "$RLOCK" -w 20 --once-per 1h daily sh -c 'sleep 0.5; echo "$1" >>"$2"' _ host-a "$log"
  a=$BG_PID
  wait_until 10 key_exists "$(lock_key 'daily')"
  bg "$RLOCK" -w 20 --once-per 1h daily sh -c 'echo "$1" >>"$2"' _ host-b "$log"
  b=$BG_PID
  reaped 0 "$a" 20
  reaped 75 "$b" 20
  same_slot "$slot" "$HOUR_MS"
  [ "$(cat "$log")" = host-a ]
}

@test "--once-per: a run in the next slot runs again" {
  local slot
  # A short D, so that the next slot comes within the test; only the run
  # after the boundary is asserted, so the edge cannot make it flaky.
  run -0 rl --once-per 1s tick true
  slot=$(redis_cli get "$(once_key 'tick')")
  [[ $slot =~ ^[0-9]+$ ]]
  wait_until 10 slot_passed "$slot" 1000
  # The mark of the previous slot no longer counts (even if not yet expired).
  run -0 rl --once-per 1s tick touch ran
  [ -e ran ]
}

@test "--once-per while another run holds the lock: -n exits 75 without running" {
  bg "$RLOCK" nightly-sync sleep 30
  wait_until 10 key_exists "$(lock_key 'nightly-sync')"
  run -75 rl -n --once-per 1h nightly-sync touch ran
  [ ! -e ran ]
  key_absent "$(once_key 'nightly-sync')"
}
