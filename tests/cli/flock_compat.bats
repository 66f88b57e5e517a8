#!/usr/bin/env bats
#
# flock(1) command lines keep working when only the word changes: each line
# of a table runs through util-linux flock and through rlock, with the lock
# free and with it held, and both must agree on whether the command ran and
# on the exit status, up to the differences rlock makes on purpose (see
# "Coming from flock" in rlock(1)): a lock that stays busy exits 75, not 1,
# unless -E says otherwise.

# The rows are expanded with eval (SC2016: $LOCK and $MARK on purpose);
# `run` sets output and stderr (SC2154); RLOCK comes from helpers (SC2153).
# shellcheck disable=SC2016,SC2154,SC2153

bats_require_minimum_version 1.5.0

load helpers

# Lines that never wait: run with the lock free and with it held. $LOCK is
# the lock (a path, as flock takes it); the command creates $MARK.
NONBLOCKING_ROWS=(
  '-n "$LOCK" touch "$MARK"'
  '--nb "$LOCK" touch "$MARK"'
  '--nonblock "$LOCK" touch "$MARK"'
  '--nonblocking "$LOCK" touch "$MARK"'
  '-w 0.3 "$LOCK" touch "$MARK"'
  '--timeout 0.3 "$LOCK" touch "$MARK"'
  '--timeout=0.3 "$LOCK" touch "$MARK"'
  '-w 0 "$LOCK" touch "$MARK"'
  '-E 42 -n "$LOCK" touch "$MARK"'
  '-n -E 0 "$LOCK" touch "$MARK"'
  '--conflict-exit-code 42 -w 0.3 "$LOCK" touch "$MARK"'
  '--conflict-exit-code=3 --nb "$LOCK" touch "$MARK"'
  '-x -n "$LOCK" touch "$MARK"'
  '-e -n "$LOCK" touch "$MARK"'
  '--exclusive --nonblock "$LOCK" touch "$MARK"'
  '-xn "$LOCK" touch "$MARK"'
  '-o -n "$LOCK" touch "$MARK"'
  '--close -w 0.3 "$LOCK" touch "$MARK"'
  '-n "$LOCK" -c "touch $MARK; exit 3"'
  '-n "$LOCK" --command "touch $MARK; exit 4"'
  '-n "$LOCK" sh -c "touch $MARK; exit 5"'
  '-n -E 7 "$LOCK" -c "touch $MARK"'
  '-w .3 "$LOCK" touch "$MARK"'
  '--timeout=.3 "$LOCK" touch "$MARK"'
  '-n -w 10 "$LOCK" touch "$MARK"'
  '-w 10 -n "$LOCK" touch "$MARK"'
  '--nonblock=yes "$LOCK" touch "$MARK"'
  '--nonblocking=1 "$LOCK" touch "$MARK"'
)

# Lines that wait for the lock: run with the lock free only.
WAITING_ROWS=(
  '"$LOCK" touch "$MARK"'
  '-x "$LOCK" touch "$MARK"'
  '-e "$LOCK" touch "$MARK"'
  '--exclusive "$LOCK" touch "$MARK"'
  '-o "$LOCK" touch "$MARK"'
  '--close "$LOCK" touch "$MARK"'
  '-w 5 "$LOCK" touch "$MARK"'
  '--timeout 5 "$LOCK" touch "$MARK"'
  '"$LOCK" -c "touch $MARK; exit 3"'
  '"$LOCK" --command "touch $MARK; exit 3"'
  '"$LOCK" -c "touch $MARK; kill -TERM \$\$"'
  '"$LOCK" sh -c "touch $MARK; exit 2" ignored-arg'
  '-x -o -E 9 "$LOCK" -c "touch $MARK; exit 1"'
)

setup() {
  common_setup
  mkdir -p "$BATS_TEST_TMPDIR/var/lock"
  LOCK=$BATS_TEST_TMPDIR/var/lock/report.lock
  MARK=$BATS_TEST_TMPDIR/ran
}

# run_line TOOL ROW: runs ROW with TOOL (flock or rlock) and prints
# "STATUS ran|skipped".
run_line() {
  local tool=$1 status=0 ran=skipped
  local -a args
  eval "args=($2)"
  rm -f "$MARK"
  timeout -k 5 "$RL_LIMIT" env --default-signal "$tool" "${args[@]}" \
    >"$BATS_TEST_TMPDIR/stdout" 2>/dev/null || status=$?
  [[ -e $MARK ]] && ran=ran
  [[ -s $BATS_TEST_TMPDIR/stdout ]] && ran="$ran, with output"
  echo "$status $ran"
}

# expected_of FLOCK_RESULT MODE ROW: what rlock must do, given what flock did.
expected_of() {
  local status=${1%% *} rest=${1#* }
  if [[ $2 == busy && $status == 1 && $3 != *-E* && $3 != *--conflict-exit-code* ]]; then
    status=75 # busy is 75 in rlock unless -E, 1 in flock
  fi
  echo "$status $rest"
}

# compare MODE ROW...: every ROW run by both must match; prints the others.
compare() {
  local mode=$1 row flock_result rlock_result expected mismatches=0
  shift
  for row in "$@"; do
    flock_result=$(run_line flock "$row")
    rlock_result=$(run_line "$RLOCK" "$row")
    expected=$(expected_of "$flock_result" "$mode" "$row")
    if [[ $rlock_result != "$expected" ]]; then
      echo "lock $mode: $row"
      echo "  flock: $flock_result; rlock: $rlock_result; expected $expected"
      mismatches=$((mismatches + 1))
    fi
  done
  ((mismatches == 0))
}

# hold_both: keep $LOCK held by flock (the file) and by rlock (the NAME).
hold_both() {
  bg flock "$LOCK" sleep 60
  bg "$RLOCK" "$LOCK" sleep 60
  wait_until 10 not flock -n "$LOCK" true
  wait_until 10 key_exists "$(lock_key "$LOCK")"
}

@test "flock lines that never wait, lock free: same exit status, command run" {
  compare free "${NONBLOCKING_ROWS[@]}"
}

@test "flock lines that never wait, lock held: the command never runs; busy is 75 unless -E" {
  hold_both
  compare busy "${NONBLOCKING_ROWS[@]}"
}

@test "flock lines that wait, lock free: same exit status, command run" {
  compare free "${WAITING_ROWS[@]}"
}

@test "the table is not vacuous: each mode ran and skipped as flock does" {
  # The comparison above could pass with both tools failing alike; check
  # flock itself behaves as the table assumes.
  [ "$(run_line flock '-n "$LOCK" touch "$MARK"')" = "0 ran" ]
  hold_both
  [ "$(run_line flock '-n "$LOCK" touch "$MARK"')" = "1 skipped" ]
  [ "$(run_line "$RLOCK" '-n "$LOCK" touch "$MARK"')" = "75 skipped" ]
  [ "$(run_line "$RLOCK" '-E 42 -w 0.3 "$LOCK" touch "$MARK"')" = "42 skipped" ]
}

@test "-c runs \$SHELL -c, as flock does; /bin/sh without it" {
  local row='"$LOCK" -c "[[ 1 == 1 ]] && touch $MARK && echo \$0"'
  [ "$(SHELL=/bin/bash run_line flock "$row")" = "0 ran, with output" ]
  [ "$(SHELL=/bin/bash run_line "$RLOCK" "$row")" = "0 ran, with output" ]
  SHELL=/bin/bash run -0 rl "$LOCK" -c 'echo $0'
  [ "$output" = /bin/bash ]
  run -0 env -u SHELL "$RLOCK" "$LOCK" -c 'echo $0'
  [ "$output" = /bin/sh ]
}

@test "-n wins over -w, as in flock: on a held lock, 75 at once and nothing on stderr" {
  hold_both
  run -75 --separate-stderr rl -n -w 10 "$LOCK" true
  [ -z "$stderr" ]
  run -75 --separate-stderr rl -w 10 -n "$LOCK" true
  [ -z "$stderr" ]
}

@test "a path NAME is a name: no file is made, the key holds it as written" {
  run -0 rl "$LOCK" sh -c 'echo "$RLOCK_NAME $RLOCK_KEY"'
  [ "$output" = "$LOCK $(lock_key "$LOCK")" ]
  [ ! -e "$LOCK" ]
  bg "$RLOCK" /var/lock/report.lock sleep 60
  wait_until 10 key_exists "$(lock_key /var/lock/report.lock)"
  run -0 --separate-stderr rl status --wide /var/lock/report.lock
  [[ $output == *"/var/lock/report.lock"* ]]
  run -75 rl -n /var/lock/report.lock true
}

@test "flock options rlock refuses say what to use instead, run nothing, leave no lock" {
  local option
  for option in -u --unlock -F --no-fork; do
    run -64 --separate-stderr rl "$option" "$LOCK" touch "$MARK"
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == "rlock: $option: "* ]]
    [ ! -e "$MARK" ]
  done
  run -64 --separate-stderr rl -u "$LOCK" touch "$MARK"
  [[ $stderr == *"rlock release NAME"* ]]
  run -64 --separate-stderr rl --no-fork "$LOCK" touch "$MARK"
  [[ $stderr == *"renew the lease"* ]]
  [ "$(dbsize)" -eq 0 ]
}

# Lines around a shared (read) hold: flock -s and rlock --shared.
SHARED_ROWS=(
  '-s -n "$LOCK" touch "$MARK"'
  '--shared --nb "$LOCK" touch "$MARK"'
  '-s -w 0.3 "$LOCK" -c "touch $MARK; exit 3"'
  '-n "$LOCK" touch "$MARK"'
  '-x -n "$LOCK" touch "$MARK"'
  '-e -w 0.3 "$LOCK" touch "$MARK"'
)

@test "flock -s and --shared: shared holders run together, an exclusive one waits, as in flock" {
  compare free "${SHARED_ROWS[@]}"
  bg flock -s "$LOCK" sleep 60
  bg "$RLOCK" -s "$LOCK" sleep 60
  wait_until 10 not flock -n "$LOCK" true
  wait_until 10 key_exists "$(lock_key "$LOCK")"
  compare busy "${SHARED_ROWS[@]}"
  # Not vacuous: the shared rows ran and the exclusive ones did not.
  [ "$(run_line "$RLOCK" '-s -n "$LOCK" touch "$MARK"')" = "0 ran" ]
  [ "$(run_line "$RLOCK" '-x -n "$LOCK" touch "$MARK"')" = "75 skipped" ]
}

@test "flock's descriptor form (flock -n 9) is a usage error that points to the man page" {
  run -64 --separate-stderr rl -n 9
  [ -z "$output" ]
  [ "$stderr" = "rlock: missing COMMAND after NAME '9'; flock's FD form has no counterpart in rlock: see 'Coming from flock' in rlock(1)" ]
}

@test "differences on purpose: a command that cannot run is 127/126 (flock: 69)" {
  run -69 flock "$LOCK" ./not-there
  run -127 rl "$LOCK" ./not-there
  touch plain-file
  run -69 flock "$LOCK" ./plain-file
  run -126 rl "$LOCK" ./plain-file
}

@test "differences on purpose: -w that runs out prints one line, -q none (flock: none)" {
  hold_both
  run -1 --separate-stderr flock -w 0.3 "$LOCK" true
  [ -z "$stderr" ]
  run -75 --separate-stderr rl -w 0.3 "$LOCK" true
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: gave up waiting for '$LOCK' after 300ms; held by "* ]]
  run -75 --separate-stderr rl -q -w 0.3 "$LOCK" true
  [ -z "$stderr" ]
  [ -z "$output" ]
}
