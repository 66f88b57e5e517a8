# shellcheck shell=bash
#
# Helpers the topology suites share (sentinel.bats, cluster.bats,
# harness.bats, cluster_tools.bats, sentinel_tools.bats, tls.bats). Load with
# `load common`, after sourcing tests/lib/topology.bash.

# note TEXT: a line in the TAP output, for the timings.
note() {
  echo "# $*" >&3
}

# elapsed SINCE: seconds since EPOCHREALTIME was SINCE, to 0.1 s.
elapsed() {
  awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# exists_on KEY PORT: EXISTS KEY on the server on PORT (1 or 0; MOVED... from
# a cluster node that does not serve KEY's slot).
exists_on() {
  topology_cli "$2" exists "$1"
}

# held_on KEY PORT: KEY exists on the server on PORT.
held_on() {
  [[ $(exists_on "$1" "$2") == 1 ]]
}

# brought_up RC [WHAT START]: the end of a setup_file that brought its
# topologies up, RC being how that went. 125 (no redis binaries) marks the
# file's tests to be skipped; another failure stops every topology of the
# file and returns RC; success notes how long WHAT took since START.
brought_up() {
  local rc=$1
  if ((rc == 125)); then
    export TOPOLOGY_TEST_SKIP=1
  elif ((rc != 0)); then
    topology_stop "$BATS_FILE_TMPDIR"
    return "$rc"
  elif (($# > 1)); then
    note "$2: $(elapsed "$3") s"
  fi
}

# start_topologies LABEL COMMAND...: for setup_file, runs each bring-up
# COMMAND (a string, evaluated) but the last in the background, since they
# mostly wait on timers, and the last in the foreground: its variables are
# the ones exported. Then waits for them all, shows their output and reports
# the first failure through brought_up.
start_topologies() {
  local label=$1 start=$EPOCHREALTIME rc=0 status i
  shift
  local -a commands=("$@") pids=() outs=()
  for ((i = 0; i < ${#commands[@]} - 1; i++)); do
    outs+=("$BATS_FILE_TMPDIR/bring-up-$i.out")
    eval "${commands[i]}" >"${outs[i]}" 2>&1 3>&- &
    pids+=("$!")
  done
  eval "${commands[-1]}" || rc=$?
  for ((i = 0; i < ${#pids[@]}; i++)); do
    status=0
    wait "${pids[i]}" || status=$?
    cat "${outs[i]}" >&2
    ((rc != 0)) || rc=$status
  done
  brought_up "$rc" "$label" "$start"
}

# skip_without_topology: in setup, skip the test when setup_file found no
# redis binaries.
skip_without_topology() {
  if [[ -n ${TOPOLOGY_TEST_SKIP:-} ]]; then
    skip "redis binaries not found (set CI=true or RLOCK_REQUIRE_REDIS=1 to fail instead)"
  fi
}

# topology_setup [BINARY]: the start of every topology test's setup: skip
# without redis binaries, check the rlock binary (BINARY, $RLOCK by
# default), clear the variables that would point rlock elsewhere, set the
# files the helpers and teardown use, and move to the test's directory. The
# servers are seconds old, so RLOCK_RESTART_GRACE is 0: the grace guards
# against a server that restarted empty (tests/cli/restart.bats tests it);
# here it would hold every lock back for 30 s.
topology_setup() {
  local binary=${1:-$RLOCK}
  skip_without_topology
  if [[ ! -x $binary ]]; then
    echo "rlock binary not found or not executable: '$binary' (set RLOCK=/abs/path)" >&2
    return 1
  fi
  unset REDIS_URL RLOCK_PREFIX RLOCK_REPLICAS RLOCK_PASSWORD
  export RLOCK_RESTART_GRACE=0
  BG_PIDS_FILE=$BATS_TEST_TMPDIR/bg.pids
  GROUPS_FILE=$BATS_TEST_TMPDIR/groups
  FROZEN_FILE=$BATS_TEST_TMPDIR/frozen
  : >"$BG_PIDS_FILE"
  : >"$GROUPS_FILE"
  : >"$FROZEN_FILE"
  cd "$BATS_TEST_TMPDIR" || return 1
}

# topology_teardown: the end of every topology test: continue the servers
# the test froze, then end its rlocks and their children.
topology_teardown() {
  local port
  if [[ -n ${FROZEN_FILE:-} && -f $FROZEN_FILE ]]; then
    while read -r port; do
      topology_thaw "$port" 2>/dev/null || :
    done <"$FROZEN_FILE"
  fi
  common_teardown
  [[ -z ${GROUPS_FILE:-} || ! -f $GROUPS_FILE ]] || kill_child_groups
}

# --- cluster: where a lock lives ($CLUSTER_DIR, $CLUSTER_MASTER_PORTS) ------

# renewed_on KEY PORT: within 5 s, KEY's PTTL on the node on PORT goes up:
# a renewal reached that node (between renewals PTTL only falls).
renewed_on() {
  local key=$1 port=$2 prev=-3 now=-3 deadline=$((SECONDS + 5))
  while ((SECONDS < deadline)); do
    now=$(topology_cli "$port" pttl "$key")
    [[ $now =~ ^-?[0-9]+$ ]] || now=-3
    ((prev < 0 || now <= prev)) || return 0
    prev=$now
    sleep 0.05
  done
  echo "renewed_on: the PTTL of $key on $port did not go up within 5 s (last $now)" >&2
  return 1
}

# owner_of NAME [DIR]: the port of the master that keeps lock NAME's key.
owner_of() {
  cluster_node_for_key "${2:-$CLUSTER_DIR}" "$(lock_key "$1")"
}

# name_on PORT STEM [DIR]: a name STEM<n> whose lock key is on the master on
# PORT now.
name_on() {
  local port=$1 stem=$2 dir=${3:-$CLUSTER_DIR} i
  for ((i = 0; i < 300; i++)); do
    if [[ $(owner_of "$stem$i" "$dir") == "$port" ]]; then
      echo "$stem$i"
      return 0
    fi
  done
  echo "name_on: no name $stem<n> has its key on $port" >&2
  return 1
}

# master_with_replica: a running master that has a replica linked to it.
master_with_replica() {
  local port
  for port in $CLUSTER_MASTER_PORTS; do
    if (($(topology_info_field "$port" replication connected_slaves) > 0)); then
      echo "$port"
      return 0
    fi
  done
  echo "master_with_replica: no master has a replica left" >&2
  return 1
}

# promoted_keeps STEM: a --replicas 0 run of 9 s (TTL 12 s) on a name STEM<n>
# whose master has a replica; that master is killed (kill -9) during the
# hold: the run goes on, renewed on the promoted replica, and exits 0, and a
# -n run meanwhile is 75.
promoted_keeps() {
  local name key old new hb=$BATS_TEST_TMPDIR/hb r start
  old=$(master_with_replica)
  name=$(name_on "$old" "$1")
  key=$(lock_key "$name")
  bg "$RLOCK" --replicas 0 -t 12s "$name" bash -c "$(hold_script "$hb" 9)"
  r=$BG_PID
  wait_until 10 beating "$hb"
  start=$EPOCHREALTIME
  new=$(cluster_failover_by_kill "$CLUSTER_DIR" "$old")
  note "failover from $old to $new in $(elapsed "$start") s"
  renewed_on "$key" "$new"
  run -75 rl -n "$name" true
  reaped 0 "$r" 30 || {
    cat "$BATS_TEST_TMPDIR"/bg.*.err
    false
  }
}

# --- sentinel: a failover under a hold -----------------------------------------

# kill_round DIR N [OPTION...]: round N of a hold on the Sentinel topology in
# DIR (the URL in $RLOCK_URL), a kill -9 of its master and a waiter (given
# the OPTIONs) started right after it: the holder goes on (0) or ends (70)
# before the waiter's command starts, never both.
kill_round() {
  local dir=$1 n=$2 hb1=$BATS_TEST_TMPDIR/hb1.$2 hb2=$BATS_TEST_TMPDIR/hb2.$2
  local ev1=$BATS_TEST_TMPDIR/ev1.$2 r1 r2 pgid old new rc1=0 killed_at
  bg "$RLOCK" -t 3s --events "$ev1" failover bash -c "$(hold_script "$hb1" 8)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  # A renewal first: the lease then is one the renewer has kept.
  wait_until 5 has_event "$ev1" renewed
  old=$(sentinel_master_port "$dir")
  topology_kill "$old"
  killed_at=$EPOCHREALTIME
  bg "$RLOCK" "${@:3}" -t 3s -w 30s failover bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  new=$(sentinel_wait_failover "$dir" "$old")
  note "round $n: failover from $old to $new in $(elapsed "$killed_at") s"
  reap "$r1" 20 || rc1=$?
  reaped 0 "$r2" 40
  note "round $n: the holder exited $rc1"
  kept_or_lost "$rc1" "$pgid" "$hb1" "$ev1" 3000 8 "$hb2"
}
