#!/usr/bin/env bats
#
# doctor and status over a quorum of 5 independent redis-servers on loopback
# (Redlock, #13; tests/lib/topology.bash). The tests share the servers and
# run in order: the last two kill one server, then two more.

# `run` sets stderr (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0 start=$EPOCHREALTIME
  redlock_start "$BATS_FILE_TMPDIR/redlock" 5 || rc=$?
  brought_up "$rc" "5 servers" "$start" || return
  # The servers are seconds old: the restart grace would hold every lock
  # back for 30s. It guards empty restarts, not this.
  export RLOCK_RESTART_GRACE=0
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  skip_without_topology
  read -r -a PORTS <<<"$REDLOCK_PORTS"
}

teardown() {
  local port
  # The replicas test makes servers replicas: masters again for the next.
  for port in ${REPLICAS:-}; do
    topology_cli "$port" replicaof no one >/dev/null || true
  done
}

# json_check JSON PYTHON ARG...: runs PYTHON with d = the parsed JSON and
# argv = ARG...
json_check() {
  local json=$1 code=$2
  shift 2
  python3 -c "import json, sys
d = json.loads(sys.argv[1])
argv = sys.argv[2:]
$code" "$json" "$@"
}

@test "doctor: a section per server, then the redlock checks; --json has servers[5]" {
  local port addresses=()
  run -1 --separate-stderr "$RLOCK" doctor deploy
  echo "$output"
  for port in "${PORTS[@]}"; do
    addresses+=("127.0.0.1:$port")
    [[ $'\n'$output == *$'\n'"server 127.0.0.1:$port"$'\n'"ok      version      Redis "*" at 127.0.0.1:$port "* ]]
  done
  [[ $output == *$'\n\n'"redlock"$'\n'"ok      quorum       5 servers, quorum 3, 5 answered: locks can be taken with 2 more down"$'\n'* ]]
  [[ $output == *$'\n'"ok      independent  the 5 servers that answered are masters with distinct run_ids, none a replica"$'\n'* ]]
  # appendonly no, and a grace of 0 below the 30s TTL; up seconds.
  [[ $output == *$'\n'"warn    restarts     all 5 servers forget their locks on a restart (not appendonly yes with appendfsync always) and --restart-grace 0s is below the 30s TTL: "*"; 127.0.0.1:${PORTS[0]} up "*", less than the 30s TTL: "* ]]
  [[ $output == *$'\n'"ok      clocks       the servers' clocks are within "*" of each other, within the 302ms rlock allows for (1% of the 30s TTL + 2ms); each ran at this host's rate within "*"%"$'\n'* ]]
  [[ $output == *$'\n'"ok      name         lock 'deploy' is key '"*"' on each of the 5 servers, held when 3 of them agree" ]]
  [[ $output != *sentinel* ]]
  [ -z "$stderr" ]
  RLOCK_RESTART_GRACE=30s run -1 "$RLOCK" doctor
  [[ $output == *" forget their locks on a restart (not appendonly yes with appendfsync always), but --restart-grace 30s is at least the 30s TTL: "* ]]
  run -1 --separate-stderr "$RLOCK" doctor --json deploy
  json_check "$output" '
assert "server" not in d and "masters" not in d, d
assert list(d["checks"]) == ["quorum", "independent", "restarts", "clocks", "name"], d["checks"]
assert d["checks"]["quorum"]["values"]["answered"] == 5
assert [s["server"] for s in d["servers"]] == argv, d["servers"]
assert all(list(s["checks"]) == ["version", "eviction", "persistence", "replication", "latency", "clock"] for s in d["servers"])
assert all(s["error"] is None for s in d["servers"])' "${addresses[@]}"
}

@test "doctor: two servers replicas of a third fails independent" {
  local master=${PORTS[0]}
  REPLICAS="${PORTS[1]} ${PORTS[2]}"
  topology_cli "${PORTS[1]}" replicaof 127.0.0.1 "$master"
  topology_cli "${PORTS[2]}" replicaof 127.0.0.1 "$master"
  run -1 --separate-stderr "$RLOCK" doctor
  echo "$output"
  [[ $output == *$'\n'"fail    independent  127.0.0.1:${PORTS[1]} is a replica of 127.0.0.1:$master (another of them); 127.0.0.1:${PORTS[2]} is a replica of 127.0.0.1:$master (another of them): "* ]]
  [[ $output == *$'\n'"server 127.0.0.1:${PORTS[1]}"$'\n'*$'\n'"fail    replication  replica of 127.0.0.1:$master"* ]]
  run -1 --separate-stderr "$RLOCK" doctor --json
  json_check "$output" 'assert d["checks"]["independent"]["status"] == "fail", d
assert d["status"] == "fail"'
  topology_cli "${PORTS[1]}" replicaof no one
  topology_cli "${PORTS[2]}" replicaof no one
  REPLICAS=
  run -1 "$RLOCK" doctor
  [[ $output == *$'\n'"ok      independent  "* ]]
}

@test "status: the redlock line and a SERVERS column" {
  local token
  token=$("$RLOCK" acquire -t 5m deploy)
  run -0 --separate-stderr "$RLOCK" status
  echo "$output"
  [ "${lines[0]}" = "redlock: 5 servers, quorum 3, 5 reachable" ]
  [[ ${lines[1]} == NAME*" SERVERS "* ]]
  [[ ${lines[2]} == "deploy "*" 5/5 "* ]]
  [ -z "$stderr" ]
  "$RLOCK" release --token "$token" deploy
}

@test "doctor with one server killed: its section did not answer, the quorum still holds" {
  local dead=${PORTS[4]}
  topology_kill "$dead"
  run -1 --separate-stderr "$RLOCK" doctor
  echo "$output"
  [[ $output == *$'\n'"server 127.0.0.1:$dead: did not answer ("*")"$'\n\n'"redlock"$'\n'* ]]
  [[ $output == *$'\n'"ok      quorum       5 servers, quorum 3, 4 answered: locks can be taken with 1 more down (127.0.0.1:$dead did not)"$'\n'* ]]
  [[ $output == *$'\n'"ok      independent  the 4 servers that answered are masters"* ]]
  run -1 --separate-stderr "$RLOCK" doctor --json
  json_check "$output" 'assert d["servers"][4]["status"] == "fail", d["servers"][4]
assert d["servers"][4]["error"], d["servers"][4]
assert d["servers"][4]["checks"] == {}
assert d["checks"]["quorum"]["status"] == "ok"'
  run -0 --separate-stderr "$RLOCK" status
  [ "${lines[0]}" = "redlock: 5 servers, quorum 3, 4 reachable; down: 127.0.0.1:$dead" ]
  [[ $stderr == *"server 127.0.0.1:$dead did not answer"* ]]
}

@test "status with 3 of 5 servers killed exits 69" {
  topology_kill "${PORTS[2]}"
  topology_kill "${PORTS[3]}"
  run -69 --separate-stderr "$RLOCK" status
  echo "$output"
  echo "$stderr"
  [[ $stderr == *"127.0.0.1:${PORTS[2]}"* && $stderr == *"127.0.0.1:${PORTS[3]}"* ]]
  run -1 --separate-stderr "$RLOCK" doctor
  [[ $output == *$'\n'"fail    quorum       5 servers, quorum 3, 2 answered: no lock can be taken or renewed until 1 more answer"* ]]
}
