#!/usr/bin/env bats
#
# Losing the lease while the child runs: the child's group gets
# --kill-signal, then SIGKILL after --kill-after; rlock exits 70.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers
load heartbeat

setup() {
  common_setup
  ready=$BATS_TEST_TMPDIR/ready
}
teardown() {
  common_teardown
  # The second server of the "unreachable" test, if it is still up.
  redis_stop "$BATS_TEST_TMPDIR/redis2"
  # The frozen server of the release test, continued first.
  if [[ -s $BATS_TEST_TMPDIR/r/redis.pid ]]; then
    kill -CONT "$(<"$BATS_TEST_TMPDIR/r/redis.pid")" 2>/dev/null
    redis_stop "$BATS_TEST_TMPDIR/r"
  fi
}

# when_ready CMD...: in the background, run CMD once the child is ready.
when_ready() {
  (
    wait_until 10 file_has "$ready" && "$@"
  ) >/dev/null 2>"$BATS_TEST_TMPDIR/when_ready.err" </dev/null 3>&- &
  track $!
}

# A child that reports the first signal it gets and exits 0.
trapping_child() {
  local sig
  for sig in "$@"; do
    printf 'trap "echo got-%s; exit 0" %s; ' "$sig" "$sig"
  done
  printf '%s; while :; do sleep 0.1; done' "$(ready_cmd "$ready")"
}

@test "key deleted from outside: child gets TERM, rlock exits 70, stderr says lost" {
  when_ready redis_cli del "$(lock_key 'lost')"
  run -70 --separate-stderr rl -t 3s lost sh -c "$(trapping_child TERM)"
  [ "$output" = got-TERM ]
  [[ $stderr == *"rlock: lost lock 'lost'"* ]]
  key_absent "$(lock_key 'lost')"
}

@test "lost lock gives 70 whatever the child exits with" {
  when_ready redis_cli del "$(lock_key 'lost')"
  run -70 --separate-stderr rl -t 3s lost sh -c \
    "trap 'exit 3' TERM; $(ready_cmd "$ready"); while :; do sleep 0.1; done"
  [[ $stderr == *"lost lock 'lost'"* ]]
}

# take_over KEY: replace the lease by another holder's (another token).
take_over() {
  redis_cli del "$1" >/dev/null
  redis_cli hset "$1" token ffffffffffffffffffffffffffffffff fence 999999 \
    host elsewhere pid 1 user other command other >/dev/null
  redis_cli pexpire "$1" 60000 >/dev/null
}

@test "lease taken over by another token: 70, and the new holder's key is left alone" {
  when_ready take_over "$(lock_key 'taken')"
  run -70 --separate-stderr rl -t 3s taken sh -c "$(trapping_child TERM)"
  [ "$output" = got-TERM ]
  [[ $stderr == *"lost lock 'taken'"* ]]
  [ "$(redis_cli hget "$(lock_key 'taken')" token)" = ffffffffffffffffffffffffffffffff ]
}

@test "--kill-signal USR1 is what the child gets on loss" {
  when_ready redis_cli del "$(lock_key 'ks')"
  run -70 --separate-stderr rl -t 3s --kill-signal USR1 ks sh -c "$(trapping_child USR1 TERM)"
  [ "$output" = got-USR1 ]
}

@test "--kill-signal accepts SIGUSR2, sigusr2 and a number" {
  local spec
  for spec in SIGUSR2 sigusr2 12; do
    rm -f "$ready"
    when_ready redis_cli del "$(lock_key 'ks')"
    run -70 --separate-stderr rl -t 3s --kill-signal "$spec" ks sh -c "$(trapping_child USR2 TERM)"
    [ "$output" = got-USR2 ]
  done
}

@test "a child that ignores the kill signal is SIGKILLed after --kill-after" {
  local pid_file=$BATS_TEST_TMPDIR/child.pid
  when_ready redis_cli del "$(lock_key 'stubborn')"
  run -70 --separate-stderr rl -t 3s --kill-after 0.2s stubborn sh -c \
    "trap '' TERM; echo \$\$ >'$pid_file'; $(ready_cmd "$ready"); while :; do sleep 0.1; done"
  [[ $stderr == *"lost lock 'stubborn'"* ]]
  wait_until 3 not running "$(<"$pid_file")"
}

@test "redis unreachable while the child runs: 70 before the lease can expire" {
  local port start elapsed
  # A second server that this test may stop.
  port=$(redis_start "$BATS_TEST_TMPDIR/redis2" >/dev/null && echo "$REDIS_PORT")
  [ -n "$port" ]
  when_ready redis_stop "$BATS_TEST_TMPDIR/redis2"
  start=$(now_ms)
  run -70 --separate-stderr rl --url "redis://127.0.0.1:$port/0" -t 3s \
    --connect-timeout 0.5s --io-timeout 0.5s unreach sh -c "$(trapping_child TERM)"
  elapsed=$(($(now_ms) - start))
  [ "$output" = got-TERM ]
  [[ $stderr == *"lost lock 'unreach'"* ]]
  ((elapsed < 20000))
}

@test "a healthy lease is renewed: a child outliving the TTL is not disturbed" {
  run -0 --separate-stderr rl -t 1s renewed sh -c 'sleep 2.5; echo finished'
  [ "$output" = finished ]
  [ -z "$stderr" ]
}

# --- the end of a command that ran inside its lease -------------------------

@test "the server frozen at the release of a command that ended inside its lease: the command's status, one warning, no renewal after its end" {
  local ev=$BATS_TEST_TMPDIR/ev pid a
  own_redis
  pid=$(<"$REDIS_PIDFILE")
  # The command freezes the server and ends 0.5 s into a 3 s lease (the
  # renewal thread has started and looks at the frozen server); the server
  # is continued 4.5 s after the command started, past the lease's end.
  bg "$RLOCK" -t 3s --events "$ev" frozen bash -c \
    "kill -STOP $pid; touch started; sleep 0.5; exit 3"
  a=$BG_PID
  wait_until 10 test -e started
  (sleep 4.5 && kill -CONT "$pid") >/dev/null 2>&1 </dev/null 3>&- &
  track $!
  reaped 3 "$a" 20
  cat "$BG_ERR"
  # One line, and it says what happened and for how long the lease may last.
  [ "$(wc -l <"$BG_ERR")" = 1 ]
  grep -qE "^rlock: warning: could not confirm releasing 'frozen' \(.*\); its lease runs out by itself, at most 3s \(the TTL\) after the server last renewed it$" "$BG_ERR"
  has_event "$ev" release-failed
  [ "$(event_count "$ev" lost)" = 0 ]
  [ "$(event_count "$ev" renew-failed)" = 0 ]
  [ "$(event_count "$ev" released)" = 0 ]
  # Continued, the server drops the lock: released late, or expired.
  wait_until 10 key_absent "$(lock_key 'frozen')"
}

@test "a lock deleted while the command ran is still lost (70) when found at the release" {
  # The release's answer "not held" comes before the lease's end: taken
  # from us, not run out.
  run -70 --separate-stderr rl -t 3s deleted sh -c \
    'redis-cli -s "$1" del "$RLOCK_KEY" >/dev/null; exit 0' sh "$REDIS_SOCKET"
  [[ $stderr == *"rlock: lost lock 'deleted': it was no longer held when the command ended"* ]]
}
