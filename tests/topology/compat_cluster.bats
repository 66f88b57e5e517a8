#!/usr/bin/env bats
#
# --compat string, shedlock and redisson on a real Redis Cluster (3 masters
# with a replica each, tests/lib/topology.bash): the application's key is on the
# master of its slot, rlock's keys beside it (fence, wake-up list) in the
# same slot, and each step goes there, however the cluster URL's first
# seed is placed. The applications: redis-py's own cluster client
# (redis.cluster.RedisCluster, Debian's python3-redis 4.3.4) holding its
# Lock, and tests/compat/redisson_client.py speaking Redisson's protocol
# on a Cluster: with --sharded as Redisson 3.x does on Redis 7 (its
# ClusterServersConfig.shardedSubscriptionMode AUTO: unlock SPUBLISHes and
# the waiters SSUBSCRIBE; redisson/redisson PublishSubscribeService.java
# getPublishCommand() and subscribeNoTimeout(), RedissonLock.java
# unlockInnerAsync(), ClusterConnectionManager.java), and without.

# Child scripts are single-quoted on purpose (SC2016); `run` sets output,
# lines and stderr (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load ../cli/helpers
load ../cli/heartbeat
# shellcheck source-path=SCRIPTDIR source=../lib/topology.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/topology.bash"
load common

PY=/usr/bin/python3
REDISSON=$BATS_TEST_DIRNAME/../compat/redisson_client.py

# redis-py's cluster client with its Lock, seeded by one node:
#   SEED hold NAME TIMEOUT SECONDS READY: rc.lock(NAME, timeout=TIMEOUT)
#     (blocking), touch READY, hold SECONDS, release
#   SEED try NAME: one non-blocking acquire: 0 (released at once) or 1
REDISPY_CLUSTER='
import sys, time
from redis.cluster import RedisCluster
seed, mode, name = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = seed.rsplit(":", 1)
rc = RedisCluster(host=host, port=int(port))
if mode == "hold":
    lock = rc.lock(name, timeout=float(sys.argv[4]))
    lock.acquire(blocking=True)
    open(sys.argv[6], "w").close()
    time.sleep(float(sys.argv[5]))
    lock.release()
    sys.exit(0)
lock = rc.lock(name, timeout=10)
if not lock.acquire(blocking=False):
    sys.exit(1)
lock.release()
'

setup_file() {
  local rc=0 start=$EPOCHREALTIME
  export CLUSTER_DIR=$BATS_FILE_TMPDIR/cluster
  cluster_start "$CLUSTER_DIR" 3 1 || rc=$?
  brought_up "$rc" "bring-up of the cluster" "$start"
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  topology_setup || return
  need_file /usr/lib/python3/dist-packages/redis/cluster.py python3-redis
  cluster_export "$CLUSTER_DIR"
  export RLOCK_URL=$RLOCK_CLUSTER_URL
  # The URL's first seed: names are picked on other masters, so that rlock
  # must route.
  SEED=${RLOCK_CLUSTER_URL#*://}
  SEED=${SEED%%,*}
  SEED_PORT=${SEED##*:}
  MIGRATING_FILE=$BATS_TEST_TMPDIR/migrating
}

teardown() {
  local slot to
  topology_teardown
  if [[ -n ${MIGRATING_FILE:-} && -s $MIGRATING_FILE ]]; then
    read -r slot to <"$MIGRATING_FILE"
    cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to" || :
  fi
}

# other_master PORT: a master other than PORT.
other_master() {
  local port
  for port in $CLUSTER_MASTER_PORTS; do
    [[ $port != "$1" ]] && echo "$port" && return 0
  done
  return 1
}

# key_on PORT STEM: a name STEM<n> that, as a key itself, is on PORT.
key_on() {
  local i
  for ((i = 0; i < 100; i++)); do
    if [[ $(cluster_node_for_key "$CLUSTER_DIR" "$2$i") == "$1" ]]; then
      echo "$2$i"
      return 0
    fi
  done
  echo "key_on: no name $2<n> is on $1" >&2
  return 1
}

slot_of() {
  topology_cli "$SEED_PORT" cluster keyslot "$1"
}

redispy() {
  timeout -k 5 "$RL_LIMIT" "$PY" -c "$REDISPY_CLUSTER" "$SEED" "$@"
}

redisson() {
  timeout -k 5 "$RL_LIMIT" "$PY" "$REDISSON" "$RLOCK_URL" "$@"
}

# hold STYLE NAME [RLOCK OPTION...]: NAME held by a background rlock
# --compat STYLE until the file go appears; sets HOLDER_PID.
hold() {
  local style=$1 name=$2
  shift 2
  bg "$RLOCK" --compat "$style" "$@" "$name" sh -c \
    'while [ ! -e "$1" ]; do sleep 0.02; done' _ "$BATS_TEST_TMPDIR/go"
  HOLDER_PID=$BG_PID
}

@test "redis-py's RedisCluster lock keeps rlock --compat string out (-n 75); -w runs once it releases" {
  local port name ready=$BATS_TEST_TMPDIR/ready
  port=$(other_master "$SEED_PORT")
  name=$(key_on "$port" pyheld)
  bg "$PY" -c "$REDISPY_CLUSTER" "$SEED" hold "$name" 30 2 "$ready"
  local holder=$BG_PID
  wait_until 15 test -e "$ready"
  [[ $(exists_on "$name" "$port") == 1 ]]
  run -75 rl --compat string -n "$name" true
  run -0 rl --compat string -w 20 "$name" sh -c 'echo ran'
  [ "$output" = ran ]
  reaped 0 "$holder"
}

@test "rlock --compat string holds past its TTL: redis-py's non-blocking acquire fails throughout and succeeds after" {
  local port name deadline tries=0
  port=$(other_master "$SEED_PORT")
  name=$(key_on "$port" renewed)
  hold string "$name" -t 1s
  wait_until 10 held_on "$name" "$port"
  # Three TTLs and more: only renewals keep the key.
  deadline=$((SECONDS + 4))
  while ((SECONDS < deadline)); do
    run -1 redispy try "$name"
    tries=$((tries + 1))
  done
  ((tries >= 2))
  touch "$BATS_TEST_TMPDIR/go"
  reaped 0 "$HOLDER_PID"
  run -0 redispy try "$name"
}

@test "--compat string: the key on its slot's master, rlock's fence and wake-up list beside it, no MOVED followed; NAMEs holding braces too" {
  local port name stem fence
  # On every master; a NAME hashed whole that holds a '{' ("app{user0") or
  # a '}' ("x}y0") has, in rlock's own layout, a key of another slot.
  for port in $CLUSTER_MASTER_PORTS; do
    for stem in plain 'app{user' 'x}y'; do
      name=$(key_on "$port" "$stem")
      run --separate-stderr rl -v --compat string "$name" sh -c \
        'echo "$RLOCK_FENCE"; redis-cli -p "$1" exists "$2"' _ "$port" "$name"
      echo "$name on $port: $output / $stderr"
      [ "$status" -eq 0 ]
      [[ ${lines[0]} =~ ^[0-9]+$ ]]
      [ "${lines[1]}" = 1 ]
      # Each step went straight to the slot's master.
      [[ $stderr != *MOVED* ]]
      # rlock's counter and the wake-up list its release pushed: on the
      # same master, in NAME's slot.
      if [[ $stem == 'x}y' ]]; then
        # A '}' ends a tag: the keys carry a brace-free tag of NAME's slot.
        fence=$(topology_cli "$port" --scan --pattern 'rlock:{slot-*}:fence' | head -n 1)
      else
        fence="rlock:{$name}:fence"
      fi
      [ "$(topology_cli "$port" get "$fence")" = "${lines[0]}" ]
      [ "$(slot_of "$fence")" = "$(slot_of "$name")" ]
      [ "$(exists_on "${fence%:fence}:wake" "$port")" = 1 ]
      [ "$(exists_on "$name" "$port")" = 0 ]
    done
  done
}

@test "--compat shedlock:prod: job-lock:prod:NAME on its slot's master with ShedLock's value; -n meanwhile 75; status shows it" {
  local port name key i
  port=$(other_master "$SEED_PORT")
  for ((i = 0; i < 100; i++)); do
    [[ $(cluster_node_for_key "$CLUSTER_DIR" "job-lock:prod:report$i") == "$port" ]] && break
  done
  name=report$i key=job-lock:prod:report$i
  hold shedlock:prod "$name" -t 10s
  wait_until 10 held_on "$key" "$port"
  [[ $(topology_cli "$port" get "$key") == ADDED:*Z@*:* ]]
  run -75 rl --compat shedlock:prod -n "$name" true
  run -0 rl --compat shedlock:prod status "$name"
  [[ $output == *"$name"* ]]
  touch "$BATS_TEST_TMPDIR/go"
  reaped 0 "$HOLDER_PID"
  [[ $(exists_on "$key" "$port") == 0 ]]
}

@test "--compat string on a slot half migrated: a take follows ASK with ASKING to the importing master, which has the key" {
  local from to name slot from_id to_id
  from=$(other_master "$SEED_PORT")
  name=$(key_on "$from" asked)
  slot=$(slot_of "$name")
  to=$(other_master "$from")
  from_id=$(topology_cli "$from" cluster myid)
  to_id=$(topology_cli "$to" cluster myid)
  # rlock's fence counter exists, and the application holds the key.
  run -0 rl --compat string "$name" true
  topology_cli "$from" set "$name" apptoken px 60000 >/dev/null
  # Importing on $to, migrating on $from, the slot's keys moved already:
  # $from answers ASK, and $to serves them only after ASKING (a script on
  # several keys there needs them all present, else TRYAGAIN).
  echo "$slot $to" >"$MIGRATING_FILE"
  cluster_setslot "$to" "$slot" importing "$from_id"
  cluster_setslot "$from" "$slot" migrating "$to_id"
  cluster_move_keys "$from" "$to" "$slot"
  [ "$(topology_cli "$from" cluster countkeysinslot "$slot")" = 0 ]
  (($(topology_cli "$to" cluster countkeysinslot "$slot") >= 2))
  run --separate-stderr rl -v --compat string -n "$name" true
  echo "$stderr"
  [ "$status" -eq 75 ]
  [[ $stderr == *"ASK $slot "* ]]
  cluster_migrate_slot "$CLUSTER_DIR" "$slot" "$to"
  : >"$MIGRATING_FILE"
  [ "$(topology_cli "$to" get "$name")" = apptoken ]
}

@test "rlock's --compat redisson release wakes Redisson's waiter on the Cluster through its message, sharded (SSUBSCRIBE) or not" {
  local port name mode
  local -a flags
  port=$(other_master "$SEED_PORT")
  for mode in --sharded --unsharded; do
    flags=()
    [[ $mode == --unsharded ]] || flags=("$mode")
    name=$(key_on "$port" "redisson$mode")
    rm -f "$BATS_TEST_TMPDIR/go"
    hold redisson "$name" --ttl 30s
    wait_until 10 held_on "$name" "$port"
    # Redisson's waiter sleeps on its latch for min(PTTL, 20 s): only the
    # unlock message wakes it before then.
    bg "$PY" "$REDISSON" "$RLOCK_URL" "$name" try --wait 20 "${flags[@]}"
    local waiter=$BG_PID out=$BG_OUT
    wait_until 15 grep -qx waiting "$out"
    touch "$BATS_TEST_TMPDIR/go"
    reaped 0 "$HOLDER_PID"
    reaped 0 "$waiter" 30
    run cat "$out"
    echo "$mode: $output"
    [[ ${lines[1]} == "acquired after="*" woken_by=message messages=1" ]]
  done
}

@test "rlock's --compat redisson waiter on the Cluster is woken by Redisson's unlock, sharded (SPUBLISH) or not" {
  local port name mode start
  local -a flags
  port=$(other_master "$SEED_PORT")
  for mode in --sharded --unsharded; do
    flags=()
    [[ $mode == --unsharded ]] || flags=("$mode")
    name=$(key_on "$port" "unlocked$mode")
    # Redisson's lease is its 30 s watchdog: without the message, rlock's
    # waiter looks again only at its safety net, 5 s in at the earliest.
    bg "$PY" "$REDISSON" "$RLOCK_URL" "$name" try --hold 1 "${flags[@]}"
    local holder=$BG_PID
    wait_until 10 held_on "$name" "$port"
    start=$(now_ms)
    run -0 rl --compat redisson --ttl 30s -w 20 "$name" sh -c 'echo ran'
    [ "$output" = ran ]
    echo "$mode: $(($(now_ms) - start)) ms"
    (($(now_ms) - start < 4500))
    reaped 0 "$holder"
  done
}

@test "--compat redisson: a Redisson holder keeps rlock out (75), rlock's hash on NAME's master keeps Redisson out, fence beside it" {
  local port name
  port=$(other_master "$SEED_PORT")
  name=$(key_on "$port" both)
  bg "$PY" "$REDISSON" "$RLOCK_URL" "$name" try --hold 3
  local holder=$BG_PID
  wait_until 10 held_on "$name" "$port"
  run -75 rl --compat redisson -n "$name" true
  reaped 0 "$holder"
  run -0 rl --compat redisson "$name" sh -c \
    'echo "$RLOCK_FENCE"; redis-cli -p "$1" hkeys "$2"' _ "$port" "$name"
  [[ ${lines[1]} =~ ^.+:1$ ]]
  [ "$(topology_cli "$port" get "rlock:{$name}:fence")" = "${lines[0]}" ]
  [ "$(exists_on "$name" "$port")" = 0 ]
}

@test "a plain redis:// URL to one node with --compat: the cluster is followed, each style's key on its slot's master, and redis-py's holder keeps it out" {
  local port name style ready=$BATS_TEST_TMPDIR/ready
  port=$(other_master "$SEED_PORT")
  for style in string shedlock redisson; do
    if [[ $style == shedlock ]]; then
      # ShedLock's key is job-lock:default:NAME: that key on the master.
      name=$(key_on "$port" "job-lock:default:plainurl")
      name=${name#job-lock:default:}
    else
      name=$(key_on "$port" "plainurl$style")
    fi
    run --separate-stderr rl -v --url "redis://127.0.0.1:$SEED_PORT" \
      --compat "$style" "$name" sh -c 'echo "$RLOCK_FENCE"' _
    echo "$style $name: $output / $stderr"
    [ "$status" -eq 0 ]
    [[ $output =~ ^[0-9]+$ ]]
    [[ $stderr == *"is a Redis Cluster node"* ]]
  done
  name=$(key_on "$port" plainheld)
  bg "$PY" -c "$REDISPY_CLUSTER" "$SEED" hold "$name" 30 2 "$ready"
  local holder=$BG_PID
  wait_until 15 test -e "$ready"
  run -75 rl --url "redis://127.0.0.1:$SEED_PORT" --compat string -n "$name" true
  run -0 rl --url "redis://127.0.0.1:$SEED_PORT" --compat string -w 20 "$name" sh -c 'echo ran'
  [ "$output" = ran ]
  reaped 0 "$holder"
}
