#!/usr/bin/env bats
#
# The child: its environment, its stdio, its process group, and the release.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

# Prints the four RLOCK_* variables, one per line.
print_env='printf "%s\n" "$RLOCK_NAME" "$RLOCK_KEY" "$RLOCK_TOKEN" "$RLOCK_FENCE"'

@test "child gets RLOCK_NAME, RLOCK_KEY, RLOCK_TOKEN and RLOCK_FENCE" {
  run -0 --separate-stderr rl env-name sh -c "$print_env"
  [ "${#lines[@]}" -eq 4 ]
  [ "${lines[0]}" = env-name ]
  [ "${lines[1]}" = "$(lock_key 'env-name')" ]
  [[ ${lines[2]} =~ ^[0-9a-f]{32}$ ]]
  [[ ${lines[3]} =~ ^[0-9]+$ ]]
}

@test "RLOCK_KEY, RLOCK_TOKEN and RLOCK_FENCE match the lease in redis" {
  local sock=$REDIS_SOCKET
  run -0 --separate-stderr rl held sh -c '
    redis-cli -s "$1" hget "$RLOCK_KEY" token
    redis-cli -s "$1" hget "$RLOCK_KEY" fence
    echo "$RLOCK_TOKEN"
    echo "$RLOCK_FENCE"' sh "$sock"
  [ "${#lines[@]}" -eq 4 ]
  [ "${lines[0]}" = "${lines[2]}" ]
  [ "${lines[1]}" = "${lines[3]}" ]
}

@test "--prefix p: gives RLOCK_KEY p:{NAME}" {
  run -0 --separate-stderr rl --prefix p: pre sh -c "$print_env"
  [ "${lines[0]}" = pre ]
  [ "${lines[1]}" = 'p:{pre}' ]
  key_absent 'p:{pre}'
  key_absent "$(lock_key 'pre')"
}

@test "\$RLOCK_PREFIX gives RLOCK_KEY <prefix>{NAME}" {
  RLOCK_PREFIX=q: run -0 --separate-stderr rl pre sh -c "$print_env"
  [ "${lines[1]}" = 'q:{pre}' ]
}

@test "--prefix wins over \$RLOCK_PREFIX" {
  RLOCK_PREFIX=q: run -0 --separate-stderr rl --prefix p: pre sh -c "$print_env"
  [ "${lines[1]}" = 'p:{pre}' ]
}

@test "RLOCK_FENCE strictly increases over consecutive runs, RLOCK_TOKEN changes" {
  local prev_fence=-1 fence token
  local -A tokens=()
  for _ in 1 2 3 4 5; do
    run -0 --separate-stderr rl fenced sh -c 'echo "$RLOCK_FENCE $RLOCK_TOKEN"'
    read -r fence token <<<"$output"
    [[ $fence =~ ^[0-9]+$ ]]
    ((fence > prev_fence))
    [ -z "${tokens[$token]:-}" ]
    tokens[$token]=1
    prev_fence=$fence
  done
}

@test "RLOCK_FENCE increases after the lease was deleted from outside" {
  local first second
  run -0 rl fenced sh -c 'echo "$RLOCK_FENCE"'
  first=$output
  redis_cli del "$(lock_key 'fenced')" >/dev/null
  run -0 rl fenced sh -c 'echo "$RLOCK_FENCE"'
  second=$output
  ((second > first))
}

@test "stdout and stderr pass through untouched; rlock adds nothing" {
  run -0 --separate-stderr rl io sh -c 'echo out; echo err >&2; printf "no newline"'
  [ "$output" = $'out\nno newline' ]
  [ "$stderr" = err ]
}

@test "binary stdin and stdout pass through byte for byte" {
  head -c 65536 /dev/urandom >in.bin
  run -0 --separate-stderr rl io sh -c 'cat >out.bin' <in.bin
  cmp in.bin out.bin
  run -0 bash -c '"$1" io cat <in.bin >out2.bin' _ "$RLOCK"
  cmp in.bin out2.bin
}

@test "stdin reaches the child" {
  run -0 --separate-stderr rl io sh -c 'read -r a; read -r b; echo "$b $a"' <<<$'one\ntwo'
  [ "$output" = "two one" ]
}

@test "-c runs a shell command: -c 'echo a; exit 4'" {
  run -4 --separate-stderr rl name -c 'echo a; exit 4'
  [ "$output" = a ]
  [ -z "$stderr" ]
}

@test "-c before NAME works too" {
  run -4 --separate-stderr rl -c 'echo "$RLOCK_NAME"; exit 4' name
  [ "$output" = name ]
}

@test "--command is -c" {
  run -0 --separate-stderr rl name --command 'echo long'
  [ "$output" = long ]
}

@test "flags after COMMAND go to the child" {
  run -0 --separate-stderr rl n printf '%s\n' -l --ttl
  [ "${#lines[@]}" -eq 2 ]
  [ "${lines[0]}" = -l ]
  [ "${lines[1]}" = --ttl ]
  [ -z "$stderr" ]
}

@test "rlock options after NAME are the child's" {
  run -0 --separate-stderr rl n sh -c 'printf "%s\n" "$@"' sh -n -w 1 -t abc -- x
  [ "$output" = $'-n\n-w\n1\n-t\nabc\n--\nx' ]
}

@test "-- ends rlock's options" {
  run -0 --separate-stderr rl -t 10s -- n echo hi
  [ "$output" = hi ]
}

@test "a NAME equal to a subcommand: rlock -- status echo hi" {
  run -0 --separate-stderr rl -- status sh -c 'echo hi; echo "$RLOCK_NAME"'
  [ "$output" = $'hi\nstatus' ]
}

@test "a NAME with spaces and UTF-8 works" {
  run -0 --separate-stderr rl 'déploy prod ✓' sh -c 'echo "$RLOCK_NAME|$RLOCK_KEY"'
  [ "$output" = 'déploy prod ✓|rlock:{déploy prod ✓}' ]
}

@test "the lock key is gone after a successful run" {
  run -0 rl gone sh -c 'test "$(redis-cli -s "$1" exists "$RLOCK_KEY")" = 1' sh "$REDIS_SOCKET"
  key_absent "$(lock_key 'gone')"
  # At most the last fence stays, for a second after the acquisition.
  [ "$(redis_cli --scan | grep -cvxF "$(fence_key 'gone')")" = 0 ]
  (($(redis_cli pttl "$(fence_key 'gone')") <= 1000))
}

@test "the lock key is gone after a failed run" {
  run -3 rl gone sh -c 'exit 3'
  key_absent "$(lock_key 'gone')"
}

@test "the lock key is gone after the child died of a signal" {
  run -143 rl gone sh -c 'kill -TERM $$'
  key_absent "$(lock_key 'gone')"
}

@test "the lock key is gone after 127" {
  run -127 rl gone ./no-such-command
  key_absent "$(lock_key 'gone')"
}

@test "the lock can be taken again right after a run" {
  run -0 rl again true
  run -0 rl -n again true
}

@test "the child leads its own process group" {
  run -0 --separate-stderr rl pg sh -c 'ps -o pid=,pgid= -p $$'
  local pid pgid
  read -r pid pgid <<<"$output"
  [ "$pid" = "$pgid" ]
}

@test "processes the child left in its group are killed before the release" {
  run -0 rl left sh -c 'sleep 100 >/dev/null 2>&1 </dev/null & echo $! >left.pid'
  local pid
  pid=$(<left.pid)
  track "$pid"
  wait_until 3 not running "$pid"
}

@test "kill -9 of rlock: the watchdog kills the child's sh and sleep" {
  local rlock_pid sh_pid sleep_pid rc=0
  bg "$RLOCK" k9 sh -c 'sleep 100; true'
  rlock_pid=$BG_PID
  wait_until 10 key_exists "$(lock_key 'k9')"
  # The child sh is rlock's child; find it, then its sleep.
  find_sh() { sh_pid=$(pgrep -P "$rlock_pid" -x sh); [[ -n $sh_pid ]]; }
  wait_until 10 find_sh
  find_sleep() { sleep_pid=$(pgrep -P "$sh_pid" -x sleep); [[ -n $sleep_pid ]]; }
  wait_until 10 find_sleep
  track "$sh_pid"
  track "$sleep_pid"
  kill -KILL "$rlock_pid"
  reap "$rlock_pid" 10 || rc=$?
  [ "$rc" -eq 137 ]
  # "within ~1 s": poll for up to 3 s.
  wait_until 3 not running "$sh_pid"
  wait_until 3 not running "$sleep_pid"
}

@test "-v prints lifecycle lines on stderr (acquired, released)" {
  run -0 --separate-stderr rl -v verbose sh -c 'echo child'
  [ "$output" = child ]
  [[ $stderr == *acquired* ]]
  [[ $stderr == *released* ]]
  local line
  for line in "${stderr_lines[@]}"; do
    [[ $line == rlock:* ]]
  done
}

@test "-q prints nothing for a normal run" {
  run -0 --separate-stderr rl -q quiet sh -c 'echo child'
  [ "$output" = child ]
  [ -z "$stderr" ]
}

@test "default verbosity prints nothing for a normal run" {
  run -0 --separate-stderr rl plain true
  [ -z "$output" ]
  [ -z "$stderr" ]
}
