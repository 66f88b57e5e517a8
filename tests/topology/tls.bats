#!/usr/bin/env bats
#
# rediss+sentinel:// and rediss+cluster://: rlock on a Sentinel and on a
# Cluster whose every process listens on TLS only (tests/lib/topology.bash
# with TOPOLOGY_TLS_CERTS: port 0, a tls-port, TLS between replicas,
# sentinels and cluster nodes too). Each path rlock takes (sentinel, master
# it names, cluster seed, the master MOVED points at, a promoted replica) is
# a TLS connection verified against the test CA; a plain connection to any
# of these ports is reset.
#
# Topologies, started side by side in setup_file:
#   sentinel  a master, a replica and 3 sentinels; the last test kills the
#             master.
#   cluster   3 masters with a replica each; a resharding, then a kill -9.
#
# The safety checks are those of sentinel.bats and cluster.bats (heartbeat
# files whose intervals must not intersect, lock keys read with redis-cli).

# Child scripts are single-quoted on purpose (SC2016); `run` sets output and
# stderr (SC2154); tests point RLOCK_URL at one topology or the other, which
# looks to shellcheck like a subshell's change (SC2030, SC2031).
# shellcheck disable=SC2016,SC2154,SC2030,SC2031

bats_require_minimum_version 1.5.0

load ../cli/helpers
load ../cli/heartbeat
# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0 rc_cluster=0 pid start=$EPOCHREALTIME
  export TOPOLOGY_TLS_CERTS=$BATS_FILE_TMPDIR/certs
  export SENTINEL_DIR=$BATS_FILE_TMPDIR/sentinel
  export CLUSTER_DIR=$BATS_FILE_TMPDIR/cluster
  redis_make_certs "$TOPOLOGY_TLS_CERTS"
  # rlock with the test CA, however the tests call it.
  export RLOCK_BINARY=$RLOCK RLOCK=$BATS_FILE_TMPDIR/rlock-tls
  printf '#!/bin/sh\nexec "%s" --tls-ca "%s" "$@"\n' "$RLOCK_BINARY" \
    "$TOPOLOGY_TLS_CERTS/ca.crt" >"$RLOCK"
  chmod +x "$RLOCK"
  cluster_start "$CLUSTER_DIR" 3 1 >"$BATS_FILE_TMPDIR/cluster.out" 2>&1 3>&- &
  pid=$!
  sentinel_start "$SENTINEL_DIR" 1 3 || rc=$?
  wait "$pid" || rc_cluster=$?
  cat "$BATS_FILE_TMPDIR/cluster.out" >&2
  ((rc != 0)) || rc=$rc_cluster
  brought_up "$rc" "bring-up of a TLS Sentinel and a TLS Cluster" "$start"
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  topology_setup "$RLOCK_BINARY" || return
  sentinel_export "$SENTINEL_DIR"
  cluster_export "$CLUSTER_DIR"
}

teardown() {
  topology_teardown
}

# plain URL: URL with its rediss scheme made redis (no TLS).
plain() {
  echo "${1/#rediss/redis}"
}

# --- Sentinel ----------------------------------------------------------------

@test "rediss+sentinel://: the lock is on the master the sentinels name, confirmed by its replica; status names the master" {
  local master key
  [[ $RLOCK_SENTINEL_URL == rediss+sentinel://* ]]
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  master=$(sentinel_master_port "$SENTINEL_DIR")
  key=$(lock_key s1)
  bg "$RLOCK" -v -t 2s s1 sleep 30
  wait_until 10 held_on "$key" "$master"
  # Renewed over TLS on the master (every TTL/3).
  renewed_on "$key" "$master"
  wait_until 5 grep -q "waits for 1 replica of 127.0.0.1:$master to confirm" "$BG_ERR"
  run -0 --separate-stderr rl status
  [[ ${lines[0]} == "sentinel: master 'mymaster' 127.0.0.1:$master "* ]]
  [[ $output == *$'\ns1 '* ]]
  run -75 rl -n s1 true
}

@test "rediss+sentinel:// with a CA that signed nothing, or without TLS: 69, one line naming the sentinels, nothing held" {
  run -69 --separate-stderr rl --url "$RLOCK_SENTINEL_URL" \
    --tls-ca "$TOPOLOGY_TLS_CERTS/other-ca.crt" s2 touch ran
  [ -z "$output" ]
  [[ $stderr == "rlock: no sentinel could be used: TLS handshake with 127.0.0.1:"*"certificate verify failed"* ]]
  [ "${#stderr_lines[@]}" -eq 1 ]
  run -69 --separate-stderr "$RLOCK_BINARY" --url "$(plain "$RLOCK_SENTINEL_URL")" s2 touch ran
  [[ $stderr == "rlock: no sentinel answered ("* ]]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ ! -e ran ]
  run -0 topology_cli "$(sentinel_master_port "$SENTINEL_DIR")" exists "$(lock_key s2)"
  [ "$output" = 0 ]
}

@test "rediss+sentinel://: kill -9 of the master during a hold: the run goes on or ends (70) before a waiter's command starts, never both" {
  export RLOCK_URL=$RLOCK_SENTINEL_URL
  # The waiter with --replicas 0: the promoted replica is the only one, and
  # has none of its own, which the default refuses.
  kill_round "$SENTINEL_DIR" 1 --replicas 0
}

# --- Cluster -----------------------------------------------------------------

@test "rediss+cluster://: a lock on each master; status through the cluster URL and through a rediss:// URL to one node lists all three" {
  local port name url
  local -a names=()
  [[ $RLOCK_CLUSTER_URL == rediss+cluster://* ]]
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  for port in $CLUSTER_MASTER_PORTS; do
    name=$(name_on "$port" tls)
    names+=("$name")
    bg "$RLOCK" -t 20s "$name" sleep 30
    wait_until 10 held_on "$(lock_key "$name")" "$port"
  done
  for url in "$RLOCK_CLUSTER_URL" "rediss://127.0.0.1:${CLUSTER_MASTER_PORTS%% *}"; do
    run -0 --separate-stderr rl --url "$url" status
    [[ ${lines[0]} == "cluster: 3 masters, all 16384 slots served;"* ]]
    for name in "${names[@]}"; do
      [[ $output == *$'\n'"$name "* ]]
    done
  done
  run -69 --separate-stderr "$RLOCK_BINARY" --url "$(plain "$RLOCK_CLUSTER_URL")" status
  [[ $stderr == "rlock: no node of the cluster answered ("* ]]
}

@test "rediss+cluster://: a resharding of NAME's slot during a hold: the lock follows MOVED to the new master and is renewed there" {
  local name key slot from to hb=$BATS_TEST_TMPDIR/hb r
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  from=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$from" moved)
  key=$(lock_key "$name")
  for to in $CLUSTER_MASTER_PORTS; do
    [[ $to == "$from" ]] || break
  done
  bg "$RLOCK" -t 1500ms "$name" bash -c "$(hold_script "$hb" 4)"
  r=$BG_PID
  wait_until 10 beating "$hb"
  slot=$(topology_cli "$from" cluster keyslot "$key")
  cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to"
  renewed_on "$key" "$to"
  run -75 rl -n "$name" true
  reaped 0 "$r" 20
  (($(span_ms "$hb") >= 3900))
}

@test "rediss+cluster://: kill -9 of NAME's master with --replicas 0: the run goes on on the promoted replica, over TLS" {
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  promoted_keeps promoted
}
