#!/usr/bin/env bats
#
# --compat redisson: rlock and Redisson's RLock exclude each other on one
# lock. Redisson is Java and not installable here: tests/compat/
# redisson_client.py speaks its protocol, written from Redisson's own
# scripts (the sources are named at its top). Both directions: a Redisson
# holder keeps rlock out, and its unlock message wakes rlock's waiter; an
# rlock holder (renewing past its TTL) keeps Redisson out, and rlock's
# release wakes Redisson's waiter through the same message. A key of
# another type is never taken (69).

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

CLIENT=$BATS_TEST_DIRNAME/../compat/redisson_client.py
PY=/usr/bin/python3

setup() {
  common_setup
  need_file /usr/lib/python3/dist-packages/redis/__init__.py python3-redis
}

# redisson ARG...: the Redisson stand-in on the test's server.
redisson() {
  timeout -k 5 "$RL_LIMIT" "$PY" "$CLIENT" "$RLOCK_URL" "$@"
}

# redisson_busy NAME: true when Redisson's non-blocking tryLock fails.
redisson_busy() {
  local out
  out=$(redisson "$1" probe) && return 1
  [[ $out == busy* ]]
}

key_exists() {
  [[ $(redis_cli exists "$1") == 1 ]]
}

@test "a Redisson holder keeps rlock out: -n exits 75" {
  bg "$PY" "$CLIENT" "$RLOCK_URL" job try --hold 10
  wait_until 10 key_exists job
  run rl --compat redisson -n job true
  [ "$status" -eq 75 ]
  # Redisson's own hash is untouched: one field, its own.
  [ "$(redis_cli hlen job)" -eq 1 ]
}

@test "rlock -w runs once the Redisson holder unlocks, woken by its unlock message" {
  # Not a speed claim but the cause: without the unlock message, rlock's
  # waiter looks again only when its safety net fires, at least 5 s in (a
  # third of a 30 s TTL, clamped to 10 s, jittered down to half), or at the
  # end of its wait. The Redisson holder unlocks about 1 s in.
  bg "$PY" "$CLIENT" "$RLOCK_URL" job try --hold 1
  local holder=$BG_PID
  wait_until 10 key_exists job
  local start
  start=$(now_ms)
  run rl --compat redisson --ttl 30s -w 20 job sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  (($(now_ms) - start < 4500))
  reap "$holder"
  grep -qx unlocked "$BG_OUT"
}

# hold NAME [RLOCK OPTION...]: NAME held by a background rlock whose child
# runs until the file "$BATS_TEST_TMPDIR/go" appears; sets HOLDER_PID.
hold() {
  local name=$1
  shift
  bg "$RLOCK" --compat redisson "$@" "$name" sh -c \
    'while [ ! -e "$1" ]; do sleep 0.02; done' _ "$BATS_TEST_TMPDIR/go"
  HOLDER_PID=$BG_PID
  wait_until 10 key_exists "$name"
}

@test "rlock holds past its TTL: Redisson's tryLock fails throughout and succeeds after" {
  hold job --ttl 2s
  # rlock's field has Redisson's shape, <id>:<thread>.
  [[ $(redis_cli hkeys job) =~ ^.+:[0-9]+$ ]]
  # Several TTLs: each look finds it held, whatever the client's start-up
  # takes.
  local deadline=$((SECONDS + 6)) tries=0
  while ((SECONDS < deadline)); do
    redisson_busy job
    tries=$((tries + 1))
  done
  ((tries >= 2))
  touch "$BATS_TEST_TMPDIR/go"
  reap "$HOLDER_PID"
  run redisson job probe
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
}

@test "rlock's release wakes Redisson's waiter through the unlock message" {
  # rlock's lease is 30 s and Redisson's waiter waits 20 s: it sleeps on its
  # latch for min(PTTL, time left), so only the unlock message can wake it
  # before its wait ends.
  hold job --ttl 30s
  bg "$PY" "$CLIENT" "$RLOCK_URL" job try --wait 20
  local waiter=$BG_PID out=$BG_OUT
  wait_until 15 grep -qx waiting "$out"
  touch "$BATS_TEST_TMPDIR/go"
  reap "$HOLDER_PID"
  reap "$waiter" 30
  run cat "$out"
  [[ ${lines[1]} == "acquired after="* ]]
  [[ ${lines[1]} == *" woken_by=message messages=1" ]]
}

@test "rlock wait returns when a Redisson holder unlocks" {
  bg "$PY" "$CLIENT" "$RLOCK_URL" job try --hold 1
  wait_until 10 key_exists job
  local start
  start=$(now_ms)
  run rl --compat redisson wait -w 20 job
  [ "$status" -eq 0 ]
  # Woken by the message, not the safety net (see the test above).
  (($(now_ms) - start < 4500))
}

@test "a key of another type is never taken: 69 and one line saying what was found" {
  redis_cli set job token >/dev/null
  run --separate-stderr rl --compat redisson -n job true
  [ "$status" -eq 69 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == *string* ]]
  [ "$(redis_cli get job)" = token ]
}

@test "a hash that is not Redisson's lock is never taken: 69" {
  redis_cli hset job token abc >/dev/null
  run --separate-stderr rl --compat redisson -w 1 job true
  [ "$status" -eq 69 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == *"not Redisson's lock"* ]]
  [ "$(redis_cli hget job token)" = abc ]
}

@test "status NAME --compat redisson shows Redisson's id:thread and TTL" {
  REDISSON_ID=0b0b0b0b-1111-2222-3333-444444444444 \
    bg "$PY" "$CLIENT" "$RLOCK_URL" job try --hold 10
  wait_until 10 key_exists job
  run rl --compat redisson status job
  [ "$status" -eq 0 ]
  [[ ${lines[1]} == "job "*" Redisson "*" Redisson 0b0b0b0b-"* ]]
  run rl --compat redisson status --json job
  [ "$status" -eq 0 ]
  [[ $output == *'"0b0b0b0b-1111-2222-3333-444444444444:'* ]]
  [[ $output == *'"ttl_ms"'* ]]
}

@test "--compat redisson refuses a quorum of servers: 64" {
  run --separate-stderr rl --compat redisson --url "$RLOCK_URL" --url "$RLOCK_URL" --url "$RLOCK_URL" -n job true
  [ "$status" -eq 64 ]
}

@test "RLOCK_FENCE comes from rlock's own counter beside Redisson's key" {
  run rl --compat redisson job sh -c 'echo "$RLOCK_FENCE"'
  [ "$status" -eq 0 ]
  [ "$output" = 1 ]
  run rl --compat redisson job sh -c 'echo "$RLOCK_FENCE"'
  [ "$output" = 2 ]
  [ "$(redis_cli get "$(fence_key job)")" = 2 ]
  # Redisson's hash is gone after each release: only the counter stays.
  [ "$(redis_cli exists job)" = 0 ]
}

@test "release --force breaks a Redisson holder's lock, names it, and wakes Redisson's waiter" {
  # The holder's watchdog lease is 6 s, renewed every 2 s; the waiter waits
  # 20 s and sleeps on its latch for min(PTTL, time left): woken_by tells
  # whether the unlock message (which release --force publishes, as
  # Redisson's forceUnlock does) or its timer woke it.
  REDISSON_ID=0b0b0b0b-1111-2222-3333-444444444444 \
    bg "$PY" "$CLIENT" "$RLOCK_URL" job try --hold 20 --watchdog 6000
  local holder=$BG_PID holder_out=$BG_OUT start
  wait_until 10 key_exists job
  bg "$PY" "$CLIENT" "$RLOCK_URL" job try --wait 20
  local waiter=$BG_PID waiter_out=$BG_OUT
  wait_until 15 grep -qx waiting "$waiter_out"
  start=$(now_ms)
  run --separate-stderr rl release --compat redisson --force job
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: broke lock 'job' held by Redisson 0b0b0b0b-1111-2222-3333-444444444444:"* ]]
  reap "$waiter"
  (($(now_ms) - start < 1500))
  run cat "$waiter_out"
  [[ ${lines[1]} == "acquired after="*" woken_by=message messages=1" ]]
  [ "${lines[2]}" = unlocked ]
  # The broken holder's watchdog finds its field gone: Redisson's lost lock.
  local rc=0
  reap "$holder" || rc=$?
  [ "$rc" -eq 3 ]
  grep -qx lost "$holder_out"
  # Nothing left to break.
  run --separate-stderr rl release --compat redisson --force job
  [ "$status" -eq 1 ]
  [[ $stderr == *"lock 'job' was not held"* ]]
}

@test "status NAME --compat redisson shows a Redisson lock held re-entrantly (count 2)" {
  # Redisson's tryLock twice on one thread: the lock script's HINCRBY on the
  # same <id>:<thread> field, count 2 (the client's own script and field).
  REDISSON_ID=0c0c0c0c-1111-2222-3333-444444444444 "$PY" -c '
import sys
sys.path.insert(0, sys.argv[1])
import redisson_client
lock = redisson_client.Lock(sys.argv[2], "job", 30000, False)
assert lock.try_acquire() is None and lock.try_acquire() is None
print(lock.lock_name)' "$(dirname "$CLIENT")" "$RLOCK_URL" >"$BATS_TEST_TMPDIR/field"
  local field
  field=$(<"$BATS_TEST_TMPDIR/field")
  [[ $field == 0c0c0c0c-1111-2222-3333-444444444444:* ]]
  [ "$(redis_cli hget job "$field")" = 2 ]
  run rl --compat redisson status job
  [ "$status" -eq 0 ]
  [[ ${lines[1]} == "job "*" Redisson "*" Redisson 0c0c0c0c-"* ]]
  run rl --compat redisson status --json job
  [ "$status" -eq 0 ]
  [[ $output == *'"held": true'* ]]
  # One holder, its field once.
  [[ $output == *"\"token\": \"$field\","* ]]
  run rl --compat redisson -n job true
  [ "$status" -eq 75 ]
  # Looking changed nothing: still count 2, still its lease.
  [ "$(redis_cli hget job "$field")" = 2 ]
  (($(redis_cli pttl job) > 20000))
}
