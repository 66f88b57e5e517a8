#!/usr/bin/env bats
#
# One test per row of the exit-code table.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

# hold NAME: keep NAME held by a background rlock until teardown.
hold() {
  bg "$RLOCK" "$1" sleep 30
  wait_until 10 key_exists "$(lock_key "$1")"
}

@test "child exit status 0 passes through" {
  run -0 --separate-stderr rl ok true
  [ -z "$output" ]
}

@test "child exit status 3 passes through" {
  run -3 rl three sh -c 'exit 3'
}

@test "child exit status 125 passes through" {
  run -125 rl x125 sh -c 'exit 125'
}

@test "child killed by SIGTERM gives 143" {
  run -143 rl sig sh -c 'kill -TERM $$'
}

@test "child killed by SIGKILL gives 137" {
  run -137 rl sig sh -c 'kill -KILL $$'
}

@test "usage error gives 64 and does not run the command" {
  run -64 --separate-stderr rl -t abc name touch ran
  [ -z "$output" ]
  [ ! -e ran ]
}

@test "unreachable server gives 69 within the connect timeout" {
  local port start elapsed
  port=$(closed_port)
  start=$(now_ms)
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$port/0" --connect-timeout 1s name touch ran
  elapsed=$(($(now_ms) - start))
  [ -z "$output" ]
  [[ $stderr == rlock:* ]]
  [ ! -e ran ]
  # Generous bound: a 1 s connect timeout must not turn into a hang.
  ((elapsed < 5000))
}

@test "unreachable server via \$RLOCK_URL gives 69" {
  RLOCK_URL=redis://127.0.0.1:$(closed_port)/0 run -69 --separate-stderr rl --connect-timeout 1s name touch ran
  [ -z "$output" ]
  [ ! -e ran ]
}

@test "a redis+cluster:// URL at a server not in cluster mode gives 69 naming it" {
  run -69 --separate-stderr rl --url "redis+cluster://127.0.0.1:$REDIS_PORT" name touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: 127.0.0.1:$REDIS_PORT is not a Redis Cluster node"*"cluster support disabled"* ]]
  [ ! -e ran ]
}

@test "a URL's scheme may be in capitals" {
  run -0 rl --url "REDIS://127.0.0.1:$REDIS_PORT" caps sh -c 'echo "$RLOCK_NAME"'
  [ "$output" = caps ]
}

@test "\$REDIS_URL is used when \$RLOCK_URL is unset" {
  local url=$RLOCK_URL
  unset RLOCK_URL
  REDIS_URL=$url run -0 --separate-stderr rl envurl sh -c 'echo "$RLOCK_NAME"'
  [ "$output" = envurl ]
}

@test "\$RLOCK_URL wins over \$REDIS_URL" {
  REDIS_URL=redis://127.0.0.1:$(closed_port)/0 run -0 rl envurl true
}

@test "lock lost while the child runs gives 70 and signals the child" {
  local ready=$BATS_TEST_TMPDIR/ready
  (
    wait_until 10 file_has "$ready" && redis_cli del "$(lock_key 'lost')" >/dev/null
  ) 3>&- &
  track $!
  run -70 --separate-stderr rl -t 3s lost sh -c \
    "trap 'echo got-TERM; exit 0' TERM; $(ready_cmd "$ready"); while :; do sleep 0.1; done"
  [ "$output" = got-TERM ]
  [[ $stderr == *"lost lock 'lost'"* ]]
}

@test "-n while held gives 75 and does not run the command" {
  hold held
  run -75 --separate-stderr rl -n held touch ran
  [ -z "$output" ]
  [ ! -e ran ]
  # The holder's lease is untouched.
  key_exists "$(lock_key 'held')"
}

@test "-w 0 while held gives 75" {
  hold held
  run -75 rl -w 0 held touch ran
  [ ! -e ran ]
}

@test "-w 0.5 running out gives 75 after waiting" {
  local start elapsed
  hold held
  start=$(now_ms)
  run -75 --separate-stderr rl -w 0.5 held touch ran
  elapsed=$(($(now_ms) - start))
  [ -z "$output" ]
  [ ! -e ran ]
  # It waited (at least roughly) the half second, and not forever.
  ((elapsed >= 400))
  ((elapsed < 10000))
}

@test "--timeout is an alias of --wait" {
  hold held
  run -75 rl --timeout 0.2 held touch ran
  [ ! -e ran ]
}

@test "-E 9 -n while held gives 9" {
  hold held
  run -9 rl -E 9 -n held touch ran
  [ ! -e ran ]
}

@test "-E 0 -w 0.2 while held gives 0 without running the command" {
  hold held
  run -0 rl --conflict-exit-code 0 -w 0.2 held touch ran
  [ ! -e ran ]
}

@test "-E does not change the child's own status" {
  run -5 rl -E 9 free sh -c 'exit 5'
}

@test "non-executable COMMAND gives 126 with one line on stderr" {
  printf '#!/bin/sh\necho ran\n' >script
  chmod 644 script
  run -126 --separate-stderr rl name ./script
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: cannot run './script': "* ]]
  key_absent "$(lock_key 'name')"
}

@test "a directory as COMMAND gives 126" {
  mkdir dir
  run -126 rl name ./dir
}

@test "missing COMMAND gives 127 with one line on stderr" {
  run -127 --separate-stderr rl name ./no-such-command
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ "$stderr" = "rlock: cannot run './no-such-command': No such file or directory" ]
  key_absent "$(lock_key 'name')"
}

@test "COMMAND not found in PATH gives 127" {
  run -127 --separate-stderr rl name rlock-test-no-such-command-xyz
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == *"'rlock-test-no-such-command-xyz'"* ]]
}

@test "an error reply from redis (WRONGTYPE) gives 69 and leaves the key alone" {
  redis_cli set "$(lock_key 'odd')" not-a-hash >/dev/null
  run -69 --separate-stderr rl odd touch ran
  [ -z "$output" ]
  [[ $stderr == rlock:* ]]
  [ ! -e ran ]
  [ "$(redis_cli get "$(lock_key 'odd')")" = not-a-hash ]
}
