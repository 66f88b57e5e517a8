#!/usr/bin/env bats
#
# --compat shedlock[:ENV]: rlock and a ShedLock node share job-lock:ENV:NAME.
# ShedLock is Java (not installable here): tests/compat/shedlock_client.py
# emulates its Redis provider from its source (named in that file).

# The child commands are single-quoted on purpose.
# shellcheck disable=SC2016

bats_require_minimum_version 1.5.0

load helpers

PY=/usr/bin/python3
CLIENT=$BATS_TEST_DIRNAME/../compat/shedlock_client.py

need_redispy() {
  need_file "$PY" python3-redis
  "$PY" -c 'import redis' 2>/dev/null && return 0
  if redis_skip_allowed; then
    skip "python3-redis not installed (packaging/install-deps python3-redis)"
  fi
  echo "python3-redis not installed, and CI requires it" >&2
  return 1
}

# node ENV MODE NAME ARG...: the emulated ShedLock node.
node() {
  "$PY" "$CLIENT" "$RLOCK_URL" "$@"
}

@test "a ShedLock task holds job-lock:default:NAME: rlock -n exits 75, -w runs after its unlock" {
  need_redispy
  bg "$PY" "$CLIENT" "$RLOCK_URL" default hold report 30 2 "$BATS_TEST_TMPDIR/ready"
  local task=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  run -75 rl --compat shedlock -n report true
  run -0 rl --compat shedlock -w 20 report sh -c \
    'test -e "$0.releasing" && echo ran >"$0"' "$BATS_TEST_TMPDIR/ready"
  rc=0
  reap "$task" || rc=$?
  ((rc == 0)) || { cat "$BG_ERR"; false; }
  [[ $(cat "$BATS_TEST_TMPDIR/ready") == ran ]]
  key_absent job-lock:default:report
}

@test "rlock holds past its TTL: ShedLock's task is skipped throughout, runs after; ShedLock's value format" {
  need_redispy
  bg "$RLOCK" --compat shedlock:prod --ttl 1s report sh -c \
    'touch "$0"; until [ -e "$0.done" ]; do sleep 0.1; done' "$BATS_TEST_TMPDIR/in"
  local pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/in"
  local value
  value=$(redis_cli get job-lock:prod:report)
  echo "$value"
  [[ $value =~ ^ADDED:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z@[^:]+:.+$ ]]
  # Past the 1 s TTL several times over: only renewals keep it.
  local end=$(($(now_ms) + 3000))
  while (($(now_ms) < end)); do
    run -3 node prod try report
    sleep 0.2
  done
  # Another ENV is another lock.
  run -0 node default try report
  touch "$BATS_TEST_TMPDIR/in.done"
  rc=0
  reap "$pid" || rc=$?
  ((rc == 0)) || { cat "$BG_ERR"; false; }
  key_absent job-lock:prod:report
  run -0 node prod try report
}

@test "ShedLock's unchecked DEL under rlock: rlock notices at its next renewal, exits 70" {
  need_redispy
  bg "$RLOCK" --compat shedlock --ttl 1s report sh -c 'touch "$0"; exec sleep 20' "$BATS_TEST_TMPDIR/in"
  local pid=$BG_PID
  wait_until 10 test -e "$BATS_TEST_TMPDIR/in"
  node default unlock report
  rc=0
  reap "$pid" 15 || rc=$?
  ((rc == 70)) || { cat "$BG_ERR"; false; }
  key_absent job-lock:default:report
}

@test "status NAME --compat shedlock shows ShedLock's host and the TTL" {
  need_redispy
  bg "$PY" "$CLIENT" "$RLOCK_URL" default hold report 60 30 "$BATS_TEST_TMPDIR/ready"
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  rl status --compat shedlock --json report >"$BATS_TEST_TMPDIR/s.json"
  cat "$BATS_TEST_TMPDIR/s.json"
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"key"]') == '"job-lock:default:report"' ]]
  [[ $(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"owner","host"]') == "\"$(hostname)\"" ]]
  local ttl
  ttl=$(json_get "$BATS_TEST_TMPDIR/s.json" '[0,"ttl_ms"]')
  ((ttl > 0 && ttl <= 60000))
}

@test "release compares the value's end: ShedLock's own lock is left alone" {
  need_redispy
  local token
  token=$(rl acquire --compat shedlock --ttl 30s report)
  [[ $(redis_cli get job-lock:default:report) == *":$token" ]]
  node default unlock report
  bg "$PY" "$CLIENT" "$RLOCK_URL" default hold report 60 30 "$BATS_TEST_TMPDIR/ready"
  wait_until 10 test -e "$BATS_TEST_TMPDIR/ready"
  run -1 rl release --compat shedlock report --token "$token"
  key_exists job-lock:default:report
}
