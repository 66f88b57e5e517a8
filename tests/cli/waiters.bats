#!/usr/bin/env bats
#
# Waiters that must not leave anything behind or load the server: -n --fair
# takes no place in the queue, and the safety net follows each holder's TTL.

# `run` sets status and stderr (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

load helpers

setup_file() { common_setup_file; }
teardown_file() { common_teardown_file; }
setup() { common_setup; }
teardown() { common_teardown; }

# calls COMMAND: how many times the server ran COMMAND since the last
# CONFIG RESETSTAT.
calls() {
  local line
  line=$(redis_cli info commandstats | grep "^cmdstat_$1:" || true)
  line=${line#*calls=}
  line=${line%%,*}
  echo "${line:-0}"
}

@test "-n --fair on a held lock leaves no queue entry behind" {
  bg "$RLOCK" ph sleep 1
  wait_until 5 key_exists 'rlock:{ph}'
  run rl -n --fair ph true
  ((status == 75))
  run rl -w 0 --fair ph true
  ((status == 75))
  [[ $(redis_cli zcard 'rlock:{ph}:queue') == 0 ]]
  reaped 0 "$BG_PID" 10
  # The free lock is free for everyone at once, not after the entry's 10s.
  run rl -n ph true
  ((status == 0))
}

@test "the safety net follows the current holder's TTL, not the first one's" {
  # The waiter first meets a 150ms holder (a 50ms safety net), then waits
  # behind a 1h holder: its safety net must grow to 10s.
  bg "$RLOCK" -t 150ms poll sleep 0.6
  local first=$BG_PID
  wait_until 5 key_exists 'rlock:{poll}'
  bg "$RLOCK" --fair -t 1h poll sleep 4
  local second=$BG_PID
  bg "$RLOCK" --fair poll true
  local waiter=$BG_PID
  reaped 0 "$first" 10
  wait_until 5 [ "$(redis_cli hget 'rlock:{poll}' ttl_ms)" = 3600000 ]
  sleep 0.3
  redis_cli config resetstat >/dev/null
  sleep 2
  local looks=$(($(calls pttl) + $(calls evalsha) + $(calls eval)))
  echo "the waiter looked $looks times in 2s behind a 1h holder" >&2
  # A refresh of its --fair place (every 4-5s) and a safety net of 5-10s:
  # at most one or two looks, never dozens.
  ((looks <= 3))
  reaped 0 "$second" 10
  reaped 0 "$waiter" 10
}

# start_proxy: a relay to the test's redis-server (tests/lib/proxy.py) on a
# free port; sets PROXY_PORT. proxy_control DELAY FROZEN RESETS steers it.
start_proxy() {
  PROXY_PORT=$(closed_port)
  proxy_control 0 0 0
  bg python3 "$BATS_TEST_DIRNAME/../lib/proxy.py" 127.0.0.1 "$PROXY_PORT" \
    "tcp:127.0.0.1:$REDIS_PORT" "$BATS_TEST_TMPDIR/proxy.control"
  wait_until 10 grep -q ready "$BG_OUT"
}
proxy_control() {
  echo "$*" >"$BATS_TEST_TMPDIR/proxy.control.tmp"
  mv "$BATS_TEST_TMPDIR/proxy.control.tmp" "$BATS_TEST_TMPDIR/proxy.control"
}

# held_by PID: true when the lock lr is held by a run whose pid is PID.
held_by() {
  [[ $(redis_cli hget 'rlock:{lr}' pid) == "$1" ]]
}

@test "a waiter whose winning acquire lost its reply, then interrupted, leaves no lock" {
  start_proxy
  bg "$RLOCK" lr sleep 1
  local holder=$BG_PID
  wait_until 5 key_exists 'rlock:{lr}'
  bg "$RLOCK" --url "redis://127.0.0.1:$PROXY_PORT/0" --io-timeout 300ms \
    lr echo waiter-ran
  local waiter=$BG_PID waiter_err=$BG_ERR
  wait_until 5 [ "$(redis_cli pubsub numsub 'rlock:{lr}:released' | tail -n 1)" = 1 ]
  # From now on the waiter's requests arrive 0.4s late and its replies 0.8s
  # late, past its 300ms: the acquire after the release runs on the server,
  # its reply is lost, and the waiter reconnects.
  proxy_control 0.4 0 0
  reaped 0 "$holder" 10
  wait_until 10 grep -q reconnecting "$waiter_err"
  wait_until 5 held_by "$waiter"
  kill -INT "$waiter"
  reaped 130 "$waiter" 10
  # Its token is released, not left to the 30s lease.
  wait_until 3 key_absent 'rlock:{lr}'
  not grep -q waiter-ran "$BG_OUT"
}
