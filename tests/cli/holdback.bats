#!/usr/bin/env bats
#
# The restart hold-back (--restart-grace), made visible: a run that it delays
# or refuses says so on stderr without -v (once, and not with -q); status
# and doctor show it. Also: doctor and -v name the server and its version as
# the server reports them (Valkey: server_name and valkey_version), which
# tests/CMakeLists.txt runs again against each other server it finds.
#
# The file's server is seconds old: --restart-grace 1h holds every lock back
# for the whole test, 0 (common_setup) none.

# `run` sets stderr and output (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

load helpers

setup_file() { common_setup_file; }
teardown_file() { common_teardown_file; }
setup() { common_setup; }
teardown() {
  if [[ -d $BATS_TEST_TMPDIR/r ]]; then
    redis_stop "$BATS_TEST_TMPDIR/r"
  fi
  common_teardown
}

# The line a held-back run prints, up to the option (its value follows).
held_back_line() {
  printf '%s' "the Redis server at 127.0.0.1:$REDIS_PORT started [0-9]+s ago; no lock is granted for another [0-9hms]+ \\(--restart-grace $1: a holder from before a restart may still run\\)"
}

@test "-n held back: exit 75 and one line on stderr without -v (why, how long, the option); nothing with -q" {
  run -75 --separate-stderr rl -n --restart-grace 1h fresh touch ran
  [ -z "$output" ]
  [ ! -e ran ]
  echo "$stderr"
  ((${#stderr_lines[@]} == 1))
  [[ $stderr =~ ^"rlock: not acquired: 'fresh': "$(held_back_line 1h00m)$ ]]
  run -75 --separate-stderr rl -n -q --restart-grace 1h fresh touch ran
  [ -z "$stderr" ]
  # acquire -n alike; a lock held by someone is still silent with -n.
  run -75 --separate-stderr rl acquire -n --restart-grace 1h fresh
  [ -z "$output" ]
  ((${#stderr_lines[@]} == 1))
  [[ $stderr =~ ^"rlock: not acquired: 'fresh': "$(held_back_line 1h00m)$ ]]
  run -75 --separate-stderr rl acquire -n -q --restart-grace 1h fresh
  [ -z "$stderr" ]
  key_absent "$(lock_key fresh)"
  run -0 rl acquire fresh
  run -75 --separate-stderr rl -n fresh true
  [ -z "$stderr" ]
}

@test "-w held back: the line once without -v however many retries, then the deadline's; nothing with -q" {
  run -75 --separate-stderr rl -w 2.5s --restart-grace 1h fresh touch ran
  [ ! -e ran ]
  echo "$stderr"
  ((${#stderr_lines[@]} == 2))
  [[ ${stderr_lines[0]} =~ ^"rlock: waiting for 'fresh': "$(held_back_line 1h00m)$ ]]
  [[ ${stderr_lines[1]} == "rlock: gave up waiting for 'fresh' after 2.5s; the Redis server at "* ]]
  run -75 --separate-stderr rl -w 1s -q --restart-grace 1h fresh touch ran
  [ -z "$stderr" ]
  run -75 --separate-stderr rl acquire -w 1s --restart-grace 1h fresh
  [ -z "$output" ]
  [[ ${stderr_lines[0]} =~ ^"rlock: waiting for 'fresh': "$(held_back_line 1h00m)$ ]]
  # rlock wait: the lock is free, but not yet for the taking.
  run -75 --separate-stderr rl wait -w 1s --restart-grace 1h fresh
  ((${#stderr_lines[@]} == 1))
  [[ ${stderr_lines[0]} =~ ^"rlock: waiting for 'fresh': "$(held_back_line 1h00m)$ ]]
  run -75 --separate-stderr rl wait -q -w 1s --restart-grace 1h fresh
  [ -z "$stderr" ]
  key_absent "$(lock_key fresh)"
}

@test "a run mode waiter on a fresh server says once that it is held back, then runs when the grace is over" {
  own_redis
  export RLOCK_URL=redis://127.0.0.1:$REDIS_PORT/0
  run -0 --separate-stderr rl --restart-grace 3s fresh echo ran
  [ "$output" = ran ]
  echo "$stderr"
  ((${#stderr_lines[@]} == 1))
  [[ $stderr =~ ^"rlock: waiting for 'fresh': "$(held_back_line 3s)$ ]]
}
