#!/usr/bin/env bats
#
# --compat string against node `redlock` (4.2.0, pinned in
# tests/compat/node/package-lock.json), installed into the build tree by the
# test-only target compat_node_clients (npm ci into build/compat-node).
# Both directions on one server, and on a quorum of three servers of this
# file's own (Redlock: node redlock and rlock each need 2 of 3), with one of
# them stopped, and with node's key on one server only.
#
# And redis-semaphore (5.6.2, pinned there too; swarthy/redis-semaphore,
# read in node_modules/redis-semaphore/lib): its Mutex keeps key
# `mutex:NAME` (RedisMutex.js, RedlockMutex.js) holding a random UUID, taken
# with SET NX PX (mutex/acquire.js), renewed by a timer with
# compare-and-PEXPIRE (mutex/refresh.js), released with compare-and-DEL
# (mutex/release.js); RedlockMutex does the same on each server and needs
# round((N+1)/2) of them (redlockMutex/*.js, utils/redlock.js). So
# `rlock --compat string mutex:NAME` shares it; both ways on one server and
# on the quorum.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

NODE_DIR=${RLOCK_NODE_CLIENTS:-$(dirname "$RLOCK")/compat-node}

# The quorum's three servers (q1 q2 q3 in $BATS_FILE_TMPDIR), started
# before the file's own server so that REDIS_* and RLOCK_URL stay its.
setup_file() {
  local i rc=0
  Q_PORTS=""
  for i in 1 2 3; do
    redis_start "$BATS_FILE_TMPDIR/q$i" || rc=$?
    ((rc == 0)) || break
    Q_PORTS+="$REDIS_PORT "
  done
  export Q_PORTS
  ((rc == 0 || rc == 125)) || return "$rc"
  common_setup_file
}

teardown_file() {
  local i
  for i in 1 2 3; do
    redis_stop "$BATS_FILE_TMPDIR/q$i"
  done
  common_teardown_file
}

setup() {
  common_setup
  need_file "$NODE_DIR/node_modules/redlock/package.json" \
    "nodejs npm, then cmake --build build --target compat_node_clients"
  local i port
  read -ra QP <<<"$Q_PORTS"
  Q_URLS=() Q_ARGS=()
  for i in 1 2 3; do
    q_running "$i" || q_start_again "$i" || return 1
    port=${QP[i - 1]}
    Q_URLS+=("redis://127.0.0.1:$port/0")
    Q_ARGS+=(--url "redis://127.0.0.1:$port/0")
    [[ $(q_cli "$i" flushall) == OK ]] || return 1
  done
}

# q_cli I ARG...: redis-cli on the quorum's server I (1-3).
q_cli() {
  local i=$1
  shift
  redis-cli -s "$BATS_FILE_TMPDIR/q$i/redis.sock" "$@"
}

q_running() {
  [[ -s $BATS_FILE_TMPDIR/q$1/redis.pid ]] &&
    redis_pid_alive "$(<"$BATS_FILE_TMPDIR/q$1/redis.pid")"
}

# q_stop I: stops the quorum's server I (by its PID); setup starts it again.
q_stop() {
  redis_stop "$BATS_FILE_TMPDIR/q$1"
}

q_start_again() {
  local dir=$BATS_FILE_TMPDIR/q$1
  "$RLOCK_TEST_SERVER" "$dir/redis.conf" >/dev/null 2>&1 || return 1
  redis_await "$dir" "${QP[$1 - 1]}"
}

# q_value I NAME: the value of key NAME on server I ("" when absent).
q_value() {
  q_cli "$1" get "$2"
}

# q_has I NAME: key NAME exists on server I.
q_has() {
  [[ $(q_cli "$1" exists "$2" 2>/dev/null) == 1 ]]
}

# q_has_on N NAME: key NAME exists on N servers of the quorum or more.
q_has_on() {
  local i n=0
  for i in 1 2 3; do
    [[ $(q_cli "$i" exists "$2" 2>/dev/null) == 1 ]] && n=$((n + 1))
  done
  ((n >= $1))
}

# redlock ARG...: tests/compat/node/client.js on the test's server.
redlock() {
  timeout -k 5 "$RL_LIMIT" node "$NODE_DIR/client.js" "$@"
}

key_exists() {
  [[ $(redis_cli exists "$1") == 1 ]]
}

# semaphore ARG...: tests/compat/node/client.js --mutex (redis-semaphore's
# Mutex on one URL, RedlockMutex on several); its key is mutex:NAME.
semaphore() {
  timeout -k 5 "$RL_LIMIT" node "$NODE_DIR/client.js" --mutex "$@"
}

# busy_throughout SECONDS CLIENT ARG...: the client's one-try probe says
# busy (exit 1) every time for SECONDS, and it tried at least twice.
busy_throughout() {
  local deadline=$((SECONDS + $1)) tries=0
  shift
  while ((SECONDS < deadline)); do
    run "$@"
    [ "$status" -eq 1 ]
    [ "$output" = busy ]
    tries=$((tries + 1))
  done
  ((tries >= 2))
}

@test "a redlock holder keeps rlock out: -n exits 75, -w runs after its release" {
  bg node "$NODE_DIR/client.js" hold job 3000 1500 "$RLOCK_URL"
  local holder=$BG_PID
  wait_until 10 key_exists job
  run rl --compat string -n job true
  [ "$status" -eq 75 ]
  run rl --compat string -w 20 job sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  reap "$holder"
  grep -qx released "$BG_OUT"
}

@test "rlock holds past its TTL: redlock's acquire fails throughout and succeeds after" {
  bg "$RLOCK" --compat string --ttl 2s job sh -c \
    'while [ ! -e "$1" ]; do sleep 0.02; done' _ "$BATS_TEST_TMPDIR/go"
  local holder=$BG_PID
  wait_until 10 key_exists job
  busy_throughout 6 redlock probe job "$RLOCK_URL"
  touch "$BATS_TEST_TMPDIR/go"
  reap "$holder"
  run redlock probe job "$RLOCK_URL"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
}

@test "quorum: a redlock holder on three servers keeps rlock out: -n exits 75, -w runs after its release" {
  bg node "$NODE_DIR/client.js" hold job 3000 1500 "${Q_URLS[@]}"
  local holder=$BG_PID
  wait_until 10 q_has_on 3 job
  run rl --compat string "${Q_ARGS[@]}" -n job true
  [ "$status" -eq 75 ]
  run rl --compat string "${Q_ARGS[@]}" -w 20 job sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  reap "$holder"
  grep -qx released "$BG_OUT"
}

@test "quorum: rlock holds past its TTL with its token on all three; redlock fails throughout, succeeds after" {
  bg "$RLOCK" --compat string --ttl 2s "${Q_ARGS[@]}" job sh -c \
    'echo "$RLOCK_TOKEN $RLOCK_FENCE" >"$1.tmp"; mv "$1.tmp" "$1"
     while [ ! -e "$2" ]; do sleep 0.02; done' _ \
    "$BATS_TEST_TMPDIR/token" "$BATS_TEST_TMPDIR/go"
  local holder=$BG_PID token fence i
  wait_until 10 test -s "$BATS_TEST_TMPDIR/token"
  read -r token fence <"$BATS_TEST_TMPDIR/token"
  [ -n "$token" ]
  [ "$fence" -ge 1 ]
  for i in 1 2 3; do
    [ "$(q_value "$i" job)" = "$token" ]
  done
  busy_throughout 5 redlock probe job "${Q_URLS[@]}"
  # Renewed, not re-created: still rlock's token everywhere, past two TTLs.
  for i in 1 2 3; do
    [ "$(q_value "$i" job)" = "$token" ]
  done
  touch "$BATS_TEST_TMPDIR/go"
  reap "$holder"
  for i in 1 2 3; do
    [ -z "$(q_value "$i" job)" ]
  done
  run redlock probe job "${Q_URLS[@]}"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
  # RLOCK_FENCE keeps rising: rlock's counter beside the key.
  run rl --compat string "${Q_ARGS[@]}" job sh -c 'echo "$RLOCK_FENCE"'
  [ "$status" -eq 0 ]
  [ "$output" -gt "$fence" ]
}

@test "quorum: one server of three stopped, rlock and redlock each still take it (2 of 3) and exclude each other" {
  q_stop 3
  run rl --compat string "${Q_ARGS[@]}" -n job sh -c 'echo "$RLOCK_TOKEN"'
  [ "$status" -eq 0 ]
  # ioredis reports the stopped server's refusals on stderr.
  run --separate-stderr redlock probe job "${Q_URLS[@]}"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
  bg node "$NODE_DIR/client.js" hold job 3000 2500 "${Q_URLS[@]}"
  local holder=$BG_PID
  wait_until 10 q_has_on 2 job
  run rl --compat string "${Q_ARGS[@]}" -n job true
  [ "$status" -eq 75 ]
  # rlock warns on stderr that it could not release on the stopped server.
  run --separate-stderr rl --compat string "${Q_ARGS[@]}" -w 20 job \
    sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  reap "$holder"
}

@test "quorum: redlock's key on one server and another stopped: rlock gets 1 of 3, not the lock, and undoes it" {
  # node redlock holding on server 1 alone (its own single-server lock).
  bg node "$NODE_DIR/client.js" hold job 3000 4000 "${Q_URLS[0]}"
  local holder=$BG_PID
  wait_until 10 q_has 1 job
  q_stop 3
  run rl --compat string "${Q_ARGS[@]}" -n job true
  [ "$status" -eq 75 ]
  # Its grant on server 2 was taken back.
  [ -z "$(q_value 2 job)" ]
  run rl --compat string "${Q_ARGS[@]}" -w 1 job true
  [ "$status" -eq 75 ]
  [ -z "$(q_value 2 job)" ]
  reap "$holder"
  grep -qx released "$BG_OUT"
  run rl --compat string "${Q_ARGS[@]}" -n job true
  [ "$status" -eq 0 ]
}

@test "quorum: the key taken over on two servers of three: rlock's next renewal finds the lock lost (70)" {
  bg "$RLOCK" --compat string --ttl 1500ms "${Q_ARGS[@]}" job sleep 30
  local holder=$BG_PID rc=0
  wait_until 10 q_has_on 3 job
  # Past rlock's first look at what it took and a renewal or two; then as a
  # holder on two servers would after rlock's lease there ran out.
  sleep 1
  q_cli 1 set job other px 20000 >/dev/null
  q_cli 2 set job other px 20000 >/dev/null
  reap "$holder" || rc=$?
  [ "$rc" -eq 70 ]
  # The others' value is left alone.
  [ "$(q_value 1 job)" = other ]
  [ "$(q_value 2 job)" = other ]
}

@test "quorum: the steps (acquire, status, check, extend, release) and a key of another type (69)" {
  local token i
  token=$(rl acquire --compat string "${Q_ARGS[@]}" -t 10s job)
  for i in 1 2 3; do
    [ "$(q_value "$i" job)" = "$token" ]
  done
  run rl status --compat string "${Q_ARGS[@]}" job
  [ "$status" -eq 0 ]
  [[ $output == *"job "*"3/3"*"value '${token:0:8}"* ]]
  rl check --compat string "${Q_ARGS[@]}" job --token "$token"
  rl extend --compat string "${Q_ARGS[@]}" -t 60s job --token "$token"
  (($(q_cli 2 pttl job) > 30000))
  run --separate-stderr redlock probe job "${Q_URLS[@]}"
  [ "$output" = busy ]
  rl release --compat string "${Q_ARGS[@]}" job --token "$token"
  not q_has_on 1 job
  q_cli 1 hset job f v >/dev/null
  q_cli 2 hset job f v >/dev/null
  run --separate-stderr rl --compat string "${Q_ARGS[@]}" -n job true
  [ "$status" -eq 69 ]
  [[ $stderr == *"holds a hash, not a string"* ]]
  [ -z "$(q_value 3 job)" ]
}

@test "quorum: --compat shedlock and redisson with several --url: refused with 64, one line" {
  local style
  for style in shedlock redisson; do
    run --separate-stderr rl --compat "$style" "${Q_ARGS[@]}" -n job true
    [ "$status" -eq 64 ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == "rlock: --compat $style: not with several --url: "*"one server"* ]]
    [ -z "$output" ]
  done
}

@test "a redis-semaphore Mutex holder renewing past its TTL keeps rlock out: -n exits 75, -w runs after its release" {
  bg node "$NODE_DIR/client.js" --mutex hold job 1500 4000 "$RLOCK_URL"
  local holder=$BG_PID start
  wait_until 10 key_exists mutex:job
  # Its identifier, a random UUID, is the value.
  [[ $(redis_cli get mutex:job) =~ ^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$ ]]
  run rl --compat string -n mutex:job true
  [ "$status" -eq 75 ]
  start=$SECONDS
  run rl --compat string -w 20 mutex:job sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  # Not before the Mutex was released, more than two of its TTLs later.
  ((SECONDS - start >= 2))
  reap "$holder"
  [ "$(cat "$BG_OUT")" = "acquired
released" ]
}

@test "rlock holds past its TTL: redis-semaphore's tryAcquire fails throughout and succeeds after" {
  bg "$RLOCK" --compat string --ttl 2s mutex:job sh -c \
    'echo "$RLOCK_TOKEN" >"$1.tmp"; mv "$1.tmp" "$1"
     while [ ! -e "$2" ]; do sleep 0.02; done' _ \
    "$BATS_TEST_TMPDIR/token" "$BATS_TEST_TMPDIR/go"
  local holder=$BG_PID token
  wait_until 10 test -s "$BATS_TEST_TMPDIR/token"
  token=$(<"$BATS_TEST_TMPDIR/token")
  busy_throughout 6 semaphore probe job "$RLOCK_URL"
  # Renewed, not re-created: still rlock's token, past two TTLs.
  [ "$(redis_cli get mutex:job)" = "$token" ]
  touch "$BATS_TEST_TMPDIR/go"
  reap "$holder"
  run semaphore probe job "$RLOCK_URL"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
}

@test "rlock's release lets a waiting redis-semaphore acquire succeed at once, not when the TTL ends" {
  local token start
  token=$(rl acquire --compat string -t 60s mutex:job)
  bg node "$NODE_DIR/client.js" --mutex --wait 20000 probe job "$RLOCK_URL"
  local waiter=$BG_PID
  sleep 1
  running "$waiter"
  [ ! -s "$BG_OUT" ]
  start=$(now_ms)
  rl release --compat string mutex:job --token "$token"
  reap "$waiter"
  [ "$(cat "$BG_OUT")" = acquired ]
  (($(now_ms) - start < 2000))
}

@test "redis-semaphore takes the key when rlock's lease is cut short: rlock's next renewal finds it taken (70), leaves its value alone" {
  # rlock renews every 2 s; the Mutex, waiting (a try every 50 ms), takes the
  # key as soon as it is gone, mostly well before that renewal.
  bg "$RLOCK" --compat string --ttl 6s mutex:job sleep 30
  local holder=$BG_PID holder_err=$BG_ERR rc=0 app ttl
  wait_until 10 key_exists mutex:job
  bg node "$NODE_DIR/client.js" --mutex --wait 10000 hold job 3000 6000 \
    "$RLOCK_URL"
  app=$BG_PID
  sleep 0.5
  # As when rlock's lease is lost to a failover or a clock jump.
  redis_cli pexpire mutex:job 1 >/dev/null
  wait_until 10 grep -qx acquired "$BG_OUT"
  reap "$holder" || rc=$?
  [ "$rc" -eq 70 ]
  grep -q "deleted or taken over" "$holder_err"
  # rlock did not renew the Mutex's value: its TTL is still the Mutex's
  # (3 s), not rlock's 6 s; the Mutex renewed it (no "lost") and released it.
  ttl=$(redis_cli pttl mutex:job)
  ((ttl > 0 && ttl <= 3000))
  reap "$app"
  [ "$(cat "$BG_OUT")" = "acquired
released" ]
  not key_exists mutex:job
}

@test "quorum: redis-semaphore's RedlockMutex on three servers and rlock exclude each other both ways" {
  bg node "$NODE_DIR/client.js" --mutex hold job 1500 3500 "${Q_URLS[@]}"
  local holder=$BG_PID i
  wait_until 10 q_has_on 3 mutex:job
  run rl --compat string "${Q_ARGS[@]}" -n mutex:job true
  [ "$status" -eq 75 ]
  run rl --compat string "${Q_ARGS[@]}" -w 20 mutex:job sh -c 'echo ran'
  [ "$status" -eq 0 ]
  [ "$output" = ran ]
  reap "$holder"
  [ "$(cat "$BG_OUT")" = "acquired
released" ]
  bg "$RLOCK" --compat string --ttl 1500ms "${Q_ARGS[@]}" mutex:job sh -c \
    'while [ ! -e "$1" ]; do sleep 0.02; done' _ "$BATS_TEST_TMPDIR/go"
  holder=$BG_PID
  wait_until 10 q_has_on 3 mutex:job
  busy_throughout 4 semaphore probe job "${Q_URLS[@]}"
  touch "$BATS_TEST_TMPDIR/go"
  reap "$holder"
  for i in 1 2 3; do
    [ -z "$(q_value "$i" mutex:job)" ]
  done
  run semaphore probe job "${Q_URLS[@]}"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
}
