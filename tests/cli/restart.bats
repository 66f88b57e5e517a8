#!/usr/bin/env bats
#
# A redis-server that restarts empty (a crash without persistence): the old
# holder must notice at once, and no new holder may start before every old
# holder's command has stopped (--restart-grace). Also: a server that closes
# idle connections (its `timeout`) must not disturb the renewals.
#
# Every test has a redis-server of its own (own_redis), fresh, which it may
# kill and restart; the tests about the grace unset RLOCK_RESTART_GRACE
# (common_setup sets it to 0) where they want the default.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# output (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers
load heartbeat

setup() {
  common_setup
  GROUPS_FILE=$BATS_TEST_TMPDIR/groups
  : >"$GROUPS_FILE"
}
teardown() {
  if [[ -d $BATS_TEST_TMPDIR/r ]]; then
    redis_stop "$BATS_TEST_TMPDIR/r"
  fi
  common_teardown
  kill_child_groups
}

# slow_to_stop_script FILE: a heartbeat child (see heartbeat.bash) that, on
# SIGTERM, goes on beating for about 2 s before it exits 0, as a command
# that cleans up does.
slow_to_stop_script() {
  printf 'trap '\''left=${left:-40}'\'' TERM; '
  printf 'echo $$ >"%s.pid.tmp" && mv "%s.pid.tmp" "%s.pid"; ' "$1" "$1" "$1"
  printf 'while :; do echo "$EPOCHREALTIME" >>"%s"; ' "$1"
  printf 'if [ -n "$left" ]; then left=$((left - 1)); '
  printf '[ "$left" -le 0 ] && echo "$EPOCHREALTIME" >"%s.end" && exit 0; fi; ' "$1"
  printf 'sleep 0.05; done'
}

# event_count FILE EVENT: how many EVENT records the --events FILE holds.
event_count() {
  local n
  n=$(grep -c "\"event\":\"$2\"" "$1" 2>/dev/null) || true
  echo "${n:-0}"
}

@test "restarted empty while A runs: B, waiting with -w, starts its command only after A's command is dead" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 a b
  own_redis
  # A took the lock from a server that had been up long enough (grace off
  # for A alone); B waits with the default grace.
  bg env RLOCK_RESTART_GRACE=0 "$RLOCK" restarted bash -c "$(slow_to_stop_script "$hb1")"
  a=$BG_PID
  wait_until 10 beating "$hb1"
  child_group "$hb1" >/dev/null
  bg env -u RLOCK_RESTART_GRACE "$RLOCK" -v -w 60s restarted bash -c "$(beats_script "$hb2" 5)"
  b=$BG_PID
  # Waiting: for A, or for this fresh server's own grace to pass.
  wait_until 10 grep -q "waiting for 'restarted'" "$BG_ERR"
  crash_and_restart_redis
  reaped 0 "$b" 45
  reaped 70 "$a" 20
  [ -s "$hb1.end" ]
  before "$(last_beat "$hb1")" "$(first_beat "$hb2")" \
    "A's command's last heartbeat vs B's command's first"
  grep -q "waiting for 'restarted': the Redis server at 127.0.0.1:$REDIS_PORT started [0-9]*s ago; no lock is granted for another [0-9]*s (--restart-grace " "$BG_ERR"
}

@test "the old holder notices an empty restart at once, not at its next renewal (-t 30s: renewal 10 s after acquiring)" {
  local hb=$BATS_TEST_TMPDIR/hb a restarted_ms term_ms
  own_redis
  bg "$RLOCK" -t 30s --events "$BATS_TEST_TMPDIR/ev" noticed bash -c "$(slow_to_stop_script "$hb")"
  a=$BG_PID
  wait_until 10 beating "$hb"
  child_group "$hb" >/dev/null
  sleep 0.5
  restarted_ms=$(now_ms)
  crash_and_restart_redis
  reaped 70 "$a" 20
  grep -q "rlock: lost lock 'noticed': it was deleted or taken over; sent SIGTERM" "$BG_ERR"
  # The child stops about 2 s after its TERM (`.end`); its TERM came within a
  # few seconds of the restart, long before the renewal 10 s after acquiring.
  term_ms=$(($(usec "$(<"$hb.end")") / 1000 - 2000))
  echo "TERM about $((term_ms - restarted_ms)) ms after the restart began"
  ((term_ms - restarted_ms < 5000))
  [ "$(event_count "$BATS_TEST_TMPDIR/ev" renewed)" = 0 ]
}

@test "a server killed as the command starts, before the renewal thread runs, and restarted empty: noticed once it is back, not at the first renewal (-t 30s)" {
  local ev=$BATS_TEST_TMPDIR/ev pid a restarted_ms term_ms
  own_redis
  pid=$(<"$REDIS_PIDFILE")
  # The command's first act kills the server, milliseconds after the
  # acquire: the renewal thread (due 100 ms into the run) has no connection
  # yet that the crash could close.
  bg "$RLOCK" -t 30s --events "$ev" early bash -c \
    "kill -KILL $pid; trap 'echo \$EPOCHREALTIME >term; exit 0' TERM; touch started; while :; do sleep 0.05; done"
  a=$BG_PID
  wait_until 10 test -e started
  wait_until 5 not redis_pid_alive "$pid"
  rm -f "$REDIS_PIDFILE" "$REDIS_SOCKET"
  redis-server "$REDIS_DIR/redis.conf" >/dev/null 2>&1
  redis_await "$REDIS_DIR" "$REDIS_PORT"
  restarted_ms=$(now_ms)
  reaped 70 "$a" 20
  grep -q "rlock: lost lock 'early': it was deleted or taken over; sent SIGTERM" "$BG_ERR"
  term_ms=$(($(usec "$(<term)") / 1000))
  echo "TERM $((term_ms - restarted_ms)) ms after the server was back"
  # The first renewal is due 10 s after the acquire.
  ((term_ms - restarted_ms < 3000))
  [ "$(event_count "$ev" renewed)" = 0 ]
}

@test "-n on a server up less than --restart-grace: 75, -v says why and for how long, no lock left; 0 turns it off" {
  local ev=$BATS_TEST_TMPDIR/ev
  own_redis
  unset RLOCK_RESTART_GRACE
  run -75 --separate-stderr rl -n -v --events "$ev" fresh touch ran
  [ -z "$output" ]
  [ ! -e ran ]
  # -v names the server first (tests/cli/holdback.bats).
  ((${#stderr_lines[@]} == 2))
  [[ ${stderr_lines[1]} =~ ^"rlock: not acquired: 'fresh': the Redis server at 127.0.0.1:$REDIS_PORT started "[0-9]+"s ago; no lock is granted for another "[0-9]+"s (--restart-grace 30s: a holder from before a restart may still run)"$ ]]
  grep -q '"event":"busy","name":"fresh",.*"reason":"the Redis server at .*(--restart-grace 30s: a holder from before a restart may still run)","retry_ms":[0-9]' "$ev"
  key_absent "$(lock_key 'fresh')"
  run -75 --separate-stderr rl acquire -n -v fresh
  [ -z "$output" ]
  [[ $stderr == *"(--restart-grace 30s: a holder from before a restart may still run)" ]]
  key_absent "$(lock_key 'fresh')"
  # Off: granted at once, by option or environment.
  run -0 rl -n --restart-grace 0 fresh true
  RLOCK_RESTART_GRACE=0 run -0 rl -n fresh true
  RLOCK_RESTART_GRACE=0 run -0 --separate-stderr rl acquire -n fresh
  key_exists "$(lock_key 'fresh')"
}

@test "a waiter on a fresh server sleeps until --restart-grace has passed, then takes the lock" {
  local ev=$BATS_TEST_TMPDIR/ev
  own_redis
  run -0 --separate-stderr rl -v --restart-grace 2s -w 20s --events "$ev" fresh true
  grep -q "waiting for 'fresh': the Redis server at .*(--restart-grace 2s: " <<<"$stderr"
  # busy, then acquired; the grace held it back and nothing else did.
  [ "$(event_count "$ev" busy)" = 1 ]
  sed -n 2p "$ev" >second
  [ "$(json_get second '["event"]')" = '"acquired"' ]
  (($(json_get second '["waited_ms"]') >= 1000))
  # rlock wait, too, reports the lock free only after the grace.
  run -75 rl wait --restart-grace 1h -w 0.5s fresh
  run -0 rl wait --restart-grace 0 -w 0.5s fresh
}

@test "bad --restart-grace or RLOCK_RESTART_GRACE: 64, one line naming it" {
  run -64 --separate-stderr rl --restart-grace soon n true
  [ "$stderr" = "rlock: --restart-grace: invalid duration 'soon' (use e.g. 500ms, 30s, 5m, 1h)" ]
  [ -z "$output" ]
  RLOCK_RESTART_GRACE=-1s run -64 --separate-stderr rl acquire n
  [[ $stderr == "rlock: RLOCK_RESTART_GRACE: invalid duration '-1s'"* ]]
  [ "${#stderr_lines[@]}" = 1 ]
  key_absent "$(lock_key 'n')"
}

@test "F16: a server that closes idle clients (timeout 1) under -t 4.5s: renewals on new connections, no warning, exit 0" {
  local ev=$BATS_TEST_TMPDIR/ev
  own_redis
  [ "$(redis_cli config set timeout 1)" = OK ]
  run -0 --separate-stderr rl -t 4.5s --events "$ev" idle sleep 5
  [ -z "$stderr" ]
  [ "$(event_count "$ev" renew-failed)" = 0 ]
  (($(event_count "$ev" renewed) >= 2))
}

@test "F16: a server that closes every connection at once: renewals stay at most one per retry delay, no busy loop" {
  local ev=$BATS_TEST_TMPDIR/ev renewed r
  own_redis
  # -t 4.5s: renewals every 1.5 s, retries after 225 ms.
  bg "$RLOCK" -t 4.5s --events "$ev" closing sh -c 'touch started; sleep 3'
  r=$BG_PID
  wait_until 10 test -e started
  # Then close every other client (rlock's), about 100 times a second.
  bg redis-cli -s "$REDIS_SOCKET" -r -1 -i 0.01 client kill type normal
  reap "$r" 20 || true
  renewed=$(event_count "$ev" renewed)
  echo "$renewed renewals in 3 s"
  ((renewed >= 2))
  ((renewed <= 3000 / 225 + 2))
}
