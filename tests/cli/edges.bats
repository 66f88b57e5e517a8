#!/usr/bin/env bats
#
# Edge cases of the command line and of the process's surroundings: closed
# fds 0-2, a token in the environment that belongs to another lock, options
# given twice, and a server that announces a reply too large to hold.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  unset RLOCK_TOKEN RLOCK_NAME
}

# check_usage NEEDLE...: after `run -64 --separate-stderr`: nothing on stdout,
# one "rlock: " line on stderr that contains every NEEDLE, redis empty.
check_usage() {
  local needle
  echo "stdout: '$output'"
  echo "stderr: '$stderr'"
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == 'rlock: '* ]]
  for needle in "$@"; do
    [[ $stderr == *"$needle"* ]]
  done
  [ "$(dbsize)" = 0 ]
}

# ---- closed fds 0-2 ----------------------------------------------------------

# with_closed REDIRECTIONS ARG...: rlock ARGs with REDIRECTIONS (such as
# '>&-') applied inside, where `run` cannot undo them.
with_closed() {
  local redirections=$1
  shift
  timeout -k 5 "$RL_LIMIT" bash -c "exec \"\$@\" $redirections" _ "$RLOCK" "$@"
}

@test "stdout closed: acquire cannot print the token, releases the lock, exits 74" {
  run -74 --separate-stderr with_closed '>&-' acquire fdx
  echo "$stderr"
  [[ $stderr == *'cannot write'* ]]
  key_absent "$(lock_key 'fdx')"
}

@test "fds 0-2 all closed: acquire releases what it took and exits 74" {
  run -74 with_closed '<&- >&- 2>&-' acquire fdall
  key_absent "$(lock_key 'fdall')"
}

@test "stdout closed: status exits 74" {
  rl acquire st >/dev/null
  run -74 --separate-stderr with_closed '>&-' status
  echo "$stderr"
  [[ $stderr == *'cannot write'* ]]
}

@test "stderr closed: acquire -v -w waits for the holder and takes the lock, exit 0" {
  bg "$RLOCK" hs sleep 1
  wait_until 10 key_exists "$(lock_key 'hs')"
  # -v logs "waiting" while the lock is held: that line must go nowhere.
  run -0 with_closed '2>&-' acquire -v -w 10s hs
  [[ $output =~ ^[0-9a-f]{32}$ ]]
  [ "$(redis_cli hget "$(lock_key 'hs')" token)" = "$output" ]
}

# ---- $RLOCK_TOKEN belongs to $RLOCK_NAME -------------------------------------

@test "a nested release inside a job does not use the job's token: 64 saying whose it is" {
  run -0 --separate-stderr rl outer sh -c '
    "$1" acquire -t 1m inner >/dev/null
    "$1" release inner; echo "release: $?"
    "$1" release --force inner; echo "force: $?"' _ "$RLOCK"
  echo "$stderr"
  [ "$output" = "$(printf '%s\n' 'release: 64' 'force: 0')" ]
  [[ $stderr == *"--token: required; \$RLOCK_TOKEN is the token of 'outer' (\$RLOCK_NAME), not of 'inner'"* ]]
  key_absent "$(lock_key 'inner')"
}

@test "\$RLOCK_TOKEN without \$RLOCK_NAME is not used: extend, release, check exit 64" {
  local sub token
  token=$(rl acquire job)
  for sub in extend release check; do
    RLOCK_TOKEN=$token run -64 --separate-stderr rl "$sub" job
    echo "$sub: $stderr"
    [ -z "$output" ]
    [[ $stderr == *"\$RLOCK_NAME is not set"* ]]
  done
  RLOCK_NAME=job RLOCK_TOKEN=$token run -0 rl release job
  key_absent "$(lock_key 'job')"
}

# ---- options given twice, extra arguments --------------------------------------

@test "a valued option given twice takes the last value" {
  run -0 --separate-stderr rl -t 5s -t 40s twice sh -c 'redis-cli -s "$1" pttl "$RLOCK_KEY"' _ "$REDIS_SOCKET"
  echo "$output"
  ((output > 30000))
  run -0 --separate-stderr rl -c 'echo first' -c 'echo second' twice
  [ "$output" = second ]
  # --url is the exception: given several times it names a quorum of servers.
  run -64 --separate-stderr rl --url redis://127.0.0.1:1 --url "$RLOCK_URL" twice true
  [ "$stderr" = "rlock: --url: a quorum needs at least 3 servers, got 2" ]
  run -0 --separate-stderr rl acquire -t 5s -t 40s twice
  (($(redis_cli pttl "$(lock_key 'twice')") > 30000))
}

@test "acquire with two NAMEs: the second is an unexpected argument" {
  run -64 --separate-stderr rl acquire a b
  check_usage "unexpected argument 'b'"
}

@test "a flag given a value with = names the flag" {
  run -64 --separate-stderr rl -n=1 n true
  check_usage "-n: takes no value" "'-n=1'"
}

@test "an empty -c is refused before or after NAME" {
  run -64 --separate-stderr rl n -c ''
  check_usage "--command" "empty"
  run -64 --separate-stderr rl -c '' n
  check_usage "--command" "empty"
  run -64 --separate-stderr rl n --command=
  check_usage "--command" "empty"
}

@test "--once-per of more than 100 years is refused, 100 years is not" {
  run -64 --separate-stderr rl --once-per 1700000h n true
  check_usage "--once-per" "'1700000h'"
  run -0 --separate-stderr rl --once-per 876000h n true
}

# ---- replies too large -------------------------------------------------------

# A server that answers every command with the bytes of $1 (printf format).
HUGE_SERVER='
import os, socket, sys
reply, portfile = sys.argv[1].encode().decode("unicode_escape").encode("latin-1"), sys.argv[2]
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
while True:
    conn, _ = server.accept()
    conn.recv(65536)
    conn.sendall(reply)
    kept = conn
'

# huge_server REPLY: start it; sets HUGE_PORT.
huge_server() {
  local portfile=$BATS_TEST_TMPDIR/huge.port
  bg python3 -c "$HUGE_SERVER" "$1" "$portfile"
  wait_until 10 file_has "$portfile"
  HUGE_PORT=$(<"$portfile")
}

@test "a reply announcing 1.7 billion elements: 69, 'too large', nothing allocated" {
  huge_server '*1700000000\r\n'
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$HUGE_PORT" status
  echo "$stderr"
  [[ $stderr == "rlock: reply from 127.0.0.1:$HUGE_PORT too large: an array of 1700000000 elements"* ]]
  [ "${#stderr_lines[@]}" -eq 1 ]
}

@test "a reply announcing a 2 GB string: 69, 'too large'" {
  huge_server '$2000000000\r\nabc'
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$HUGE_PORT" acquire x
  echo "$stderr"
  [[ $stderr == "rlock: reply from 127.0.0.1:$HUGE_PORT too large: a string of 2000000000 bytes"* ]]
}
