#!/usr/bin/env bats
#
# --compat string against node `redlock` (4.2.0, pinned in
# tests/compat/node/package-lock.json), installed into the build tree by the
# test-only target compat_node_clients (npm ci into build/compat-node).
# Both directions on one server; a quorum of servers is refused with 64
# (--compat does not implement the Redlock quorum yet).

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

NODE_DIR=${RLOCK_NODE_CLIENTS:-$(dirname "$RLOCK")/compat-node}

setup() {
  common_setup
  need_file "$NODE_DIR/node_modules/redlock/package.json" \
    "nodejs npm, then cmake --build build --target compat_node_clients"
}

# redlock ARG...: tests/compat/node/client.js on the test's server.
redlock() {
  timeout -k 5 "$RL_LIMIT" node "$NODE_DIR/client.js" "$@"
}

key_exists() {
  [[ $(redis_cli exists "$1") == 1 ]]
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
  local deadline=$((SECONDS + 6)) tries=0
  while ((SECONDS < deadline)); do
    run redlock probe job "$RLOCK_URL"
    [ "$status" -eq 1 ]
    [ "$output" = busy ]
    tries=$((tries + 1))
  done
  ((tries >= 2))
  touch "$BATS_TEST_TMPDIR/go"
  reap "$holder"
  run redlock probe job "$RLOCK_URL"
  [ "$status" -eq 0 ]
  [ "$output" = acquired ]
}

@test "--compat string with a quorum of servers, as redlock uses: refused with 64" {
  run --separate-stderr rl --compat string --url "$RLOCK_URL" \
    --url "$RLOCK_URL" --url "$RLOCK_URL" -n job true
  [ "$status" -eq 64 ]
  [ "${#stderr_lines[@]}" -eq 1 ]
}
