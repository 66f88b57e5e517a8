#!/usr/bin/env bats
#
# --compat string: rlock and redis-py's Lock (Debian's python3-redis, through
# tests/compat/redispy_client.py) take the same lock, a plain string at NAME,
# and exclude each other both ways.

# The child commands are single-quoted on purpose.
# shellcheck disable=SC2016

bats_require_minimum_version 1.5.0

load helpers
load ../lib/contention

PY=/usr/bin/python3
CLIENT=$BATS_TEST_DIRNAME/../compat/redispy_client.py

# need_redispy: skip (fail in CI) without the system python's redis module.
need_redispy() {
  need_file "$PY" python3-redis
  "$PY" -c 'import redis' 2>/dev/null && return 0
  if redis_skip_allowed; then
    skip "python3-redis not installed (packaging/install-deps python3-redis)"
  fi
  echo "python3-redis not installed, and CI requires it" >&2
  return 1
}

# app MODE NAME ARG...: the redis-py client on the test's server.
app() {
  "$PY" "$CLIENT" "$RLOCK_URL" "$@"
}

@test "an app's redis-py lock: rlock -n exits 75, -w runs once the app releases" {
  need_redispy
  bg "$PY" "$CLIENT" "$RLOCK_URL" hold job 30 2 "$BATS_TEST_TMPDIR/ready"
  local app_pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  # The key is NAME itself, a string holding redis-py's token.
  [[ $(redis_cli type job) == string ]]
  run -75 rl --compat string -n job true
  # It runs only once the app lets go: the app says so just before.
  run -0 rl --compat string -w 20 job sh -c \
    'test -e "$0.releasing" && echo ran >"$0"' "$BATS_TEST_TMPDIR/ready"
  rc=0
  reap "$app_pid" || rc=$?
  ((rc == 0)) || { cat "$BG_ERR"; false; }
  [[ $(cat "$BATS_TEST_TMPDIR/ready") == ran ]]
  key_absent job
}

@test "rlock holds past its TTL (renewals): the app's non-blocking acquire fails throughout, succeeds after" {
  need_redispy
  # The command holds until told to end: the probes all fall inside it.
  bg "$RLOCK" --compat string --ttl 1s job sh -c \
    'touch "$0"; until [ -e "$0.done" ]; do sleep 0.1; done' "$BATS_TEST_TMPDIR/in"
  local pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/in"
  app probe job 2.5 0.2 "$BATS_TEST_TMPDIR/probes"
  touch "$BATS_TEST_TMPDIR/in.done"
  cat "$BATS_TEST_TMPDIR/probes"
  [[ $(grep -c busy "$BATS_TEST_TMPDIR/probes") -ge 5 ]]
  run -1 grep got "$BATS_TEST_TMPDIR/probes"
  rc=0
  reap "$pid" || rc=$?
  ((rc == 0)) || { cat "$BG_ERR"; false; }
  key_absent job
  run -0 app try job
}

@test "status NAME --compat string: the app's token and TTL, --json the same" {
  need_redispy
  bg "$PY" "$CLIENT" "$RLOCK_URL" hold job 60 30 "$BATS_TEST_TMPDIR/ready"
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  local token
  token=$(redis_cli get job)
  [[ -n $token ]]
  run -0 rl status --compat string job
  echo "$output"
  [[ $output == *"$token"* ]]
  # No host in the value: '-' under HOLDER, so that columns stay columns.
  [ "$(echo "$output" | awk 'NR == 2 { print $2 }')" = - ]
  rl status --compat string --json job >"$BATS_TEST_TMPDIR/s.json"
  cat "$BATS_TEST_TMPDIR/s.json"
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"held"]') == true ]]
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"token"]') == "\"$token\"" ]]
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"key"]') == '"job"' ]]
  # What the key does not record is null, not a made-up 0 or 1970.
  for field in fence acquired_at; do
    [[ $(json_get "$BATS_TEST_TMPDIR/s.json" "[0,\"$field\"]") == null ]]
  done
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"owner","pid"]') == null ]]
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"owner","user"]') == null ]]
  local ttl
  ttl=$(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"ttl_ms"]')
  ((ttl > 0 && ttl <= 60000))
}

@test "status NAME --compat string: a key without expiry shows no TTL; a free one is free" {
  redis_cli set job sometoken >/dev/null
  rl status --compat string --json job >"$BATS_TEST_TMPDIR/s.json"
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"ttl_ms"]') == null ]]
  # Exit 1: a named lock is free.
  local rc=0
  rl status --compat string --json other >"$BATS_TEST_TMPDIR/f.json" || rc=$?
  ((rc == 1))
  [[ $(json_get "$BATS_TEST_TMPDIR/f.json" '[0,"held"]') == false ]]
}

@test "a key of another type is never taken or shared: 69 with what was found" {
  redis_cli hset job field 1 >/dev/null
  run -69 rl --compat string -n job true
  echo "$output"
  [[ $output == *"'job'"*hash* ]]
  [[ $(echo "$output" | wc -l) == 1 ]]
  run -69 rl --compat string -w 1 job true
  run -69 rl acquire --compat string job
  run -69 rl status --compat string job
  [[ $output == *hash* ]]
  # Untouched.
  [[ $(redis_cli hget job field) == 1 ]]
  [[ $(redis_cli pttl job) == -1 ]]
}

@test "release compares: a token that no longer holds the key deletes nothing" {
  local token
  token=$(rl acquire --compat string --ttl 30s job)
  [[ $(redis_cli get job) == "$token" ]]
  # The lease ran out and the app took the key.
  redis_cli set job apptoken >/dev/null
  run -1 rl release --compat string job --token "$token"
  [[ $(redis_cli get job) == apptoken ]]
  redis_cli set job "$token" >/dev/null
  run -0 rl release --compat string job --token "$token"
  key_absent job
}

@test "renewal compares: a key taken over while rlock runs ends the run with 70, the new value kept" {
  bg "$RLOCK" --compat string --ttl 1s job sh -c 'touch "$0"; exec sleep 20' "$BATS_TEST_TMPDIR/in"
  local pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/in"
  redis_cli set job apptoken px 60000 >/dev/null
  local rc=0
  reap "$pid" 15 || rc=$?
  ((rc == 70)) || { cat "$BG_ERR"; false; }
  [[ $(redis_cli get job) == apptoken ]]
  # The renewal did not lengthen the app's lease either.
  (($(redis_cli pttl job) <= 60000))
}

@test "extend and check compare too; extend needs the new length" {
  local token
  token=$(rl acquire --compat string --ttl 5s job)
  run -0 rl check --compat string job --token "$token"
  run -0 rl extend --compat string job --token "$token" --ttl 60s
  (($(redis_cli pttl job) > 30000))
  run -64 rl extend --compat string job --token "$token"
  [[ $output == "rlock: --compat string: extend needs -t/--ttl"* ]]
  [[ $(echo "$output" | wc -l) == 1 ]]
  run -64 rl extend --compat redisson job --token "$token"
  [[ $output == "rlock: --compat redisson: extend needs -t/--ttl"* ]]
  run -1 rl check --compat string job --token wrong
  run -1 rl extend --compat string job --token wrong --ttl 60s
}

@test "\$RLOCK_COMPAT: after eval acquire --compat string --env, check/extend/release of that NAME need neither --token nor --compat" {
  run -0 --separate-stderr timeout 30 bash -c '
    eval "$("$1" acquire --compat string --env -t 10s job)" || exit 9
    [ "$RLOCK_COMPAT" = string ] || exit 8
    "$1" check job && echo checked &&
    "$1" extend -t 60s job && echo extended &&
    "$1" release job && echo released &&
    { "$1" check job; echo "check after release: $?"; }' _ "$RLOCK"
  echo "$output"
  [ "$output" = "$(printf '%s\n' checked extended released 'check after release: 1')" ]
  key_absent job
  # Bound to $RLOCK_NAME: another lock's steps keep rlock's own layout.
  local token
  token=$(rl acquire -t 30s other)
  RLOCK_NAME=job RLOCK_COMPAT=string run -0 rl check other --token "$token"
  # Run mode's child: its own lock's style, and empty for rlock's own.
  run -0 rl --compat string job sh -c \
    'echo "$RLOCK_COMPAT"; "$1" extend -t 30s job && echo extended' _ "$RLOCK"
  [ "$output" = "$(printf '%s\n' string extended)" ]
  RLOCK_COMPAT=string run -0 rl job sh -c 'echo "[$RLOCK_COMPAT]"'
  [ "$output" = "[]" ]
}

@test "RLOCK_FENCE comes from rlock's counter beside the key, and grows" {
  rl --compat string job sh -c 'echo "$RLOCK_FENCE $RLOCK_KEY"' >"$BATS_TEST_TMPDIR/f1"
  rl --compat string job sh -c 'echo "$RLOCK_FENCE"' >"$BATS_TEST_TMPDIR/f2"
  read -r f1 key <"$BATS_TEST_TMPDIR/f1"
  f2=$(<"$BATS_TEST_TMPDIR/f2")
  [[ $key == job ]]
  ((f2 > f1))
  [[ $(redis_cli get 'rlock:{job}:fence') == "$f2" ]]
}

@test "an rlock waiter waits on rlock's wake-up list, and an rlock release wakes it" {
  bg "$RLOCK" --compat string job sh -c 'touch "$0"; exec sleep 30' "$BATS_TEST_TMPDIR/in"
  local holder=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/in"
  bg "$RLOCK" --compat string -w 60 job true
  local waiter=$BG_PID
  wait_until 10 blocked_waiters 1
  [[ $(redis_cli client list | grep cmd=blpop) == *"rlock:{job}:wake"* ]] ||
    redis_cli client list | grep -q cmd=blpop
  kill -TERM "$holder"
  rc=0
  reap "$waiter" 10 || rc=$?
  ((rc == 0)) || { cat "$BG_ERR"; false; }
}

@test "an rlock release leaves one wake-up on rlock's list beside the key, an app's release none" {
  need_redispy
  rl --compat string job true
  [[ $(redis_cli llen 'rlock:{job}:wake') == 1 ]]
  rl --compat string job true
  [[ $(redis_cli llen 'rlock:{job}:wake') == 1 ]]
  (($(redis_cli pttl 'rlock:{job}:wake') > 0))
  redis_cli del 'rlock:{job}:wake' >/dev/null
  run -0 app try job
  key_absent 'rlock:{job}:wake'
}

@test "rlock wait --compat string returns once the app releases; release --force breaks the app's lock" {
  need_redispy
  bg "$PY" "$CLIENT" "$RLOCK_URL" hold job 30 2 "$BATS_TEST_TMPDIR/ready"
  local app_pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  run -75 rl wait --compat string -w 0.3 job
  run -0 rl wait --compat string -w 20 job
  test -e "$BATS_TEST_TMPDIR/ready.releasing"
  local rc=0
  reap "$app_pid" || rc=$?
  ((rc == 0))
  # A crashed app's lock without expiry, broken by hand.
  redis_cli set job stale >/dev/null
  run -0 rl release --compat string --force job
  key_absent job
  run -1 rl release --compat string --force job
}

@test "refused with 64: an unknown style, a style's bad ENV, and what the styles cannot serve" {
  run -64 rl --compat bogus -n job true
  [[ $output == *--compat*"'bogus'"* ]]
  [[ $(echo "$output" | wc -l) == 1 ]]
  run -64 rl --compat string:x -n job true
  [[ $output == *--compat* ]]
  run -64 rl --compat shedlock: -n job true
  [[ $output == *--compat* ]]
  run -64 rl --compat string --limit 2 job true
  [[ $output == *--compat*--limit* ]]
  run -64 rl --compat string --shared job true
  [[ $output == *--shared* ]]
  run -64 rl --compat string --fair job true
  [[ $output == *--fair* ]]
  run -64 rl --compat string --once-per 1h job true
  [[ $output == *--once-per* ]]
  run -64 rl acquire --compat string --limit 2 job
  run -64 rl acquire --compat string --shared job
  # --compat string keeps a quorum (compat_node.bats); shedlock does not.
  run -64 rl --compat shedlock --url "$RLOCK_URL" --url "redis://127.0.0.1:1/0" \
    --url "redis://127.0.0.1:2/0" -n job true
  [[ $output == *--url*"one server"* ]]
  run -64 rl status --compat string
  [[ $output == "rlock: --compat string: status needs the lock's NAME"* ]]
  [[ $(echo "$output" | wc -l) == 1 ]]
  run -64 rl status --compat redisson --json
  [[ $output == "rlock: --compat redisson: status needs"* ]]
  for step in acquire wait status; do
    run -64 rl "$step" --compat bogus job
    [[ $output == *--compat* ]]
  done
  for step in extend release check; do
    run -64 rl "$step" --compat bogus job --token t
    [[ $output == *--compat* ]]
  done
  key_absent job
}

@test "mixed: rlock --compat string and redis-py take turns, no overlap" {
  need_redispy
  local d=$BATS_TEST_TMPDIR/cs
  # rlock's workers (contend's), and two redis-py workers beside them.
  (
    until [[ -x $d/cs.sh ]]; do sleep 0.05; done
    for w in 1 2; do
      timeout -k 5 180 "$PY" "$CLIENT" "$RLOCK_URL" critical mixed 30 "$d" 15 \
        2>"$d/py.$w" || echo "redis-py worker $w: exit $?" >>"$d/errors" &
    done
    wait
  ) &
  local py=$!
  contend "$d" 3 15 "$RLOCK" --compat string mixed
  wait "$py"
  echo "errors:"
  cat "$d/errors"
  echo "overlaps:"
  cat "$d/overlaps"
  [[ ! -s $d/errors && ! -s $d/overlaps ]]
  [[ $(<"$d/counter") == 75 ]]
  # rlock's own runs each logged a fence.
  [[ $(grep -cxE '[0-9]+' "$d/fences") == 45 ]]
  key_absent mixed
}
