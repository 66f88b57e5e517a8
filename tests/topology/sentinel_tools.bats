#!/usr/bin/env bats
#
# status, doctor and waiting on a real Sentinel topology (a master, two
# replicas, three sentinels on loopback, tests/lib/topology.bash). The tests
# share one topology and run in order: the last one fails the master over.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr
# (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0
  export SENTINEL_DIR=$BATS_FILE_TMPDIR/sentinel
  sentinel_start "$SENTINEL_DIR" 2 3 || rc=$?
  brought_up "$rc" || return
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  # The servers are seconds old: the restart grace (tests/cli/restart.bats)
  # would hold every lock back for 30s. It guards empty restarts, not this.
  export RLOCK_RESTART_GRACE=0
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  skip_without_topology
}

@test "status: the master, how many sentinels agree, the replicas; --json names the node" {
  "$RLOCK" sleep-a-while sleep 30 3>&- &
  local holder=$!
  run -0 timeout 20 bash -c 'until "$1" status sleep-a-while >/dev/null 2>&1; do sleep 0.1; done' _ "$RLOCK"
  run -0 "$RLOCK" status
  [[ ${lines[0]} == "sentinel: master 'mymaster' 127.0.0.1:$SENTINEL_MASTER_PORT (3 of 3 sentinels agree); replicas "* ]]
  local port
  for port in $SENTINEL_REPLICA_PORTS; do
    [[ ${lines[0]} == *"127.0.0.1:$port online"* ]]
  done
  [[ ${lines[2]} == "sleep-a-while "* ]]
  run -0 "$RLOCK" status --json sleep-a-while
  [[ $output == *"\"node\": \"127.0.0.1:$SENTINEL_MASTER_PORT\""* ]]
  kill -TERM "$holder"
  wait "$holder" || true
}

@test "--events: the acquire says how many replicas confirmed it" {
  run -0 --separate-stderr "$RLOCK" --events - confirmed true
  # WAIT counts every replica that has it: at least the one asked for.
  [[ $stderr =~ \"event\":\"acquired\",\"name\":\"confirmed\",.*\"replicas\":[12]\} ]]
  run -0 --separate-stderr "$RLOCK" --replicas 0 --events - unconfirmed true
  [[ $stderr == *'"event":"acquired","name":"unconfirmed",'*'"replicas":0}'* ]]
}

@test "doctor: a failover that outlasts the TTL fails, one well within it is ok" {
  # down-after-milliseconds is 1000 here: a 1s TTL cannot outlive a failover.
  run -1 "$RLOCK" doctor --ttl 1s
  [[ $output == *$'\n'"fail    failover     a failover takes down-after-milliseconds (1s) plus the election and promotion, at least the 1s TTL: every failover would stop the command"* ]]
  [[ $output == *"ok      sentinels    3 of 3 sentinels name 127.0.0.1:$SENTINEL_MASTER_PORT as master 'mymaster', and a failover quorum can be reached"* ]]
  [[ $output == *"ok      replication  master with 2 replicas: each acquire and renewal waits until 1 of them has it"*"; WAIT 2: 2 confirmed in "* ]]
  run -1 "$RLOCK" doctor --ttl 30s
  [[ $output == *"ok      failover     "*"well within the 30s TTL"* ]]
  run -1 "$RLOCK" doctor --ttl 30s --json
  [[ $output == *'"failover": {'*'"status": "ok"'* ]]
}

# start_password_sentinel: one more sentinel, with a password of its own
# (requirepass sekret), watching the master; sets PW_SENTINEL_PORT. Its
# pidfile lies under the file's directory, so teardown_file stops it.
start_password_sentinel() {
  local try
  # A port picked free may be taken by a suite running alongside before
  # the sentinel binds it: then try another.
  for ((try = 1; try <= 5; try++)); do
    until topology_pick_port sentinel; do :; done
    launch_password_sentinel "$TOPOLOGY_PORT" "$BATS_FILE_TMPDIR/sentinel-pw-$try" && return 0
  done
  return 1
}

# launch_password_sentinel PORT SUB: start it on PORT in SUB; true once it
# names the master, false when it did not bind or answer within 10 s.
launch_password_sentinel() {
  local port=$1 sub=$2 i
  mkdir -p "$sub"
  printf '%s\n' "bind 127.0.0.1" "port $port" "daemonize yes" \
    "pidfile $sub/sentinel.pid" "logfile $sub/sentinel.log" "dir $sub" \
    "requirepass sekret" "sentinel resolve-hostnames no" \
    "sentinel monitor mymaster 127.0.0.1 $SENTINEL_MASTER_PORT 2" \
    >"$sub/sentinel.conf"
  redis-sentinel "$sub/sentinel.conf" >/dev/null 2>&1 3>&-
  PW_SENTINEL_PORT=$port
  for ((i = 0; i < 200; i++)); do
    [[ $(redis-cli -p "$port" -a sekret --no-auth-warning sentinel get-master-addr-by-name mymaster 2>/dev/null | tail -n 1) == "$SENTINEL_MASTER_PORT" ]] && return 0
    grep -qE 'Could not create server TCP listening socket|Address already in use' \
      "$sub/sentinel.log" 2>/dev/null && return 1
    sleep 0.05
  done
  echo "the password sentinel on $port did not answer; its log:" >&2
  cat "$sub/sentinel.log" >&2
  return 1
}

@test "--sentinel-password-file and \$RLOCK_SENTINEL_PASSWORD log in to the sentinels; a wrong one is 69 at once" {
  start_password_sentinel
  local url=redis+sentinel://127.0.0.1:$PW_SENTINEL_PORT/mymaster start
  echo sekret >"$BATS_TEST_TMPDIR/pw"
  run -0 "$RLOCK" --url "$url" --sentinel-password-file "$BATS_TEST_TMPDIR/pw" pw true
  RLOCK_SENTINEL_PASSWORD=sekret run -0 "$RLOCK" --url "$url" pw true
  # Without it the sentinel refuses; a wrong password does not pass by
  # waiting: 69 at once, even with -w.
  start=$SECONDS
  run -69 --separate-stderr "$RLOCK" --url "$url" -w 30s pw true
  [[ $stderr == "rlock: the sentinels refused the login (sentinel 127.0.0.1:$PW_SENTINEL_PORT refused: NOAUTH"* ]]
  RLOCK_SENTINEL_PASSWORD=wrong run -69 --separate-stderr "$RLOCK" --url "$url" -w 30s pw true
  [[ $stderr == "rlock: the sentinels refused the login (Redis at 127.0.0.1:$PW_SENTINEL_PORT refused the password"* ]]
  [ -z "$output" ]
  ((SECONDS - start < 10))
}

# Last but one: it leaves the topology failed over (the old master thawed
# and demoted).
@test "a master frozen mid-run: with a TTL doctor calls long enough, the run goes on on the new master" {
  local old=$SENTINEL_MASTER_PORT rc=0
  run -1 "$RLOCK" doctor --ttl 10s
  [[ $output == *"ok      failover "* ]]
  "$RLOCK" -t 10s frozen sleep 12 2>"$BATS_TEST_TMPDIR/err" 3>&- &
  local holder=$!
  sleep 1
  topology_freeze "$old"
  run -0 sentinel_wait_failover "$SENTINEL_DIR" "$old"
  wait "$holder" || rc=$?
  topology_thaw "$old"
  cat "$BATS_TEST_TMPDIR/err"
  # A renewal stuck on the frozen master used to wait out the whole lease.
  [ "$rc" -eq 0 ]
  sentinel_wait_ready "$SENTINEL_DIR"
  sentinel_export "$SENTINEL_DIR"
}

@test "a waiter follows the master across a failover and gets the lock once the holder is done" {
  local d=$BATS_TEST_TMPDIR
  "$RLOCK" -t 10s handoff sh -c 'echo "$RLOCK_FENCE" >"$1/first"; sleep 2' _ "$d" \
    2>"$d/holder.err" 3>&- &
  local holder=$!
  run -0 timeout 20 bash -c 'until [ -s "$1/first" ]; do sleep 0.05; done' _ "$d"
  "$RLOCK" -w 60s handoff sh -c 'echo "$RLOCK_FENCE" >"$1/second"' _ "$d" \
    2>"$d/waiter.err" 3>&- &
  local waiter=$!
  sleep 0.3
  local old=$SENTINEL_MASTER_PORT
  topology_kill "$old"
  run -0 sentinel_wait_failover "$SENTINEL_DIR" "$old"
  local holder_rc=0 waiter_rc=0
  wait "$holder" || holder_rc=$?
  wait "$waiter" || waiter_rc=$?
  echo "holder $holder_rc: $(cat "$d/holder.err")"
  echo "waiter $waiter_rc: $(cat "$d/waiter.err")"
  # The holder either finished on the new master or lost the lock (70);
  # the waiter got the lock in the end, with a larger fence.
  [[ $holder_rc == 0 || $holder_rc == 70 ]]
  [ "$waiter_rc" -eq 0 ]
  [ "$(cat "$d/second")" -gt "$(cat "$d/first")" ]
}
