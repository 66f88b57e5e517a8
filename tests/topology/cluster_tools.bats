#!/usr/bin/env bats
#
# status and doctor on a real Redis Cluster (three masters with a replica
# each on loopback, tests/lib/topology.bash). The tests share one cluster and
# run in order: the last one freezes a master.

# `run` sets stderr (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0
  export CLUSTER_DIR=$BATS_FILE_TMPDIR/cluster
  cluster_start "$CLUSTER_DIR" 3 1 || rc=$?
  brought_up "$rc" || return
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  # The servers are seconds old: the restart grace would hold every lock
  # back for 30s. It guards empty restarts, not this.
  export RLOCK_RESTART_GRACE=0
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  skip_without_topology
}

teardown() {
  local name
  [[ -z ${FROZEN:-} ]] || topology_thaw "$FROZEN"
  for name in a b deploy; do
    "$RLOCK" release --force "$name" >/dev/null 2>&1 || true
  done
}

# master_of NAME: the port of the master serving NAME's key.
master_of() {
  cluster_node_for_key "$CLUSTER_DIR" "rlock:{$1}"
}

# slot_of NAME: the slot of NAME's key, as Redis computes it.
slot_of() {
  topology_cli "${CLUSTER_MASTER_PORTS%% *}" cluster keyslot "rlock:{$1}"
}

# json_field FILE INDEX FIELD: field FIELD of the INDEXth lock of a status
# --json array, as JSON.
json_field() {
  python3 -c 'import json, sys
print(json.dumps(json.load(open(sys.argv[1]))[int(sys.argv[2])][sys.argv[3]]))' "$@"
}

@test "status: the masters, their slots and replicas; --json gives each lock its node and slot" {
  local port name i f=$BATS_TEST_TMPDIR/status.json
  for name in a b deploy; do
    "$RLOCK" acquire -t 5m "$name" >/dev/null
  done
  run -0 --separate-stderr "$RLOCK" status
  [[ ${lines[0]} == "cluster: 3 masters, all 16384 slots served; "* ]]
  for port in $CLUSTER_MASTER_PORTS; do
    [[ ${lines[0]} =~ 127\.0\.0\.1:$port:\ 546[12]\ slots,\ 1\ replica,\ lag\ [0-9]+s ]]
  done
  [[ ${lines[2]} == "a "* && ${lines[3]} == "b "* && ${lines[4]} == "deploy "* ]]
  [ -z "$stderr" ]
  run -0 --separate-stderr "$RLOCK" status --json
  printf '%s' "$output" >"$f"
  i=0
  for name in a b deploy; do
    [ "$(json_field "$f" "$i" name)" = "\"$name\"" ]
    [ "$(json_field "$f" "$i" node)" = "\"127.0.0.1:$(master_of "$name")\"" ]
    [ "$(json_field "$f" "$i" slot)" = "$(slot_of "$name")" ]
    i=$((i + 1))
  done
}

@test "doctor: each master, then the cluster; a TTL the node timeout fills fails; NAME names its slot and master" {
  local port masters=()
  for port in $CLUSTER_MASTER_PORTS; do
    masters+=("127.0.0.1:$port")
  done
  # cluster-node-timeout is 1000 here: a 1s TTL cannot outlive a failover.
  run -1 --separate-stderr "$RLOCK" doctor --ttl 1s deploy
  echo "$output"
  for port in $CLUSTER_MASTER_PORTS; do
    [[ $'\n'$output == *$'\n'"master 127.0.0.1:$port (slots "*$'\n'"ok      version      Redis "*" at 127.0.0.1:$port "* ]]
  done
  [[ $output == *$'\n\n'"cluster"$'\n'"ok      cluster      cluster_state ok on all 3 masters, all 16384 slots served, 6 nodes known"$'\n'* ]]
  [[ $output == *$'\n'"ok      replicas     every master has a replica online"* ]]
  [[ $output == *$'\n'"fail    failover     a failover takes cluster-node-timeout (1s) plus the election and promotion, at least the 1s TTL: every failover would stop the command"* ]]
  [[ $output == *$'\n'"ok      name         lock 'deploy' is key 'rlock:{deploy}' in slot $(slot_of deploy), served by 127.0.0.1:$(master_of deploy) (replica 127.0.0.1:"* ]]
  [ -z "$stderr" ]
  run -1 --separate-stderr "$RLOCK" doctor --ttl 30s --json
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])
assert "server" not in d, d
assert list(d["checks"]) == ["cluster", "replicas", "failover"], d["checks"]
assert d["checks"]["failover"]["status"] == "ok", d["checks"]["failover"]
assert d["checks"]["failover"]["values"]["node_timeout_ms"] == 1000
assert sorted(m["server"] for m in d["masters"]) == sorted(sys.argv[2:]), d["masters"]
assert all(len(m["checks"]) == 6 for m in d["masters"])' "$output" "${masters[@]}"
}

@test "a master that does not answer: status shows the others' locks, names it on stderr, exits 69; doctor fails" {
  local frozen other port slot
  frozen=$(master_of a)
  other=$(master_of b)
  slot=$(slot_of a)
  [ "$frozen" != "$other" ]
  "$RLOCK" acquire -t 5m a >/dev/null
  "$RLOCK" acquire -t 5m b >/dev/null
  # No failover, and the other masters keep serving their slots while it is
  # frozen: what status and doctor see is a master that does not answer.
  for port in $CLUSTER_PORTS; do
    topology_cli "$port" config set cluster-require-full-coverage no >/dev/null
    topology_cli "$port" config set cluster-replica-no-failover yes >/dev/null
  done
  topology_freeze "$frozen"
  FROZEN=$frozen
  run -69 --separate-stderr "$RLOCK" --io-timeout 300ms status
  echo "$output"
  echo "$stderr"
  [[ ${lines[0]} == *"; 127.0.0.1:$frozen: 546"?" slots, did not answer"* ]]
  [[ $output == *$'\n'"b "* ]]
  [[ $output != *$'\n'"a "* ]]
  [[ $stderr == "rlock: the locks on master 127.0.0.1:$frozen are not listed: "* ]]
  [ "${#stderr_lines[@]}" -eq 1 ]
  run -69 --separate-stderr "$RLOCK" --io-timeout 300ms status --json
  [[ $output == *'"name": "b"'* && $output != *'"name": "a"'* ]]
  run -1 --separate-stderr "$RLOCK" --io-timeout 300ms doctor a
  echo "$output"
  [[ $'\n'$output == *$'\n'"master 127.0.0.1:$frozen (slots "*"): did not answer ("*")"$'\n\n'* ]]
  [[ $output == *$'\n'"fail    cluster      127.0.0.1:$frozen did not answer ("* ]]
  [[ $output == *$'\n'"fail    name         lock 'a' is key 'rlock:{a}' in slot $slot, served by 127.0.0.1:$frozen, which did not answer ("* ]]
  topology_thaw "$frozen"
  FROZEN=
  for port in $CLUSTER_PORTS; do
    topology_cli "$port" config set cluster-replica-no-failover no >/dev/null
    topology_cli "$port" config set cluster-require-full-coverage yes >/dev/null
  done
  cluster_wait_ok "$CLUSTER_DIR"
  run -0 "$RLOCK" status a b
}
