#!/usr/bin/env bats
#
# Self-test of tests/lib/topology.bash on real Sentinel, Cluster and Redlock
# topologies: each test checks what the harness claims against the servers
# themselves (INFO, ROLE, CLUSTER NODES, /proc), not against the harness.
# One sentinel topology and one cluster are shared by the file and used in
# order: the second failover needs the first, and the freeze/stop test stops
# both. The redlock test starts and stops masters of its own.

bats_require_minimum_version 1.5.0

# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0 cluster_rc=0 cluster_pid start=$EPOCHREALTIME
  export SENTINEL_DIR=$BATS_FILE_TMPDIR/sentinel
  export CLUSTER_DIR=$BATS_FILE_TMPDIR/cluster
  mkdir "$BATS_FILE_TMPDIR/at-start"
  # Both bring-ups mostly wait on timers: run them side by side.
  { cluster_start "$CLUSTER_DIR" 3 1 && snapshot_cluster; } \
    >"$BATS_FILE_TMPDIR/cluster.out" 2>&1 3>&- &
  cluster_pid=$!
  sentinel_start "$SENTINEL_DIR" 2 3 && snapshot_sentinel || rc=$?
  wait "$cluster_pid" || cluster_rc=$?
  cat "$BATS_FILE_TMPDIR/cluster.out" >&2
  ((rc != 0)) || rc=$cluster_rc
  ((rc != 0)) || cluster_export "$CLUSTER_DIR" || rc=$?
  brought_up "$rc" "bring-up of both topologies" "$start"
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  skip_without_topology
}

# valid_ports PORT...: every PORT is a number, none is 6379 or 26379, and
# no two are equal.
valid_ports() {
  local port
  for port; do
    [[ $port =~ ^[0-9]+$ && $port != 6379 && $port != 26379 ]] || return 1
  done
  [[ $(printf '%s\n' "$@" | sort -u | wc -l) -eq $# ]]
}

# field PORT SECTION FIELD: an INFO field.
field() {
  topology_info_field "$@"
}

# snapshot NAME PORT ARG...: save the reply of redis-cli ARG... on PORT, so
# that a test sees the state in which a *_start function returned.
snapshot() {
  local name=$1 port=$2
  shift 2
  topology_cli "$port" "$@" | tr -d '\r' >"$BATS_FILE_TMPDIR/at-start/$name-$port"
}

# at_start NAME PORT: a reply saved by snapshot.
at_start() {
  cat "$BATS_FILE_TMPDIR/at-start/$1-$2"
}

snapshot_sentinel() {
  local port
  for port in $SENTINEL_NODE_PORTS; do
    snapshot replication "$port" info replication
  done
  for port in $SENTINEL_PORTS; do
    snapshot master "$port" sentinel master mymaster
    snapshot replicas "$port" sentinel replicas mymaster
    snapshot sentinels "$port" sentinel sentinels mymaster
  done
}

snapshot_cluster() {
  local port
  for port in $CLUSTER_PORTS; do
    snapshot cluster-info "$port" cluster info
    snapshot replication "$port" info replication
  done
}

# pairs FIELD: the values of FIELD in a key/value reply on stdin, one a line.
pairs() {
  awk -v want="$1" 'NR % 2 { key = $0; next } key == want { print }'
}

# sentinel_master_field SENTINEL_PORT FIELD: a field of SENTINEL MASTER.
sentinel_master_field() {
  topology_cli "$1" sentinel master mymaster | pairs "$2"
}

# replica_has KEY VALUE PORT: GET KEY on the replica on PORT gives VALUE.
replica_has() {
  [[ $(topology_cli "$3" get "$1") == "$2" ]]
}

# cluster_replicas_of PORT: the ports of the replicas of the master on PORT.
cluster_replicas_of() {
  local id
  id=$(topology_cli "$1" cluster myid)
  topology_cli "$1" cluster nodes | awk -v id="$id" '$4 == id {
    addr = $2; sub(/@.*/, "", addr); sub(/.*:/, "", addr); print addr }'
}

# cluster_key_on PORT: a key whose slot the master on PORT owns.
cluster_key_on() {
  local i
  for ((i = 0; i < 1000; i++)); do
    if [[ $(cluster_node_for_key "$CLUSTER_DIR" "harness:$i") == "$1" ]]; then
      echo "harness:$i"
      return 0
    fi
  done
  return 1
}

# topology_processes DIR...: PIDs of processes running in a directory under
# a DIR, found through /proc and not through pidfiles.
topology_processes() {
  local pid cwd dir
  while read -r pid cwd; do
    for dir; do
      [[ $cwd == "$dir"/* ]] && echo "$pid"
    done
  done < <(find /proc/[0-9]*/cwd -maxdepth 0 -printf '%h %l\n' 2>/dev/null |
    sed 's|^/proc/||')
  return 0
}

@test "sentinel: master, 2 replicas in sync, 3 sentinels that know them all" {
  local -a nodes sentinels
  local port master=$SENTINEL_MASTER_PORT
  read -ra nodes <<<"$SENTINEL_NODE_PORTS"
  read -ra sentinels <<<"$SENTINEL_PORTS"
  ((${#nodes[@]} == 3 && ${#sentinels[@]} == 3))
  valid_ports "${nodes[@]}" "${sentinels[@]}"
  [[ $SENTINEL_MASTER_NAME == mymaster ]]
  [[ ${nodes[0]} == "$master" && $SENTINEL_REPLICA_PORTS == "${nodes[1]} ${nodes[2]}" ]]
  [[ $RLOCK_SENTINEL_URL == "redis+sentinel://127.0.0.1:${sentinels[0]},127.0.0.1:${sentinels[1]},127.0.0.1:${sentinels[2]}/mymaster" ]]
  [[ $(sentinel_master_port "$SENTINEL_DIR") == "$master" ]]

  [[ $(topology_role "$master") == master ]]
  [[ $(topology_cli "$master" config get repl-diskless-sync-delay | tail -n 1) == 0 ]]
  [[ $(topology_cli "$master" config get save | tail -n 1) == "" ]]
  # As sentinel_start returned: replicas in sync, sentinels that know all.
  [[ $(at_start replication "$master" | grep -c "state=online") == 2 ]]
  for port in $SENTINEL_REPLICA_PORTS; do
    [[ $(at_start replication "$port") == *"master_port:$master"* ]]
    [[ $(at_start replication "$port") == *master_link_status:up* ]]
  done
  for port in "${sentinels[@]}"; do
    [[ $(at_start master "$port" | pairs port) == "$master" ]]
    [[ $(at_start replicas "$port" | pairs flags) == $'slave\nslave' ]]
    [[ $(at_start sentinels "$port" | pairs flags) == $'sentinel\nsentinel' ]]
  done
  for port in "${nodes[@]}" "${sentinels[@]}"; do
    [[ $(field "$port" server process_id) == "$(topology_pid "$port")" ]]
  done
  for port in "${sentinels[@]}"; do
    [[ $(topology_role "$port") == sentinel ]]
    [[ $(sentinel_master_field "$port" quorum) == 2 ]]
    [[ $(sentinel_master_field "$port" down-after-milliseconds) == 1000 ]]
    [[ $(sentinel_master_field "$port" failover-timeout) == 5000 ]]
    [[ $(sentinel_master_field "$port" parallel-syncs) == 1 ]]
  done
}

@test "sentinel: a write on the master reaches every replica" {
  local master value=v$RANDOM$RANDOM port
  master=$(sentinel_master_port "$SENTINEL_DIR")
  [[ $(topology_cli "$master" set harness:write "$value") == OK ]]
  for port in $SENTINEL_REPLICA_PORTS; do
    topology_poll 5 "the write on replica $port" replica_has harness:write "$value" "$port"
    [[ $(topology_cli "$port" set harness:write other) == READONLY* ]]
  done
}

@test "sentinel: kill -9 of the master yields a new master within 10 s that takes writes" {
  local old old_pid new start
  old=$(sentinel_master_port "$SENTINEL_DIR")
  old_pid=$(topology_pid "$old")
  start=$EPOCHREALTIME
  topology_kill "$old"
  run ! redis_pid_alive "$old_pid"
  new=$(sentinel_wait_failover "$SENTINEL_DIR" "$old" 10)
  note "first failover: $(elapsed "$start") s"
  [[ $new != "$old" && " $SENTINEL_NODE_PORTS " == *" $new "* ]]
  [[ $(sentinel_master_port "$SENTINEL_DIR") == "$new" ]]
  [[ $(topology_role "$new") == master ]]
  [[ $(topology_cli "$new" set harness:after 1) == OK ]]
  echo "$new" >"$BATS_FILE_TMPDIR/first-failover"
}

@test "sentinel: a second failover after the first" {
  [[ -s $BATS_FILE_TMPDIR/first-failover ]] || skip "needs the first failover's test"
  local old new start third
  start=$EPOCHREALTIME
  sentinel_wait_ready "$SENTINEL_DIR"
  note "settling after the first failover: $(elapsed "$start") s"
  old=$(sentinel_master_port "$SENTINEL_DIR")
  # Under load (CI runs suites side by side) the sentinels may have failed
  # over once more while settling: the master is whichever they agree on.
  if [[ $old != "$(<"$BATS_FILE_TMPDIR/first-failover")" ]]; then
    note "the sentinels failed over once more while settling"
  fi
  # The one node left running, which must now replicate the master.
  third=$(topology_ports "$SENTINEL_DIR" node running | grep -vxe "$old")
  [[ $third =~ ^[0-9]+$ ]]
  [[ $(field "$third" replication master_port) == "$old" ]]
  start=$EPOCHREALTIME
  topology_kill "$old"
  new=$(sentinel_wait_failover "$SENTINEL_DIR" "$old" 10)
  note "second failover: $(elapsed "$start") s"
  [[ $new == "$third" ]]
  [[ $(topology_role "$new") == master ]]
  [[ $(topology_cli "$new" set harness:after 2) == OK ]]
  [[ $(topology_cli "$new" get harness:after) == 2 ]]
}

@test "cluster: 3 masters with a replica each, all 16384 slots covered" {
  local -a ports masters replicas
  local port nodes
  read -ra ports <<<"$CLUSTER_PORTS"
  read -ra masters <<<"$CLUSTER_MASTER_PORTS"
  read -ra replicas <<<"$CLUSTER_REPLICA_PORTS"
  ((${#ports[@]} == 6 && ${#masters[@]} == 3 && ${#replicas[@]} == 3))
  valid_ports "${ports[@]}"
  [[ $(printf '%s\n' "${masters[@]}" "${replicas[@]}" | sort) == "$(printf '%s\n' "${ports[@]}" | sort)" ]]
  [[ $RLOCK_CLUSTER_URL == "redis+cluster://$(printf '127.0.0.1:%s,' "${ports[@]}" | sed 's/,$//')" ]]
  for port in "${ports[@]}"; do
    # As cluster_start returned.
    output=$(at_start cluster-info "$port")
    [[ $output == *cluster_state:ok* ]]
    [[ $output == *cluster_slots_assigned:16384* && $output == *cluster_slots_ok:16384* ]]
    [[ $output == *cluster_known_nodes:6* && $output == *cluster_size:3* ]]
    [[ $(topology_cli "$port" config get cluster-node-timeout | tail -n 1) == 1000 ]]
    [[ $(field "$port" server process_id) == "$(topology_pid "$port")" ]]
    redis_port_in_use $((port + 10000))
  done
  # Count the slots ourselves: every one owned exactly once.
  nodes=$(topology_cli "${ports[0]}" cluster nodes)
  [[ $(awk '$3 ~ /master/ { for (i = 9; i <= NF; i++) {
      n = split($i, r, "-"); for (s = r[1]; s <= r[n]; s++) print s } }' <<<"$nodes" |
    sort -un | wc -l) == 16384 ]]
  for port in "${masters[@]}"; do
    [[ $(topology_role "$port") == master ]]
    [[ $(cluster_replicas_of "$port" | wc -l) == 1 ]]
  done
  for port in "${replicas[@]}"; do
    [[ $(topology_role "$port") == slave ]]
    [[ $(at_start replication "$port") == *master_link_status:up* ]]
  done
}

@test "cluster: a key written through redis-cli -c lands on cluster_node_for_key's node" {
  local i key owner entry port
  local -A seen=()
  for ((i = 0; i < 6; i++)); do
    key="harness:{k$i}"
    owner=$(cluster_node_for_key "$CLUSTER_DIR" "$key")
    [[ " $CLUSTER_MASTER_PORTS " == *" $owner "* ]]
    seen[$owner]=1
    # Enter through another master, so that -c has to follow MOVED.
    entry=$(tr ' ' '\n' <<<"$CLUSTER_MASTER_PORTS" | grep -vx "$owner" | head -n 1)
    [[ $(redis-cli -c -h 127.0.0.1 -p "$entry" set "$key" "v$i") == OK ]]
    [[ $(topology_cli "$owner" get "$key") == "v$i" ]]
    for port in $CLUSTER_MASTER_PORTS; do
      [[ $port == "$owner" ]] && continue
      [[ $(topology_cli "$port" get "$key") == "MOVED "*":$owner" ]]
    done
  done
  # The keys spread over every master, so each was checked at least once.
  ((${#seen[@]} == 3))
}

@test "cluster: migrating a key's slot moves the key" {
  local key='harness:{moving}' from to slot port start
  from=$(cluster_node_for_key "$CLUSTER_DIR" "$key")
  slot=$(topology_cli "$from" cluster keyslot "$key")
  for port in a b c; do
    [[ $(redis-cli -c -h 127.0.0.1 -p "$from" set "$key:$port" "$port") == OK ]]
  done
  [[ $(topology_cli "$from" cluster countkeysinslot "$slot") == 3 ]]
  to=$(tr ' ' '\n' <<<"$CLUSTER_MASTER_PORTS" | grep -vx "$from" | head -n 1)
  start=$EPOCHREALTIME
  cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to"
  note "migration of one slot: $(elapsed "$start") s"
  [[ $(cluster_node_for_key "$CLUSTER_DIR" "$key") == "$to" ]]
  for port in $CLUSTER_PORTS; do
    [[ $(cluster_node_for_slot "$CLUSTER_DIR" "$slot" "$port") == "$to" ]]
    [[ $(topology_cli "$port" cluster nodes) != *"[$slot-"* ]]
  done
  [[ $(topology_cli "$to" cluster countkeysinslot "$slot") == 3 ]]
  [[ $(topology_cli "$from" cluster countkeysinslot "$slot") == 0 ]]
  [[ $(topology_cli "$to" get "$key:b") == b ]]
  [[ $(topology_cli "$from" get "$key:b") == "MOVED $slot 127.0.0.1:$to" ]]
  [[ $(redis-cli -c -h 127.0.0.1 -p "$from" get "$key:c") == c ]]
}

@test "cluster: kill -9 of a master promotes its replica" {
  local victim victim_pid replica key new start port
  victim=${CLUSTER_MASTER_PORTS##* }
  replica=$(cluster_replicas_of "$victim")
  [[ $replica =~ ^[0-9]+$ ]]
  key=$(cluster_key_on "$victim")
  [[ $(topology_cli "$victim" set "$key" kept) == OK ]]
  [[ $(topology_cli "$victim" wait 1 2000) == 1 ]]
  victim_pid=$(topology_pid "$victim")
  start=$EPOCHREALTIME
  new=$(cluster_failover_by_kill "$CLUSTER_DIR" "$victim")
  note "cluster failover: $(elapsed "$start") s"
  run ! redis_pid_alive "$victim_pid"
  [[ $new == "$replica" ]]
  [[ $(topology_role "$new") == master ]]
  [[ $(cluster_node_for_key "$CLUSTER_DIR" "$key") == "$new" ]]
  for port in $CLUSTER_PORTS; do
    [[ $port == "$victim" ]] && continue
    [[ $(topology_cli "$port" cluster info) == *cluster_state:ok* ]]
  done
  [[ $(redis-cli -c -h 127.0.0.1 -p "${CLUSTER_MASTER_PORTS%% *}" get "$key") == kept ]]
  [[ $(redis-cli -c -h 127.0.0.1 -p "${CLUSTER_MASTER_PORTS%% *}" set "$key" new) == OK ]]
}

@test "topology_stop stops what a start that failed halfway left running" {
  local dir=$BATS_TEST_TMPDIR/half pidfile
  local -a pids=()
  TOPOLOGY_SENTINEL_CONFIG='no-such-directive yes' run -1 sentinel_start "$dir" 1 1
  [[ $output == *no-such-directive* ]]
  for pidfile in "$dir"/node-*/node.pid; do
    pids+=("$(<"$pidfile")")
  done
  ((${#pids[@]} == 2))
  redis_pid_alive "${pids[0]}"
  redis_pid_alive "${pids[1]}"
  topology_stop "$dir"
  run ! redis_pid_alive "${pids[0]}"
  run ! redis_pid_alive "${pids[1]}"
  [[ -z $(topology_processes "$(cd "$dir" && pwd -P)") ]]
}

@test "topology_freeze/thaw signal by PID; topology_stop leaves no process, frozen or not" {
  local sentinel=${SENTINEL_PORTS%% *} node=${CLUSTER_REPLICA_PORTS%% *} pid pidfile
  local -a pids=() found
  local dirs
  dirs="$(cd "$SENTINEL_DIR" && pwd -P) $(cd "$CLUSTER_DIR" && pwd -P)"
  pid=$(topology_pid "$sentinel")
  topology_freeze "$sentinel"
  topology_stopped "$pid"
  TOPOLOGY_CLI_TIMEOUT=0.5 run -124 topology_cli "$sentinel" ping
  topology_thaw "$sentinel"
  run ! topology_stopped "$pid"
  [[ $(topology_cli "$sentinel" ping) == PONG ]]

  topology_freeze "$sentinel"
  topology_freeze "$node"
  while IFS= read -r pidfile; do
    pids+=("$(<"$pidfile")")
  done < <(find "$SENTINEL_DIR" "$CLUSTER_DIR" -name '*.pid')
  # shellcheck disable=SC2086 # two directories
  mapfile -t found < <(topology_processes $dirs | sort -n)
  # The pidfiles name every process that runs there, and nothing else.
  ((${#pids[@]} >= 2))
  [[ $(printf '%s\n' "${pids[@]}" | sort -n) == "$(printf '%s\n' "${found[@]}")" ]]
  topology_stop "$SENTINEL_DIR"
  topology_stop "$CLUSTER_DIR"
  for pid in "${pids[@]}"; do
    run ! redis_pid_alive "$pid"
  done
  # The frozen ones too were continued and shut down on TERM, not killed.
  grep -q 'is now ready to exit' "$SENTINEL_DIR/sentinel-$sentinel/sentinel.log"
  grep -q 'is now ready to exit' "$CLUSTER_DIR/cluster-$node/cluster.log"
  # shellcheck disable=SC2086 # two directories
  [[ -z $(topology_processes $dirs) ]]
}

@test "redlock: N independent masters in RLOCK_URL; topology_restart brings a killed one back empty on its port" {
  local dir=$BATS_FILE_TMPDIR/redlock port old_pid old_id new_pid start
  local -a ports ids=()
  start=$EPOCHREALTIME
  redlock_start "$dir" 3
  note "redlock bring-up, 3 masters: $(elapsed "$start") s"
  read -ra ports <<<"$REDLOCK_PORTS"
  ((${#ports[@]} == 3))
  valid_ports "${ports[@]}"
  [[ $RLOCK_URL == "redis://127.0.0.1:${ports[0]}/0 redis://127.0.0.1:${ports[1]}/0 redis://127.0.0.1:${ports[2]}/0" ]]
  for port in "${ports[@]}"; do
    [[ $(topology_role "$port") == master ]]
    [[ $(field "$port" replication connected_slaves) == 0 ]]
    [[ $(field "$port" server process_id) == "$(topology_pid "$port")" ]]
    [[ $(topology_cli "$port" config get save | tail -n 1) == "" ]]
    [[ $(topology_cli "$port" config get appendonly | tail -n 1) == no ]]
    ids+=("$(field "$port" server run_id)")
  done
  # Independent: three servers, not one seen three times.
  [[ $(printf '%s\n' "${ids[@]}" | sort -u | wc -l) == 3 ]]

  port=${ports[1]}
  [[ $(topology_cli "$port" set harness:lost v) == OK ]]
  old_pid=$(topology_pid "$port")
  old_id=${ids[1]}
  run -1 topology_restart "$port"
  [[ $output == *"still runs"* ]]
  topology_kill "$port"
  run ! redis_pid_alive "$old_pid"
  run ! redis_port_in_use "$port"
  start=$EPOCHREALTIME
  topology_restart "$port"
  note "topology_restart: $(elapsed "$start") s"
  new_pid=$(topology_pid "$port")
  [[ $new_pid != "$old_pid" ]]
  [[ $(field "$port" server process_id) == "$new_pid" ]]
  [[ $(field "$port" server run_id) != "$old_id" ]]
  [[ $(topology_cli "$port" exists harness:lost) == 0 ]]
  [[ $(topology_role "$port") == master ]]
  # The others were left alone.
  [[ $(field "${ports[0]}" server run_id) == "${ids[0]}" ]]
  [[ $(field "${ports[2]}" server run_id) == "${ids[2]}" ]]

  unset REDLOCK_PORTS RLOCK_URL
  redlock_export "$dir"
  [[ $REDLOCK_PORTS == "${ports[*]}" ]]
  [[ $RLOCK_URL == "redis://127.0.0.1:${ports[0]}/0 "* ]]
  run -1 redlock_export "$SENTINEL_DIR"

  topology_stop "$dir"
  for port in "${ports[@]}"; do
    run ! redis_port_in_use "$port"
  done
  [[ -z $(topology_processes "$(cd "$dir" && pwd -P)") ]]
}
