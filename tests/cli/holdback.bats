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

# `run` sets stderr and output (SC2154); each test sets its own RLOCK_URL
# (SC2030/SC2031); the single-quoted scripts are the child's (SC2016).
# shellcheck disable=SC2154,SC2030,SC2031,SC2016

bats_require_minimum_version 1.5.0

load helpers

setup_file() { common_setup_file; }
teardown_file() { common_teardown_file; }
setup() { common_setup; }
teardown() {
  local dir
  for dir in "$BATS_TEST_TMPDIR"/r "$BATS_TEST_TMPDIR"/q[123]; do
    if [[ -d $dir ]]; then
      redis_stop "$dir"
    fi
  done
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

@test "status says when the server holds locks back: a line before the table, held_back_ms in --json; nothing when it does not" {
  run -1 --separate-stderr rl status --restart-grace 1h fresh
  echo "$output"
  [[ ${lines[0]} =~ ^"held back: "$(held_back_line 1h00m)$ ]]
  [[ ${lines[1]} == NAME* ]]
  run -1 --separate-stderr rl status --json --restart-grace 1h fresh
  echo "$output" >status.json
  (($(json_get status.json '[0,"held_back_ms"]') > 3500000))
  [ "$(json_get status.json '[0,"held"]')" = false ]
  # Listing with nothing held: said on stderr with the usual line.
  run -0 --separate-stderr rl status --restart-grace 1h
  [ -z "$output" ]
  [[ $stderr == *"held back: the Redis server at 127.0.0.1:$REDIS_PORT started "* ]]
  [[ $stderr == *"no locks held under prefix"* ]]
  # Grace over (0: off): no line, and null.
  run -1 --separate-stderr rl status fresh
  [[ ${lines[0]} == NAME* ]]
  run -1 --separate-stderr rl status --json fresh
  echo "$output" >status.json
  [[ $output != *held_back_ms* ]]
}

@test "doctor takes --restart-grace (and RLOCK_RESTART_GRACE): holdback warns while the server holds locks back, ok after; unknown when INFO is refused" {
  run -1 --separate-stderr rl doctor --restart-grace 1h
  echo "$output"
  [[ $output == *$'\n'"warn    holdback     127.0.0.1:$REDIS_PORT started "*" ago: locks are held back for "*" more (--restart-grace 3600s), since a holder from before a restart may still run; until then runs wait, and -n exits 75"* ]]
  RLOCK_RESTART_GRACE=1h run -1 --separate-stderr rl doctor --json
  echo "$output" >doctor.json
  [ "$(json_get doctor.json '["checks","holdback","status"]')" = '"warn"' ]
  (($(json_get doctor.json '["checks","holdback","values","held_back_ms"]') > 3500000))
  run --separate-stderr rl doctor --restart-grace 1s
  [[ $output == *$'\n'"ok      holdback     127.0.0.1:$REDIS_PORT has been up "*", longer than --restart-grace 1s: locks are not held back"* ]]
  # Off: no such check.
  run --separate-stderr rl doctor --restart-grace 0
  [[ $output != *holdback* ]]
  [[ $(redis_cli acl setuser noinfo reset on '>pw' '~*' '&*' +@all -info) == OK ]]
  run -1 --separate-stderr rl doctor --restart-grace 30s --url "redis://noinfo:pw@127.0.0.1:$REDIS_PORT/0"
  echo "$output"
  [[ $output == *$'\n'"unknown holdback     cannot tell when 127.0.0.1:$REDIS_PORT started (INFO refused ("*"): with --restart-grace 30s every run fails at once (exit 69)"*"allow INFO or set --restart-grace 0"* ]]
  run -64 --separate-stderr rl doctor --restart-grace soon
  [ "$stderr" = "rlock: --restart-grace: invalid duration 'soon' (use e.g. 500ms, 30s, 5m, 1h)" ]
}

# The name and version the server gives itself: INFO's server_name and
# <name>_version when it has them (Valkey), else Redis and redis_version.
server_label() {
  local info name version
  info=$(redis_cli info server | tr -d '\r')
  name=$(sed -n 's/^server_name://p' <<<"$info")
  if [[ -n $name ]]; then
    version=$(sed -n "s/^${name}_version://p" <<<"$info")
    printf '%s %s' "${name^}" "$version"
  else
    printf 'Redis %s' "$(sed -n 's/^redis_version://p' <<<"$info")"
  fi
}

@test "doctor and -v name the server and its version as it reports them (Valkey: server_name, valkey_version)" {
  local label
  label=$(server_label)
  echo "server: $label"
  [[ $label =~ ^(Redis|Valkey)" "[0-9]+\.[0-9]+ ]]
  if [[ $RLOCK_TEST_SERVER == *valkey* ]]; then
    [[ $label == Valkey* ]]
  fi
  run --separate-stderr rl doctor
  echo "$output"
  [[ ${lines[0]} == "ok      version      $label at 127.0.0.1:$REDIS_PORT ran a test script"* ]]
  run -0 --separate-stderr rl -v --restart-grace 1s -w 5s named true
  echo "$stderr"
  [[ $stderr == *"rlock: the server at 127.0.0.1:$REDIS_PORT is $label, up "* ]]
}

# three_servers: start three servers of this test's own (Q_PORTS), each with
# a user `noinfo` that may run anything but INFO, and leave the file's
# server as REDIS_*; QUORUM_URLS holds the --url of each as the default
# user.
three_servers() {
  local saved_dir=$REDIS_DIR saved_port=$REDIS_PORT saved_socket=$REDIS_SOCKET
  local saved_pidfile=$REDIS_PIDFILE i
  Q_PORTS=() Q_DIRS=()
  for i in 1 2 3; do
    redis_start "$BATS_TEST_TMPDIR/q$i" || return 1
    Q_PORTS+=("$REDIS_PORT")
    Q_DIRS+=("$BATS_TEST_TMPDIR/q$i")
    [[ $(redis-cli -p "$REDIS_PORT" acl setuser noinfo reset on '>pw' '~*' '&*' +@all -info) == OK ]] || return 1
  done
  export REDIS_DIR=$saved_dir REDIS_PORT=$saved_port REDIS_SOCKET=$saved_socket REDIS_PIDFILE=$saved_pidfile
}

# quorum_url USER-PER-SERVER...: RLOCK_URL for the three servers, server i
# logged in as the i-th word (default or noinfo).
quorum_url() {
  local i url=""
  local -a users=("$@")
  for i in 0 1 2; do
    if [[ ${users[i]} == noinfo ]]; then
      url+=" redis://noinfo:pw@127.0.0.1:${Q_PORTS[i]}/0"
    else
      url+=" redis://127.0.0.1:${Q_PORTS[i]}/0"
    fi
  done
  export RLOCK_URL=${url# }
}

no_key_on_quorum() {
  local port
  for port in "${Q_PORTS[@]}"; do
    [[ $(redis-cli -p "$port" exists "$(lock_key "$1")") == 0 ]] || return 1
  done
}

@test "quorum, INFO refused by every member with the grace on: 69 at once for run, -n, -w and acquire, naming INFO and what to do; nothing taken" {
  three_servers
  quorum_url noinfo noinfo noinfo
  local started=$SECONDS mode
  for mode in '' -n '-w 30s'; do
    # shellcheck disable=SC2086 # the mode is one or two words
    run -69 --separate-stderr rl $mode --restart-grace 30s job touch ran
    [ -z "$output" ]
    echo "$stderr"
    [[ $stderr == *"INFO refused"*"allow INFO or set --restart-grace 0"* ]]
  done
  run -69 --separate-stderr rl acquire --restart-grace 30s job
  [[ $stderr == *"INFO refused"* ]]
  ((SECONDS - started < 20))
  [ ! -e ran ]
  no_key_on_quorum job
  # And with the grace off, it works: INFO is needed only to judge it.
  run -0 --separate-stderr rl --restart-grace 0 job echo ran
  [ "$output" = ran ]
}

@test "quorum, INFO refused by one member: it never counts, the other two make the quorum once the grace is over; refused by two, 69 at once" {
  three_servers
  quorum_url noinfo default default
  # The servers are seconds old: held back first (said once, without -v),
  # then granted by the two that can say when they started.
  run -0 --separate-stderr rl --restart-grace 2s -w 20s job sh -c 'echo "$RLOCK_FENCE"'
  echo "$stderr"
  [[ $output =~ ^[0-9]+$ ]]
  # Said once, without -v: the member that cannot say when it started, or
  # the young ones.
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == "rlock: waiting for 'job': "*"--restart-grace"* ]]
  no_key_on_quorum job
  quorum_url noinfo noinfo default
  run -69 --separate-stderr rl --restart-grace 2s -w 20s job true
  echo "$stderr"
  [[ $stderr == *"INFO refused"*"allow INFO or set --restart-grace 0"* ]]
}
