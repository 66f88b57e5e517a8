#!/usr/bin/env bats
#
# rlock on a real Redis Cluster (tests/lib/topology.bash): the
# redis+cluster:// URL for every command, names whose hash tag needs
# escaping, status across masters, and what a resharding or a failover does
# to a hold, which must never leave two holders.
#
# The safety checks trust nothing in rlock. Each command appends
# $EPOCHREALTIME to a file of its own every 20 ms while it runs (a
# heartbeat), and the intervals [first beat, last beat] of different runs
# must not intersect; the contention test uses a mkdir critical section.
# Where a lock lives, and whether renewals reach it, is read from the
# servers with redis-cli (CLUSTER KEYSLOT, CLUSTER NODES, EXISTS, PTTL).
#
# Topologies:
#   shared  3 masters with a replica each, started in setup_file and used in
#           file order: the tests that change nothing, then two reshardings
#           (one slot each), then two failovers (kill -9 of a master; each
#           leaves its promoted replica a master without replicas).
#   lone    3 masters without replicas, started by the test that kills one
#           of them and stopped by the test after it (or teardown_file).

# Child scripts are single-quoted on purpose (SC2016); `run` sets output,
# lines and stderr (SC2154); tests that point RLOCK_URL elsewhere or unset
# it look to shellcheck like a subshell's change (SC2030, SC2031).
# shellcheck disable=SC2016,SC2154,SC2030,SC2031

bats_require_minimum_version 1.5.0

load ../cli/helpers
load ../cli/heartbeat
load ../lib/contention
# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

setup_file() {
  local rc=0 start=$EPOCHREALTIME
  export CLUSTER_DIR=$BATS_FILE_TMPDIR/cluster
  export LONE_DIR=$BATS_FILE_TMPDIR/lone
  cluster_start "$CLUSTER_DIR" 3 1 || rc=$?
  brought_up "$rc" "bring-up of the cluster" "$start"
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  topology_setup || return
  # The roles as they are now: earlier tests fail masters over.
  cluster_export "$CLUSTER_DIR"
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  MIGRATING_FILE=$BATS_TEST_TMPDIR/migrating
}

teardown() {
  local slot to
  topology_teardown
  [[ ! -d $BATS_TEST_TMPDIR/r ]] || redis_stop "$BATS_TEST_TMPDIR/r"
  # A test that failed with a slot half migrated: finish the move, so that
  # the tests after it find a stable cluster.
  if [[ -n ${MIGRATING_FILE:-} && -s $MIGRATING_FILE ]]; then
    read -r slot to <"$MIGRATING_FILE"
    cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to" || :
  fi
}

# --- where keys live, from the servers ---------------------------------------

# slot_of KEY: CLUSTER KEYSLOT KEY, asked of a running node.
slot_of() {
  topology_cli "$(cluster_first_running "$CLUSTER_DIR")" cluster keyslot "$1"
}

# other_master PORT: a running master other than PORT.
other_master() {
  local port
  for port in $CLUSTER_MASTER_PORTS; do
    [[ $port != "$1" ]] && echo "$port" && return 0
  done
  return 1
}

# status_rows FILE: "name node slot" for each lock in the status --json
# array in FILE, one a line; fails when FILE is not a JSON array.
status_rows() {
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert isinstance(doc, list), "not an array"
for lock in doc:
    print(lock["name"], lock.get("node"), lock.get("slot"))
' "$1"
}

# json_string TEXT: TEXT as a JSON string, as json_get prints one.
json_string() {
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"
}

# hold_on_every_master PREFIX: in the background, a lock under PREFIX on
# each master, held for 30 s; sets HELD_NAMES and HELD_OWNERS (the ports of
# their masters) once each lock is on its master.
hold_on_every_master() {
  local port name i
  HELD_NAMES=() HELD_OWNERS=()
  for port in $CLUSTER_MASTER_PORTS; do
    name=$(name_on "$port" listed)
    HELD_NAMES+=("$name")
    HELD_OWNERS+=("$port")
    bg "$RLOCK" --prefix "$1" -t 20s "$name" sleep 30
  done
  ((${#HELD_NAMES[@]} == 3))
  for ((i = 0; i < 3; i++)); do
    wait_until 10 held_on "$(lock_key "${HELD_NAMES[i]}" "$1")" "${HELD_OWNERS[i]}"
  done
}

# --- the URL, names and commands ---------------------------------------------

@test "names on each master: the lock is on NAME's master, through one seed that is another master or through every node" {
  local port name key seed
  unset RLOCK_URL
  for port in $CLUSTER_MASTER_PORTS; do
    name=$(name_on "$port" onmaster)
    key=$(lock_key "$name")
    # One seed, not NAME's master: rlock has to find the owner itself.
    seed=$(other_master "$port")
    run -0 rl --url "redis+cluster://127.0.0.1:$seed" "$name" sh -c '
      echo "$RLOCK_KEY"
      echo "$RLOCK_FENCE"
      redis-cli -h 127.0.0.1 -p "$1" exists "$RLOCK_KEY"' _ "$port"
    echo "$name on $port, seed $seed: $output"
    [[ ${lines[0]} == "$key" ]]
    [[ ${lines[1]} =~ ^[0-9]+$ ]]
    [[ ${lines[2]} == 1 ]]
    # The fence key lives about a second (acquire.lua): its slot is the
    # lock's.
    [[ $(slot_of "$(fence_key "$name")") == "$(slot_of "$key")" ]]
    # Released on the way out.
    [[ $(exists_on "$key" "$port") == 0 ]]
    # Every node as a seed, the URL cluster_export gives.
    run -0 rl --url "$RLOCK_CLUSTER_URL" "$name" sh -c \
      'redis-cli -h 127.0.0.1 -p "$1" exists "$RLOCK_KEY"' _ "$port"
    [[ $output == 1 ]]
  done
}

@test "names holding braces (}lead, a{b}c, {, x}): every key of the lock in one slot, on that slot's master, and status names them back" {
  local name key owner slot suffix n=0 done_file
  local -A keys=()
  for name in '}lead' 'a{b}c' '{' 'x}'; do
    n=$((n + 1))
    done_file=$BATS_TEST_TMPDIR/done.$n
    # The command saves its key and fence, then holds until told to end.
    bg "$RLOCK" -t 10s "$name" sh -c '
      printf "%s\n" "$RLOCK_FENCE" >"$1.fence"
      printf "%s\n" "$RLOCK_KEY" >"$1.tmp" && mv "$1.tmp" "$1"
      i=0
      while [ ! -e "$2" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
      _ "$BATS_TEST_TMPDIR/key.$n" "$done_file"
    wait_until 10 file_has "$BATS_TEST_TMPDIR/key.$n"
    key=$(<"$BATS_TEST_TMPDIR/key.$n")
    echo "name '$name': key '$key', fence $(<"$BATS_TEST_TMPDIR/key.$n.fence")"
    [[ $key == rlock:* ]]
    # No two names share a key.
    [[ -z ${keys[$key]:-} ]]
    keys[$key]=$name
    slot=$(slot_of "$key")
    for suffix in fence queue alive once released; do
      [[ $(slot_of "$key:$suffix") == "$slot" ]]
    done
    owner=$(cluster_node_for_key "$CLUSTER_DIR" "$key")
    held_on "$key" "$owner"
    # Held, as rlock sees it through the cluster URL.
    run -75 rl -n "$name" touch ran
    [[ ! -e ran ]]
    run -0 rl status --json "$name"
    echo "$output" >status.json
    [[ $(json_get status.json '[0,"name"]') == "$(json_string "$name")" ]]
    [[ $(json_get status.json '[0,"held"]') == true ]]
    touch "$done_file"
    reaped 0 "$BG_PID" 10
    [[ $(exists_on "$key" "$owner") == 0 ]]
  done
  # The name without braces is another lock.
  [[ -z ${keys[$(lock_key lead)]:-} ]]
}

# The key a managed service's configuration endpoint (one redis:// URL) and
# the cluster URL give must be the same, or the two would not exclude each
# other.
@test "a plain redis:// URL to any master takes the same lock as the cluster URL, braces or not; status through it lists every master" {
  local name key owner port other n=0 done_file
  for name in plainurl '}lead'; do
    n=$((n + 1))
    done_file=$BATS_TEST_TMPDIR/done.$n
    bg "$RLOCK" --url "$RLOCK_CLUSTER_URL" -t 10s "$name" sh -c '
      printf "%s\n" "$RLOCK_KEY" >"$1.tmp" && mv "$1.tmp" "$1"
      i=0
      while [ ! -e "$2" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
      _ "$BATS_TEST_TMPDIR/key.$n" "$done_file"
    wait_until 10 file_has "$BATS_TEST_TMPDIR/key.$n"
    key=$(<"$BATS_TEST_TMPDIR/key.$n")
    owner=$(cluster_node_for_key "$CLUSTER_DIR" "$key")
    for port in $CLUSTER_MASTER_PORTS; do
      run -75 rl --url "redis://127.0.0.1:$port" -n "$name" touch ran
    done
    [[ ! -e ran ]]
    touch "$done_file"
    reaped 0 "$BG_PID" 10
    # The other way round: taken through a node that is not its master.
    other=$(other_master "$owner")
    run -0 rl --url "redis://127.0.0.1:$other" "$name" sh -c \
      'echo "$RLOCK_KEY"; redis-cli -h 127.0.0.1 -p "$1" exists "$RLOCK_KEY"' _ "$owner"
    [[ $output == "$key"$'\n'1 ]]
  done
  hold_on_every_master plain:
  run -0 rl status --url "redis://127.0.0.1:${CLUSTER_MASTER_PORTS%% *}" --prefix plain: --json
  echo "$output" >status.json
  run -0 status_rows status.json
  echo "$output"
  [[ $(cut -d' ' -f1 <<<"$output" | sort) == "$(printf '%s\n' "${HELD_NAMES[@]}" | sort)" ]]
}

# The review's reproduction (topology review G2): the keys of a NAME with a
# brace differ between one server's layout and the Cluster's, and the slot
# owner of the first answers no MOVED. A plain URL to that node must use
# the Cluster's keys from the first step on, for every command.
@test "a{b} through a plain redis:// URL to the node that owns its one-server keys: the same lock as the cluster URL for run, acquire, check, extend, wait, status and release" {
  local name='a{b}' plain key token done_file=$BATS_TEST_TMPDIR/done
  key=$'rlock:{a\x7f(b\x7f)}'
  # The node where rlock:{a{b}}... hash (tag "a{b"): it answers them
  # without a MOVED.
  plain="redis://127.0.0.1:$(cluster_node_for_key "$CLUSTER_DIR" "$(lock_key "$name")")"
  echo "plain URL $plain; the lock's master $(cluster_node_for_key "$CLUSTER_DIR" "$key")"
  bg "$RLOCK" --url "$plain" -t 10s "$name" sh -c '
    printf "%s\n" "$RLOCK_KEY" >"$1.tmp" && mv "$1.tmp" "$1"
    i=0
    while [ ! -e "$2" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done' \
    _ "$BATS_TEST_TMPDIR/key" "$done_file"
  wait_until 10 file_has "$BATS_TEST_TMPDIR/key"
  run -75 rl --url "$RLOCK_CLUSTER_URL" -n "$name" touch ran
  [[ ! -e ran ]]
  run -0 rl status --url "$plain" --json "$name"
  echo "$output" >status.json
  [[ $(json_get status.json '[0,"held"]') == true ]]
  [[ $(<"$BATS_TEST_TMPDIR/key") == "$key" ]]
  touch "$done_file"
  reaped 0 "$BG_PID" 10
  # Taken through the cluster URL; every other command through the plain
  # URL.
  run -0 rl acquire --url "$RLOCK_CLUSTER_URL" --env -t 10s "$name"
  eval "$output"
  [[ $RLOCK_KEY == "$key" ]]
  run -0 rl check --url "$plain" "$name"
  run -0 rl extend --url "$plain" -t 20s "$name"
  run -75 rl wait --url "$plain" -w 1s "$name"
  run -75 rl acquire --url "$plain" -n "$name"
  run -0 rl status --url "$plain" "$name"
  run -0 rl release --url "$plain" "$name"
  run -1 rl check --url "$RLOCK_CLUSTER_URL" "$name"
  # And the other way round.
  unset RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE
  run -0 rl acquire --url "$plain" -t 10s "$name"
  token=$output
  run -75 rl acquire --url "$RLOCK_CLUSTER_URL" -n "$name"
  run -0 rl release --url "$RLOCK_CLUSTER_URL" --token "$token" "$name"
}

@test "--prefix or RLOCK_PREFIX holding a brace with a plain URL to a cluster node: 64 with one line naming the prefix and the node, for every command" {
  local plain prefix
  plain="redis://127.0.0.1:${CLUSTER_MASTER_PORTS%% *}"
  for prefix in 'a{' 'b}' '{x}:'; do
    run -64 --separate-stderr rl --url "$plain" --prefix "$prefix" braces touch ran
    echo "$prefix: $stderr"
    [[ -z $output ]]
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *"prefix '$prefix'"*"127.0.0.1:${CLUSTER_MASTER_PORTS%% *}"* ]]
    run -64 --separate-stderr rl status --url "$plain" --prefix "$prefix"
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *"prefix '$prefix'"* ]]
    run -64 --separate-stderr rl acquire --url "$plain" --prefix "$prefix" braces
    [[ $stderr == *"prefix '$prefix'"* ]]
    run -64 --separate-stderr rl wait --url "$plain" --prefix "$prefix" -w 1s braces
    [[ $stderr == *"prefix '$prefix'"* ]]
    run -64 --separate-stderr env RLOCK_PREFIX="$prefix" "$RLOCK" --url "$plain" braces touch ran
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *"prefix '$prefix'"* ]]
  done
  [[ ! -e ran ]]
  # One server takes such a prefix, and NAMEs with braces.
  own_redis
  run -0 rl --url "redis://127.0.0.1:$REDIS_PORT" --prefix 'a{' 'x{y}' sh -c \
    'echo "$RLOCK_KEY"; redis-cli -p "$1" exists "$RLOCK_KEY"' _ "$REDIS_PORT"
  [[ $output == $'a{{x{y}}\n1' ]]
  redis_stop "$BATS_TEST_TMPDIR/r"
}

@test "cluster URLs: /0 is accepted, another DB is 64; seeds that do not answer and a node without cluster mode are 69, each named" {
  local seed=${CLUSTER_MASTER_PORTS%% *} p1 p2
  run -0 rl --url "redis+cluster://127.0.0.1:$seed/0" db0 true
  run -64 --separate-stderr rl --url "redis+cluster://127.0.0.1:$seed/1" db1 touch ran
  echo "$stderr"
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == *--url* ]]
  run -64 rl status --url "redis+cluster://127.0.0.1:$seed/1"
  p1=$(closed_port)
  p2=$(closed_port)
  run -69 --separate-stderr rl --url "redis+cluster://127.0.0.1:$p1,127.0.0.1:$p2" -w 1s nobody touch ran
  echo "$stderr"
  [[ $stderr == *"127.0.0.1:$p1"*"127.0.0.1:$p2"* ]]
  own_redis
  run -69 --separate-stderr rl --url "redis+cluster://127.0.0.1:$REDIS_PORT" -w 1s standalone touch ran
  echo "$stderr"
  [[ $stderr == *"127.0.0.1:$REDIS_PORT"* ]]
  redis_stop "$BATS_TEST_TMPDIR/r"
  [[ ! -e ran ]]
}

@test "--limit 2 through the cluster URL: both keys of the semaphore on NAME's master, two holders at once, a third -n is 75, status shows HELD 2/2" {
  local port name key
  port=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$port" sem)
  key=$(lock_key "$name")
  [[ $(slot_of "$(holders_key "$name")") == "$(slot_of "$key")" ]]
  bg "$RLOCK" --limit 2 "$name" sleep 30
  bg "$RLOCK" --limit 2 "$name" sleep 30
  wait_until 10 eval '[[ $(topology_cli "$port" zcard "$(holders_key "$name")") == 2 ]]'
  [[ $(exists_on "$key" "$port") == 1 ]]
  run -75 rl --limit 2 -n "$name" true
  run -64 --separate-stderr rl -n "$name" true
  [[ $stderr == *"--limit 2"* ]]
  run -0 rl status "$name"
  [[ $output == *"HELD 2/2"* ]]
}

@test "--shared through the cluster URL: its keys on NAME's master, readers together, a writer queued there gets in after them" {
  local port name key writer
  port=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$port" rw)
  key=$(lock_key "$name")
  [[ $(slot_of "$(queue_key "$name")") == "$(slot_of "$key")" ]]
  bg "$RLOCK" --shared "$name" sleep 2
  bg "$RLOCK" -s "$name" sleep 2
  wait_until 10 eval '[[ $(topology_cli "$port" zcard "$(holders_key "$name")") == 2 ]]'
  run -0 rl status "$name"
  [[ $output == *"SHARED 2"* ]]
  bg "$RLOCK" "$name" touch "$BATS_TEST_TMPDIR/wrote"
  writer=$BG_PID
  wait_until 10 eval '[[ $(topology_cli "$port" zcard "$(queue_key "$name")") == 1 ]]'
  run -75 rl --shared -n "$name" true
  reaped 0 "$writer" 15
  [[ -e $BATS_TEST_TMPDIR/wrote ]]
  run -0 rl --shared -n "$name" true
}

# blocked_on PORT N: true when N clients block in BLPOP on the node at PORT.
blocked_on() {
  [[ $(topology_cli "$1" client list | grep -c cmd=blpop) == "$2" ]]
}

# held_by_one_of PORT KEY PID...: true when one of PIDs holds the lock KEY.
held_by_one_of() {
  local pid
  pid=$(topology_cli "$1" hget "$2" pid)
  shift 2
  [[ " $* " == *" $pid "* ]]
}

@test "a release through the cluster URL wakes one waiter at once: it blocks on NAME's master" {
  local port name key first second
  port=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$port" wake)
  key=$(lock_key "$name")
  bg "$RLOCK" "$name" sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 10 held_on "$key" "$port"
  bg "$RLOCK" "$name" sleep 30
  first=$BG_PID
  bg "$RLOCK" "$name" sleep 30
  second=$BG_PID
  wait_until 10 blocked_on "$port" 2
  touch go
  reaped 0 "$holder" 10
  # One waiter holds it, woken by the release, not by its safety net (5-10 s
  # behind a 30 s lease); the other still blocks.
  wait_until 2 held_by_one_of "$port" "$key" "$first" "$second"
  wait_until 2 blocked_on "$port" 1
}

@test "acquire, check, extend, wait and release through the cluster URL" {
  local url=$RLOCK_CLUSTER_URL name key owner seed waiter
  unset RLOCK_URL
  owner=${CLUSTER_MASTER_PORTS##* }
  name=$(name_on "$owner" cmds)
  key=$(lock_key "$name")
  seed=$(other_master "$owner")
  url="redis+cluster://127.0.0.1:$seed"
  run -0 rl acquire --url "$url" --env -t 10s "$name"
  echo "$output"
  eval "$output"
  [[ $RLOCK_KEY == "$key" && $RLOCK_NAME == "$name" ]]
  [[ $RLOCK_FENCE =~ ^[0-9]+$ ]]
  [[ $(topology_cli "$owner" hget "$key" token) == "$RLOCK_TOKEN" ]]
  run -0 rl check --url "$url" --min-validity 5s "$name"
  run -0 rl extend --url "$url" -t 60s "$name"
  (($(topology_cli "$owner" pttl "$key") > 30000))
  run -75 rl wait --url "$url" -w 1s "$name"
  run -75 rl acquire --url "$url" -n "$name"
  run -75 rl --url "$url" -n "$name" touch ran
  [[ ! -e ran ]]
  # A waiter, woken by the release.
  bg "$RLOCK" wait --url "$url" -w 20s "$name"
  waiter=$BG_PID
  sleep 0.5
  running "$waiter"
  run -0 rl release --url "$url" "$name"
  [[ $(exists_on "$key" "$owner") == 0 ]]
  reaped 0 "$waiter" 10
  run -1 rl check --url "$url" "$name"
  run -0 rl wait --url "$url" -w 1s "$name"
  run -1 rl release --url "$url" "$name"
  # And once more through every seed.
  run -0 rl acquire --url "$RLOCK_CLUSTER_URL" -t 10s "$name"
  held_on "$key" "$owner"
  run -0 rl release --url "$RLOCK_CLUSTER_URL" --token "$output" "$name"
  [[ $(exists_on "$key" "$owner") == 0 ]]
}

@test "--prefix holding a brace with a cluster URL: 64 with one line naming --prefix; a prefix without braces is used" {
  local prefix owner
  for prefix in 'a{' 'b}' '{x}:'; do
    run -64 --separate-stderr rl --url "$RLOCK_CLUSTER_URL" --prefix "$prefix" braces touch ran
    echo "$prefix: $stderr"
    [[ -z $output ]]
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *--prefix* ]]
    run -64 --separate-stderr rl status --url "$RLOCK_CLUSTER_URL" --prefix "$prefix"
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *--prefix* ]]
    run -64 --separate-stderr rl acquire --url "$RLOCK_CLUSTER_URL" --prefix "$prefix" braces
    [[ $stderr == *--prefix* ]]
  done
  [[ ! -e ran ]]
  # The contrast: a prefix without braces.
  owner=$(cluster_node_for_key "$CLUSTER_DIR" 'app:{pfx}')
  run -0 rl --prefix app: pfx sh -c \
    'echo "$RLOCK_KEY"; redis-cli -h 127.0.0.1 -p "$1" exists "$RLOCK_KEY"' _ "$owner"
  [[ $output == $'app:{pfx}\n1' ]]
}

@test "status --json lists the locks held on every master, each with its master as node and its slot; --match and names select across masters" {
  local line i
  # A prefix of its own: no other test's locks in the listing.
  hold_on_every_master st:
  run -0 rl status --prefix st: --json
  echo "$output" >status.json
  run -0 status_rows status.json
  echo "$output"
  ((${#lines[@]} == 3))
  [[ $(cut -d' ' -f1 <<<"$output" | sort) == "$(printf '%s\n' "${HELD_NAMES[@]}" | sort)" ]]
  run -0 rl status --prefix st: --json --match "${HELD_NAMES[2]}"
  echo "$output" >match.json
  run -0 status_rows match.json
  [[ $output == "${HELD_NAMES[2]} "* && ${#lines[@]} == 1 ]]
  run -0 rl status --prefix st: "${HELD_NAMES[1]}"
  [[ $output == *$'\n'"${HELD_NAMES[1]} "* ]]
  run -1 rl status --prefix st: "${HELD_NAMES[1]}" free-one
  # Where each lock lives.
  run -0 status_rows status.json
  for ((i = 0; i < 3; i++)); do
    line="${HELD_NAMES[i]} 127.0.0.1:${HELD_OWNERS[i]} $(slot_of "$(lock_key "${HELD_NAMES[i]}" st:)")"
    [[ $'\n'$output$'\n' == *$'\n'"$line"$'\n'* ]]
  done
}

@test "status: a first line that starts with cluster:, then the table with the locks of every master" {
  local name
  hold_on_every_master st2:
  run -0 rl status --prefix st2:
  echo "$output"
  [[ ${lines[0]} == cluster:* ]]
  [[ ${lines[1]} == NAME* ]]
  for name in "${HELD_NAMES[@]}"; do
    [[ $output == *$'\n'"$name "*"sleep 30"* ]]
  done
}

@test "doctor on the cluster URL: it answers with its checks, and --json is an object of checks" {
  run rl doctor
  echo "$output"
  ((status == 0 || status == 1))
  [[ $output =~ (^|$'\n')(ok|warn|fail|unknown)\ +[a-z] ]]
  [[ $output == *[Cc]luster* ]]
  run rl doctor --json
  ((status == 0 || status == 1))
  echo "$output" >doctor.json
  [[ $(json_type doctor.json '["checks"]') == object ]]
}

@test "doctor: a TTL shorter than a cluster failover (cluster-node-timeout 1000) fails" {
  run -1 rl doctor --ttl 1s
  echo "$output"
  [[ $output =~ (^|$'\n')fail\ +[^$'\n']*(failover|cluster-node-timeout) ]]
  run rl doctor --ttl 30s
  echo "$output"
  [[ ! $output =~ (^|$'\n')fail\ +[^$'\n']*(failover|cluster-node-timeout) ]]
}

@test "contention: 8 processes x 25 runs on one name through the cluster URL: no overlap, counter 200, fences increase" {
  local start=$EPOCHREALTIME owner
  contend "$BATS_TEST_TMPDIR/cs" 8 25 "$RLOCK" contended
  note "contention, 200 runs: $(elapsed "$start") s"
  contention_ok "$BATS_TEST_TMPDIR/cs" 200
  owner=$(owner_of contended)
  [[ $(exists_on "$(lock_key contended)" "$owner") == 0 ]]
}

# --- resharding --------------------------------------------------------------

@test "a resharding of NAME's slot during a hold keeps the lock: renewed on the new master, a waiter across the move starts only after the holder" {
  local name key from to slot hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2
  local ev2=$BATS_TEST_TMPDIR/ev2 r1 r2 start
  from=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$from" resharded)
  key=$(lock_key "$name")
  slot=$(slot_of "$key")
  to=$(other_master "$from")
  bg "$RLOCK" -t 3s "$name" bash -c "$(hold_script "$hb1" 10)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  child_group "$hb1" >/dev/null
  renewed_on "$key" "$from"
  # A waiter subscribed on the old master, which drops a sharded
  # subscription when the slot moves.
  bg "$RLOCK" -t 3s -w 30s --events "$ev2" "$name" bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  wait_until 5 has_event "$ev2" waiting
  start=$EPOCHREALTIME
  echo "$slot $to" >"$MIGRATING_FILE"
  cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to"
  : >"$MIGRATING_FILE"
  note "slot $slot of '$name' moved from $from to $to in $(elapsed "$start") s"
  [[ $(cluster_node_for_key "$CLUSTER_DIR" "$key") == "$to" ]]
  # Renewals reach the new master.
  renewed_on "$key" "$to"
  renewed_on "$key" "$to"
  run -75 rl -n "$name" touch ran
  [[ ! -e ran ]]
  running "$r2"
  reaped 0 "$r1" 15
  reaped 0 "$r2" 30
  no_overlap "$hb1" "$hb2"
  [[ -s $hb2 ]]
  (($(span_ms "$hb1") >= 9900))
  [[ $(exists_on "$key" "$to") == 0 ]]
}

@test "a waiter on a slot being migrated gets the lock once the holder ends and the move completes" {
  local name key from to slot from_id to_id hb1=$BATS_TEST_TMPDIR/hb1
  local hb2=$BATS_TEST_TMPDIR/hb2 r1 r2 pgid rc1=0 start
  from=${CLUSTER_MASTER_PORTS%% *}
  name=$(name_on "$from" migrating)
  key=$(lock_key "$name")
  slot=$(slot_of "$key")
  to=$(other_master "$from")
  from_id=$(topology_cli "$from" cluster myid)
  to_id=$(topology_cli "$to" cluster myid)
  bg "$RLOCK" -t 5s "$name" bash -c "$(hold_script "$hb1" 3)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  # The first half of a resharding: the slot is importing on $to and
  # migrating on $from, its keys still on $from.
  echo "$slot $to" >"$MIGRATING_FILE"
  cluster_setslot "$to" "$slot" importing "$from_id"
  cluster_setslot "$from" "$slot" migrating "$to_id"
  [[ $(topology_cli "$from" cluster nodes) == *"[$slot->-$to_id]"* ]]
  bg "$RLOCK" -t 5s -w 20s "$name" bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  # The holder's command ends while the slot is half moved; then the move
  # completes (the keys, then the slot's owner).
  wait_until 10 group_dead "$pgid"
  sleep 0.5
  start=$EPOCHREALTIME
  cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to"
  : >"$MIGRATING_FILE"
  reap "$r1" 15 || rc1=$?
  reaped 0 "$r2" 20
  note "the holder exited $rc1; the waiter's command started (from the move's start)" \
    "$((($(first_beat "$hb2") - $(usec "$start")) / 1000)) ms"
  cat "$BATS_TEST_TMPDIR"/bg.*.err
  ((rc1 == 0))
  no_overlap "$hb1" "$hb2"
  [[ -s $hb2 ]]
  [[ $(cluster_node_for_key "$CLUSTER_DIR" "$key") == "$to" ]]
  [[ $(exists_on "$key" "$to") == 0 ]]
}

# --- failovers ---------------------------------------------------------------

@test "kill -9 of NAME's master during a hold: the run goes on or ends (70) before a waiter's command starts, never both" {
  local name old new hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2
  local ev1=$BATS_TEST_TMPDIR/ev1 r1 r2 pgid rc1=0 start
  old=$(master_with_replica)
  name=$(name_on "$old" failover)
  bg "$RLOCK" -t 3s --events "$ev1" "$name" bash -c "$(hold_script "$hb1" 8)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  # A renewal first: the lease then is one the renewer has kept.
  wait_until 5 has_event "$ev1" renewed
  # --replicas 0 for the waiter: the promoted replica has no replica of its
  # own, which the default refuses (the old master is not restarted).
  bg "$RLOCK" --replicas 0 -t 3s -w 30s "$name" bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  start=$EPOCHREALTIME
  new=$(cluster_failover_by_kill "$CLUSTER_DIR" "$old")
  note "failover from $old to $new in $(elapsed "$start") s"
  [[ $(owner_of "$name") == "$new" ]]
  reap "$r1" 20 || rc1=$?
  reaped 0 "$r2" 40
  note "the holder exited $rc1"
  cat "$BATS_TEST_TMPDIR"/bg.*.err
  kept_or_lost "$rc1" "$pgid" "$hb1" "$ev1" 3000 8 "$hb2"
}

@test "fences keep increasing across a cluster failover (kill -9 of NAME's master)" {
  local old new name start
  old=$(master_with_replica)
  name=$(name_on "$old" fenced)
  : >fences
  for _ in 1 2 3; do
    run -0 rl -w 10s "$name" sh -c 'echo "$RLOCK_FENCE" >>fences'
  done
  echo failover >>fences
  start=$EPOCHREALTIME
  new=$(cluster_failover_by_kill "$CLUSTER_DIR" "$old")
  note "failover from $old to $new in $(elapsed "$start") s"
  [[ $(owner_of "$name") == "$new" ]]
  # --replicas 0: the promoted replica has no replica of its own.
  for _ in 1 2 3; do
    run -0 rl --replicas 0 -w 10s "$name" sh -c 'echo "$RLOCK_FENCE" >>fences'
  done
  cat fences
  [[ $(grep -cE '^[0-9]+$' fences) == 6 ]]
  increasing fences
}

@test "--replicas 0 and a TTL longer than the failover: the run goes on on the promoted replica" {
  # With one replica per master, the promoted replica has none: a run that
  # required one confirmation stops (the test above); one that required
  # none keeps its lock, since the replica had it.
  promoted_keeps kept
}

# --- a master lost for good --------------------------------------------------

@test "3 masters without replicas, one killed: a run for a name on it exits 69 once -w has run out" {
  local url dead name start took
  cluster_start "$LONE_DIR" 3 0
  url=$RLOCK_CLUSTER_URL
  dead=${CLUSTER_MASTER_PORTS##* }
  name=$(name_on "$dead" orphan "$LONE_DIR")
  # --replicas 0: these masters have no replica, which the default refuses;
  # what is tested is the master lost for good.
  run -0 rl --url "$url" --replicas 0 "$name" true
  topology_kill "$dead"
  start=$EPOCHREALTIME
  run -69 --separate-stderr rl --url "$url" --replicas 0 -w 3s "$name" touch ran
  took=$(elapsed "$start")
  note "exit 69 after $took s: $stderr"
  [[ ! -e ran ]]
  [[ $stderr == rlock:* ]]
  # It waited for -w: at least about 3 s.
  awk -v t="$took" 'BEGIN { exit !(t >= 2.9) }'
}

@test "status with a master down: 69, the master that does not answer named on stderr" {
  [[ -s $LONE_DIR/cluster.order ]] || skip "needs the cluster of the test before"
  local url dead
  cluster_export "$LONE_DIR"
  url=$RLOCK_CLUSTER_URL
  dead=$(topology_ports "$LONE_DIR" cluster | grep -vxF -f <(topology_ports "$LONE_DIR" cluster running))
  [[ $dead =~ ^[0-9]+$ ]]
  run -69 --separate-stderr rl status --url "$url"
  echo "stdout: $output"
  echo "stderr: $stderr"
  [[ $stderr == *"127.0.0.1:$dead"* ]]
  topology_stop "$LONE_DIR"
}

# --- a cluster never served in full, and the map read after a failure --------

# partial_cluster DIR: three cluster nodes that know each other, of which
# only the first serves slots, 0-5000 (what a --cluster create that failed
# half-way leaves); sets PARTIAL_PORTS.
partial_cluster() {
  local dir i port
  local -a ports=()
  topology_prepare "$1" || return 1
  dir=$TOPOLOGY_DIR
  for i in 1 2 3; do
    topology_launch cluster "$dir" topology_node_config cluster || return 1
    ports+=("$TOPOLOGY_PORT")
  done
  [[ $(topology_cli "${ports[0]}" cluster addslotsrange 0 5000) == OK ]] || return 1
  for port in "${ports[@]:1}"; do
    [[ $(topology_cli "${ports[0]}" cluster meet 127.0.0.1 "$port") == OK ]] || return 1
  done
  PARTIAL_PORTS="${ports[*]}"
}

# slot_in PORT NAME: the slot of lock NAME's key on a cluster (its tag has no
# brace for these names), asked of the node on PORT.
slot_in() {
  topology_cli "$1" cluster keyslot "$(lock_key "$2")"
}

# name_in_slots PORT STEM FIRST LAST: a name STEM<n> whose slot is in
# FIRST-LAST.
name_in_slots() {
  local i slot
  for ((i = 0; i < 300; i++)); do
    slot=$(slot_in "$1" "$2$i")
    if ((slot >= $3 && slot <= $4)); then
      echo "$2$i"
      return 0
    fi
  done
  return 1
}

@test "a cluster whose slots were never all served: 69 with one line at the first attempt, without -w; served slots run once full coverage is not required" {
  local n1 url uncovered covered name
  partial_cluster "$BATS_FILE_TMPDIR/partial"
  read -r n1 _ <<<"$PARTIAL_PORTS"
  url="redis+cluster://127.0.0.1:$n1"
  uncovered=$(name_in_slots "$n1" free 5001 16383)
  covered=$(name_in_slots "$n1" served 0 5000)
  # A slot no master serves; then one the first node serves, on a cluster
  # that is down (cluster-require-full-coverage yes, the default).
  for name in "$uncovered" "$covered"; do
    RL_LIMIT=20 run -69 --separate-stderr rl --url "$url" "$name" touch ran
    echo "$name: $stderr"
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == *"not served"* ]]
  done
  [[ ! -e ran ]]
  RL_LIMIT=20 run -69 --separate-stderr rl acquire --url "$url" "$uncovered"
  [[ $stderr == *"not served"* ]]
  # Where coverage is not required, a served slot works, and an unserved
  # one is still said at once.
  topology_cli "$n1" config set cluster-require-full-coverage no
  wait_until 10 eval '[[ $(topology_cli "$n1" cluster info) == *cluster_state:ok* ]]'
  # This cluster has no replica: --replicas 0 (the default, 1, would wait
  # for a confirmation that cannot come).
  run -0 rl --url "$url" --replicas 0 "$covered" true
  RL_LIMIT=20 run -69 --separate-stderr rl --url "$url" "$uncovered" true
  [[ $stderr == *"not served"* ]]
  topology_stop "$BATS_FILE_TMPDIR/partial"
}

@test "a master that does not answer is asked last for the slot map, after the other nodes and the seeds" {
  local dir=$BATS_FILE_TMPDIR/order url dead seed name
  cluster_start "$dir" 3 0
  # The master of slot 0 comes first in the map's order.
  dead=$(cluster_node_for_slot "$dir" 0)
  seed=$(other_master "$dead")
  url="redis+cluster://127.0.0.1:$seed"
  name=$(name_on "$dead" first "$dir")
  topology_kill "$dead"
  run -69 --separate-stderr rl --url "$url" -v -w 2s "$name" true
  echo "$stderr"
  # Several attempts failed on the dead master, each followed by a map read.
  (($(grep -c "master 127.0.0.1:$dead of slot .* does not answer" <<<"$stderr") >= 2))
  [[ $stderr != *"no slot map from 127.0.0.1:$dead"* ]]
  topology_stop "$dir"
}

# RFC 6874 writes the '%' before an IPv6 zone id as %25. A link-local
# address needs its zone, and glibc resolves an interface name only for one,
# so the test runs in a network namespace of its own (unshare -n, nothing
# reachable from outside it) whose loopback carries fe80::1, with a
# redis-server there that serves every slot (one node is a whole cluster).
@test "an IPv6 zone id in the URL ([fe80::1%25lo]) reaches a link-local node, through a plain and a cluster URL; a bad one is 64" {
  command -v unshare >/dev/null || skip "unshare not found"
  cat >netns.sh <<'SCRIPT'
set -u
rl=$1
ip link set lo up
ip -6 addr add fe80::1/64 dev lo nodad
redis-server --port 7001 --bind '::' --protected-mode no --save '' \
  --appendonly no --cluster-enabled yes --dir "$PWD" \
  --cluster-config-file "$PWD/nodes.conf" >redis.log 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid"' EXIT
trap 'exit 1' INT TERM
for _ in $(seq 100); do redis-cli -h ::1 -p 7001 ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -h ::1 -p 7001 cluster addslotsrange 0 16383 >/dev/null
for _ in $(seq 100); do
  redis-cli -h ::1 -p 7001 cluster info | grep -q cluster_state:ok && break
  sleep 0.1
done
for url in 'redis://[fe80::1%25lo]:7001' 'redis+cluster://[fe80::1%25lo]:7001'; do
  "$rl" --url "$url" --replicas 0 zone sh -c 'redis-cli -h ::1 -p 7001 exists "$RLOCK_KEY"'
  echo "exit $?"
done
SCRIPT
  run -0 timeout 60 unshare -n bash netns.sh "$RLOCK"
  echo "$output"
  [[ $output == $'1\nexit 0\n1\nexit 0' ]]
  run -64 --separate-stderr rl --url "redis://[fe80::1%25]:7001" zone touch ran
  echo "$stderr"
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == *"zone id"* ]]
  [[ ! -e ran ]]
}
