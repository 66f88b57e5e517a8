#!/usr/bin/env bats
#
# rlock on a real Redis Sentinel (tests/lib/topology.bash): the
# redis+sentinel:// URL and its errors, replica confirmation (--replicas),
# and failovers (kill -9 of the master, a frozen "zombie" master) that must
# never leave two holders.
#
# The safety checks trust nothing in rlock. Each command appends
# $EPOCHREALTIME to a file of its own every 20 ms while it runs (a
# heartbeat), and the intervals [first beat, last beat] of different runs
# must not intersect; the contention test uses a mkdir critical section. An
# interval misses at most one period at either end, so an overlap shorter
# than 20 ms could go unseen; a holder that outlives its lease by a renewal
# period (a third of the TTL) cannot.
#
# Topologies, started side by side in setup_file:
#   shared  a master, 2 replicas, 3 sentinels, used in file order: the tests
#           that change nothing, then the frozen replicas, then three zombie
#           masters (each comes back as a replica; the next test waits until
#           the sentinels have demoted it, about 8 s), then the fence test,
#           which kills two masters.
#   kill    the same shape, for the double kill -9 test alone.
#   lone    a master without replicas and one sentinel: after a kill -9 the
#           sentinel names the dead master for good.
#

# Child scripts are single-quoted on purpose (SC2016); `run` sets output and
# lines (SC2154); tests that use a topology of their own point RLOCK_URL at
# it, which shellcheck takes for a subshell's change (SC2030, SC2031).
# shellcheck disable=SC2016,SC2154,SC2030,SC2031

bats_require_minimum_version 1.5.0

load ../cli/helpers
load ../cli/heartbeat
load ../lib/contention
# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  export SHARED_DIR=$BATS_FILE_TMPDIR/shared
  export KILL_DIR=$BATS_FILE_TMPDIR/kill
  export LONE_DIR=$BATS_FILE_TMPDIR/lone
  # The shared one last: its variables are the ones exported.
  start_topologies "bring-up of three sentinel topologies" \
    'sentinel_start "$KILL_DIR" 2 3' 'sentinel_start "$LONE_DIR" 0 1' \
    'sentinel_start "$SHARED_DIR" 2 3'
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  topology_setup || return
  export RLOCK_URL=$RLOCK_SENTINEL_URL
}

teardown() {
  topology_teardown
}

# freeze PORT / thaw PORT: SIGSTOP / SIGCONT the server on PORT; teardown
# continues whatever a test froze.
freeze() {
  echo "$1" >>"$FROZEN_FILE"
  topology_freeze "$1"
}
thaw() {
  topology_thaw "$1"
}

# replicas_now DIR: the running data nodes of DIR other than the master
# the sentinels name, one a line.
replicas_now() {
  local master
  master=$(sentinel_master_port "$1") || return 1
  topology_ports "$1" node running | grep -vx "$master"
}

# still_waiting PID: background rlock PID has not exited yet.
still_waiting() {
  running "$1" && return 0
  echo "rlock (pid $1) is no longer waiting: $(tail -n 1 "$BG_ERR")" >&2
  return 1
}

# role_is PORT ROLE: the server on PORT answers ROLE with ROLE first.
role_is() {
  [[ $(topology_role "$1") == "$2" ]]
}

# --- the URL -----------------------------------------------------------------

@test "a run and rlock status through the sentinel URL: the lock is on the master, a replica confirmed it" {
  local master key n port token
  master=$(sentinel_master_port "$SHARED_DIR")
  key=$(lock_key plain)
  # While the command runs: the key on the master, and on how many replicas.
  run -0 rl plain bash -c "
    redis-cli -h 127.0.0.1 -p $master exists '$key'
    n=0
    for p in $SENTINEL_REPLICA_PORTS; do
      n=\$((n + \$(redis-cli -h 127.0.0.1 -p \$p exists '$key')))
    done
    echo \$n"
  [[ ${lines[0]} == 1 ]]
  ((lines[1] >= 1))
  [[ $(exists_on "$key" "$master") == 0 ]]

  bg "$RLOCK" -t 20s held sleep 30
  wait_until 10 held_on "$(lock_key held)" "$master"
  run -0 rl status
  [[ ${lines[0]} == "sentinel: master 'mymaster' 127.0.0.1:$master (3 of 3 sentinels agree); replicas "* ]]
  [[ ${lines[2]} == "held "*"$(hostname)"*"sleep 30" ]]
  rl status --json >status.json
  token=$(topology_cli "$master" hget "$(lock_key held)" token)
  [[ -n $token && $(json_get status.json '[0,"token"]') == "\"$token\"" ]]
  [[ $(json_get status.json '[0,"name"]') == '"held"' ]]
  n=$(json_len status.json '[]')
  ((n == 1))
  for port in $SENTINEL_PORTS; do
    [[ $(topology_role "$port") == sentinel ]]
  done
}

@test "--compat string through the sentinel URL: the key NAME on the master and a replica, gone after" {
  local master
  master=$(sentinel_master_port "$SHARED_DIR")
  run -0 rl --compat string compat-job bash -c "
    redis-cli -h 127.0.0.1 -p $master type compat-job
    n=0
    for p in $SENTINEL_REPLICA_PORTS; do
      n=\$((n + \$(redis-cli -h 127.0.0.1 -p \$p exists compat-job)))
    done
    echo \$n"
  [[ ${lines[0]} == string ]]
  ((lines[1] >= 1))
  [[ $(exists_on compat-job "$master") == 0 ]]
}

@test "a master the sentinels do not know: 69 naming each sentinel; no sentinel reachable: 69; a malformed sentinel URL: 64" {
  local port url p1 p2
  url=${RLOCK_SENTINEL_URL%/*}/nosuch
  run -69 rl --url "$url" wrongname touch ran
  echo "$output"
  ((${#lines[@]} == 1))
  [[ $output == "rlock: "*"'nosuch'"* ]]
  for port in $SENTINEL_PORTS; do
    [[ $output == *"127.0.0.1:$port"* ]]
  done
  [[ ! -e ran ]]

  p1=$(closed_port)
  p2=$(closed_port)
  RLOCK_URL="redis+sentinel://127.0.0.1:$p1,127.0.0.1:$p2/mymaster" run -69 rl unreachable touch ran
  echo "$output"
  ((${#lines[@]} == 1))
  [[ $output == "rlock: "*"127.0.0.1:$p1"*"127.0.0.1:$p2"* ]]
  [[ ! -e ran ]]

  port=${SENTINEL_PORTS%% *}
  for url in "redis+sentinel://127.0.0.1:$port" "redis+sentinel://127.0.0.1:$port/" \
    "redis+sentinel://127.0.0.1:$port,,127.0.0.1:$port/mymaster" \
    "redis+sentinel:///mymaster" "redis+sentinel://127.0.0.1:0/mymaster" \
    "redis+sentinel://127.0.0.1:$port/mymaster/x"; do
    run -64 rl --url "$url" malformed touch ran
    echo "$url: $output"
    [[ $output == "rlock: --url: invalid URL"* ]]
    RLOCK_URL=$url run -64 rl malformed touch ran
    run -64 rl status --url "$url"
  done
  [[ ! -e ran ]]
}

@test "contention: 8 processes x 25 runs on the sentinel URL: no overlap, counter 200, fences increase" {
  local start=$EPOCHREALTIME
  contend "$BATS_TEST_TMPDIR/cs" 8 25 "$RLOCK" contended
  note "contention, 200 runs: $(elapsed "$start") s"
  contention_ok "$BATS_TEST_TMPDIR/cs" 200
  [[ $(exists_on "$(lock_key contended)" "$(sentinel_master_port "$SHARED_DIR")") == 0 ]]
}

# --- replica confirmation ----------------------------------------------------

@test "replicas frozen around the acquire: by default the command never runs (69); with --replicas 0 it does" {
  local master key port
  local -a replicas
  sentinel_wait_ready "$SHARED_DIR"
  master=$(sentinel_master_port "$SHARED_DIR")
  mapfile -t replicas < <(replicas_now "$SHARED_DIR")
  ((${#replicas[@]} == 2))
  key=$(lock_key frozen)
  for port in "${replicas[@]}"; do
    freeze "$port"
  done
  run -69 rl -w 2s frozen touch ran
  echo "$output"
  [[ $output == *"0 of 1 replicas of 127.0.0.1:$master"* ]]
  [[ ! -e ran ]]
  # The unconfirmed acquire was undone.
  [[ $(exists_on "$key" "$master") == 0 ]]
  # The contrast: the same with no confirmation asked for.
  run -0 rl --replicas 0 -w 2s frozen touch ran
  [[ -e ran ]]
  for port in "${replicas[@]}"; do
    thaw "$port"
  done
}

@test "--compat string, replicas frozen around the acquire: the command never runs (69), the key undone" {
  local master port
  local -a replicas
  sentinel_wait_ready "$SHARED_DIR"
  master=$(sentinel_master_port "$SHARED_DIR")
  mapfile -t replicas < <(replicas_now "$SHARED_DIR")
  ((${#replicas[@]} == 2))
  for port in "${replicas[@]}"; do
    freeze "$port"
  done
  run -69 rl --compat string -w 2s compat-frozen touch ran
  echo "$output"
  [[ $output == *"0 of 1 replicas of 127.0.0.1:$master"* ]]
  [[ ! -e ran ]]
  [[ $(exists_on compat-frozen "$master") == 0 ]]
  for port in "${replicas[@]}"; do
    thaw "$port"
  done
}

# The first acquire's "unconfirmed" is a failover under way, not a wrong
# URL: it is retried until -w ends (a bug found here: it gave 69 at once).
@test "an acquire the replicas did not confirm is retried until -w ends: replicas thawed during the wait, the command runs" {
  local port r start rc=0
  local -a replicas
  sentinel_wait_ready "$SHARED_DIR"
  mapfile -t replicas < <(replicas_now "$SHARED_DIR")
  ((${#replicas[@]} == 2))
  for port in "${replicas[@]}"; do
    freeze "$port"
  done
  start=$EPOCHREALTIME
  bg "$RLOCK" -v -w 15s retried touch ran
  r=$BG_PID
  # Longer than --replicas-timeout: an attempt was refused by now.
  sleep 2
  still_waiting "$r"
  for port in "${replicas[@]}"; do
    thaw "$port"
  done
  reap "$r" 20 || rc=$?
  note "exit $rc after $(elapsed "$start") s: $(tail -n 1 "$BG_ERR")"
  cat "$BG_ERR"
  ((rc == 0))
  [[ -e ran ]]
}

# --- failovers ---------------------------------------------------------------

@test "kill -9 of the master during a hold, twice: the run goes on or ends (70) before a waiter's command starts, never both" {
  local start=$EPOCHREALTIME
  sentinel_export "$KILL_DIR"
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  kill_round "$KILL_DIR" 1
  sentinel_wait_ready "$KILL_DIR"
  # The waiter with --replicas 0: after the first kill the new master has
  # one replica, the second makes it the last node standing, with none,
  # which the default refuses.
  kill_round "$KILL_DIR" 2 --replicas 0
  note "two kill rounds: $(elapsed "$start") s"
}

# The zombie: a master frozen under a holder comes back after the failover
# and takes writes for a while until the sentinels demote it.
@test "zombie master: SIGSTOP under a holder, failover, a second holder on the new master, SIGCONT: the first command was stopped before the second's started" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 ev1=$BATS_TEST_TMPDIR/ev1
  local ev2=$BATS_TEST_TMPDIR/ev2 r1 r2 pgid old new frozen_at
  sentinel_wait_ready "$SHARED_DIR"
  bg "$RLOCK" -t 2s --events "$ev1" zombie bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev1" renewed
  old=$(sentinel_master_port "$SHARED_DIR")
  freeze "$old"
  frozen_at=$EPOCHREALTIME
  new=$(sentinel_wait_failover "$SHARED_DIR" "$old")
  note "failover from the frozen $old to $new in $(elapsed "$frozen_at") s"
  bg "$RLOCK" -t 3s -w 30s --events "$ev2" zombie bash -c "$(hold_script "$hb2" 3)"
  r2=$BG_PID
  wait_until 10 beating "$hb2"
  child_group "$hb2" >/dev/null
  # The second holder's lease began after the first's ended.
  (($(lease_start "$ev1") + 2000000 < $(first_beat "$hb2")))
  thaw "$old"
  exits_with 70 "$r1"
  wait_until 3 group_dead "$pgid"
  reaped 0 "$r2" 15
  no_overlap "$hb1" "$hb2"
  before "$(last_beat "$hb1")" "$(($(lease_start "$ev1") + 2000000))" \
    "the first holder's last heartbeat vs its lease's end"
  (($(span_ms "$hb2") >= 2900))
}

# The zombie back while the holder still counts on its lease: the renewal
# the holder sent to the frozen master is answered once it thaws, and the
# zombie keeps taking writes for seconds, while the copy of the lock on the
# new master runs out unless a renewal reaches it. Without replica
# confirmation the holder would keep renewing on the zombie past the real
# lease and the waiter would start beside it.
@test "zombie master back before the holder's lease ends: what it confirms does not count; the holder goes on or ends before the waiter's command starts" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 ev1=$BATS_TEST_TMPDIR/ev1
  local r1 r2 pgid old new frozen_at rc1=0
  sentinel_wait_ready "$SHARED_DIR"
  # TTL 6s: renewals every 2s, the kill about 4.9s after the last one, later
  # than the failover (about 3s).
  bg "$RLOCK" -t 6s --events "$ev1" zombie bash -c "$(hold_script "$hb1" 12)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev1" renewed
  old=$(sentinel_master_port "$SHARED_DIR")
  freeze "$old"
  frozen_at=$EPOCHREALTIME
  new=$(sentinel_wait_failover "$SHARED_DIR" "$old")
  bg "$RLOCK" -t 3s -w 30s zombie bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  thaw "$old"
  note "failover from the frozen $old to $new, thawed after $(elapsed "$frozen_at") s"
  reap "$r1" 20 || rc1=$?
  reaped 0 "$r2" 30
  note "the holder exited $rc1; renew-failed: $(grep '"renew-failed"' "$ev1" |
    sed -E 's/.*"error":"([^"]*)".*/\1/' | sort | uniq -c | tr '\n' ';')"
  kept_or_lost "$rc1" "$pgid" "$hb1" "$ev1" 6000 12 "$hb2"
}

# A double holder found here: a waiter kept the connection it opened
# before the freeze, so once the zombie thawed its attempts went there, and
# `--replicas auto` read 0 replicas from the zombie. A step that must reach
# the master now asks the sentinels first on a connection that is not new.
@test "zombie master: a waiter connected before the freeze and a run started after the failover never hold at once" {
  local hbh=$BATS_TEST_TMPDIR/hb.holder hbw=$BATS_TEST_TMPDIR/hb.waiter
  local hbl=$BATS_TEST_TMPDIR/hb.late evh=$BATS_TEST_TMPDIR/ev.holder
  local evw=$BATS_TEST_TMPDIR/ev.waiter rh rw rlate old new rch=0 rcw=0
  sentinel_wait_ready "$SHARED_DIR"
  # TTL 3s: the holder cannot renew through the failover and ends (70); the
  # lock on the new master is free about when the zombie thaws.
  bg "$RLOCK" -t 3s --events "$evh" zombie2 bash -c "$(hold_script "$hbh" 10)"
  rh=$BG_PID
  wait_until 10 beating "$hbh"
  child_group "$hbh" >/dev/null
  wait_until 5 has_event "$evh" renewed
  # The waiter: connected to the master that is about to freeze.
  bg "$RLOCK" -v -t 6s -w 40s --events "$evw" zombie2 bash -c "$(hold_script "$hbw" 3)"
  rw=$BG_PID
  wait_until 5 has_event "$evw" waiting
  old=$(sentinel_master_port "$SHARED_DIR")
  freeze "$old"
  new=$(sentinel_wait_failover "$SHARED_DIR" "$old")
  # A run started after the failover: the sentinels send it to $new.
  bg "$RLOCK" -t 6s -w 40s zombie2 bash -c "$(hold_script "$hbl" 8)"
  rlate=$BG_PID
  thaw "$old"
  reap "$rh" 30 || rch=$?
  reap "$rw" 40 || rcw=$?
  reaped 0 "$rlate" 40
  note "failover $old -> $new; the holder exited $rch, the waiter $rcw"
  grep -h 'confirmed by any\|lost lock' "$BATS_TEST_TMPDIR"/bg.*.err || :
  no_overlap "$hbh" "$hbw" "$hbl"
}

@test "fences keep increasing across two failovers (kill -9 of the master)" {
  local round old new start=$EPOCHREALTIME
  local -a options=()
  : >fences
  for round in 1 2 3; do
    sentinel_wait_ready "$SHARED_DIR"
    note "round $round: topology ready after $(elapsed "$start") s"
    # After two kills the master left has no replica, which the default
    # refuses: what is tested there is the fence.
    ((round < 3)) || options=(--replicas 0)
    for _ in 1 2 3; do
      run -0 rl "${options[@]}" -w 10s fenced sh -c 'echo "$RLOCK_FENCE" >>fences'
    done
    ((round < 3)) || break
    echo "failover $round" >>fences
    old=$(sentinel_master_port "$SHARED_DIR")
    topology_kill "$old"
    start=$EPOCHREALTIME
    new=$(sentinel_wait_failover "$SHARED_DIR" "$old")
    note "round $round: failover from $old to $new in $(elapsed "$start") s"
  done
  cat fences
  [[ $(grep -cE '^[0-9]+$' fences) == 9 ]]
  increasing fences
}

# The sentinels answered, so a master they name that does not is a failover
# under way: the waiter asks until -w ends (for a plain URL "unreachable at
# the start is not waited for", tests/cli/faults.bats). Found here: it gave
# 69 at once, so every run a cron started during a failover failed.
@test "while the sentinels name a master that is down, a waiter keeps asking until -w ends and takes the lock once the master answers" {
  local master conf r start rc=0
  sentinel_export "$LONE_DIR"
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  master=$(sentinel_master_port "$LONE_DIR")
  conf=$LONE_DIR/node-$master/node.conf
  [[ -f $conf ]]
  topology_kill "$master"
  start=$EPOCHREALTIME
  # --replicas 0: the lone master has no replica, which the default refuses.
  bg "$RLOCK" --replicas 0 -v -w 15s lone touch ran
  r=$BG_PID
  # Down for longer than a few attempts' backoff.
  sleep 1.5
  still_waiting "$r"
  redis-server "$conf" >/dev/null 2>&1 3>&-
  wait_until 10 role_is "$master" master
  reap "$r" 20 || rc=$?
  note "exit $rc after $(elapsed "$start") s: $(tail -n 1 "$BG_ERR")"
  cat "$BG_ERR"
  ((rc == 0))
  [[ -e ran ]]
}

@test "a Sentinel URL as one member of a Redlock quorum with 2 plain masters: the lock on the named master and on both, one token, gone after" {
  local dir=$BATS_FILE_TMPDIR/quorum-members master key port token
  local -a plain
  redlock_start "$dir" 2
  read -ra plain <<<"$REDLOCK_PORTS"
  master=$(sentinel_master_port "$SHARED_DIR")
  key=$(lock_key mixed)
  bg "$RLOCK" --url "$RLOCK_SENTINEL_URL" --url "redis://127.0.0.1:${plain[0]}/0" \
    --url "redis://127.0.0.1:${plain[1]}/0" --replicas 0 mixed sleep 30
  wait_until 10 held_on "$key" "$master"
  token=$(topology_cli "$master" hget "$key" token)
  [ -n "$token" ]
  for port in "${plain[@]}"; do
    wait_until 10 held_on "$key" "$port"
    [ "$(topology_cli "$port" hget "$key" token)" = "$token" ]
  done
  run -0 rl --url "$RLOCK_SENTINEL_URL" --url "redis://127.0.0.1:${plain[0]}/0" \
    --url "redis://127.0.0.1:${plain[1]}/0" status mixed
  [[ ${lines[0]} == "redlock: "* ]]
  run -75 rl --url "$RLOCK_SENTINEL_URL" --url "redis://127.0.0.1:${plain[0]}/0" \
    --url "redis://127.0.0.1:${plain[1]}/0" -n mixed true
  kill -TERM "$BG_PID"
  reap "$BG_PID" || (($? == 143))
  for port in "$master" "${plain[@]}"; do
    wait_until 10 not held_on "$key" "$port"
  done
  topology_stop "$dir"
}

# --- the restart grace on a promoted replica -------------------------------
# Each test brings up a topology of its own (a master, one replica, three
# sentinels), so that the sentinels can only promote that replica; under
# BATS_FILE_TMPDIR, so that teardown_file stops it should the test fail.

# caught_up MASTER REPLICA: the replica has the master's whole stream.
caught_up() {
  local want
  want=$(topology_info_field "$1" replication master_repl_offset)
  [[ -n $want && $(topology_info_field "$2" replication master_repl_offset) == "$want" ]]
}

# The soak's longest outages: a replica restarted empty 14-26 s before its
# promotion was refused as a young server, though it held a full copy.
@test "restart grace: a replica restarted empty, resynced and promoted within the grace takes a lock at once" {
  local dir=$BATS_FILE_TMPDIR/grace-synced master replica new up
  sentinel_start "$dir" 1 3
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  master=$SENTINEL_MASTER_PORT replica=$SENTINEL_REPLICA_PORTS
  topology_kill "$replica"
  topology_restart "$replica"
  topology_poll 20 "$replica in sync again" topology_replicas_synced "$master" "$replica"
  # The master's stream goes on after the copy (the sentinels' hellos do as
  # well, every 2 s).
  topology_cli "$master" set after-the-copy 1 >/dev/null
  wait_until 10 caught_up "$master" "$replica"
  topology_kill "$master"
  new=$(sentinel_wait_failover "$dir" "$master")
  [[ $new == "$replica" ]]
  up=$(topology_info_field "$replica" server uptime_in_seconds)
  note "promoted $replica, up ${up} s"
  # Young enough for the grace to hold it back by its age.
  ((up < 25))
  RLOCK_RESTART_GRACE=30s run -0 --separate-stderr rl -v -n --replicas 0 synced true
  [[ $stderr == *"the Redis server at 127.0.0.1:$replica started "*" ago but holds a copy synced from its former master: not held back (--restart-grace)"* ]]
  topology_stop "$dir"
}

@test "restart grace: a replica restarted empty and promoted before it could copy its master is held back" {
  local dir=$BATS_FILE_TMPDIR/grace-unsynced master replica new
  sentinel_start "$dir" 1 3
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  master=$SENTINEL_MASTER_PORT replica=$SENTINEL_REPLICA_PORTS
  # Both die; the replica comes back empty with no master to copy.
  topology_kill "$master"
  topology_kill "$replica"
  topology_restart "$replica"
  new=$(sentinel_wait_failover "$dir" "$master")
  [[ $new == "$replica" ]]
  [[ $(topology_cli "$replica" dbsize) == 0 ]]
  RLOCK_RESTART_GRACE=30s run -75 --separate-stderr rl -v -n --replicas 0 unsynced true
  [[ $stderr == *"the Redis server at 127.0.0.1:$replica started "*"s ago; no lock is granted for another "*"s (--restart-grace 30s: a holder from before a restart may still run)" ]]
  topology_stop "$dir"
}
