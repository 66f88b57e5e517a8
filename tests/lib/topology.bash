# shellcheck shell=bash
#
# Real Redis Sentinel and Redis Cluster topologies on loopback, for tests.
# Source this file (it sources redis.bash next to it), then:
#
# Sentinel
#   sentinel_start DIR [REPLICAS=2] [SENTINELS=3]
#       One master, REPLICAS replicas of it and SENTINELS sentinels that
#       monitor it as $SENTINEL_MASTER_NAME (default mymaster) with quorum 2
#       (1 for a single sentinel), down-after-milliseconds 1000,
#       failover-timeout 5000 and parallel-syncs 1. Returns once every
#       replica is in sync and every sentinel knows the master, its replicas
#       and the other sentinels. Exports SENTINEL_MASTER_NAME,
#       SENTINEL_MASTER_PORT (the master at start), SENTINEL_REPLICA_PORTS,
#       SENTINEL_NODE_PORTS (master first), SENTINEL_PORTS (lists are
#       space-separated) and RLOCK_SENTINEL_URL
#       (redis+sentinel://127.0.0.1:S1,127.0.0.1:S2,.../NAME).
#   sentinel_export DIR
#       Exports those variables again, from DIR, for a topology that was
#       started in a subshell (in the background, or under bats's run).
#   sentinel_master_port DIR
#       Prints the master's port as the first sentinel that answers reports
#       it (SENTINEL get-master-addr-by-name); 1 when none answers.
#   sentinel_wait_failover DIR OLD_PORT [TIMEOUT=$TOPOLOGY_FAILOVER_TIMEOUT]
#       Waits until every running sentinel reports the same master, other
#       than OLD_PORT, and that master answers ROLE master; prints its port.
#   sentinel_wait_ready DIR
#       Waits until every running sentinel reports the same master, every
#       other running data node is its replica and in sync, and every
#       running sentinel knows them all and the other running sentinels:
#       what a second failover needs after the first.
#
# Cluster
#   cluster_start DIR [MASTERS=3] [REPLICAS_PER_MASTER=1]
#       MASTERS*(1+REPLICAS_PER_MASTER) nodes (cluster-enabled yes,
#       cluster-node-timeout 1000) joined by redis-cli --cluster create.
#       Returns once cluster_wait_ok does. Exports CLUSTER_PORTS (all nodes),
#       CLUSTER_MASTER_PORTS, CLUSTER_REPLICA_PORTS (roles at start) and
#       RLOCK_CLUSTER_URL (redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...).
#   cluster_export DIR
#       Exports those variables again, from DIR (the roles as they are now),
#       for a cluster that was started in a subshell.
#   cluster_wait_ok DIR
#       Waits until every running node says cluster_state:ok with all 16384
#       slots ok, sees every other running node without fail flags, and
#       every running replica's link to its master is up.
#   cluster_node_for_slot DIR SLOT [ASK_PORT]
#       Prints the port of the master owning SLOT, as ASK_PORT (default: the
#       first running node) sees it; 1 when no master owns it.
#   cluster_node_for_key DIR KEY
#       The same for KEY's slot (CLUSTER KEYSLOT).
#   cluster_migrate_slot DIR SLOT TO_PORT
#       Reshards SLOT to the master on TO_PORT: SETSLOT IMPORTING on it,
#       MIGRATING on the owner, MIGRATE of every key in the slot (keys with a
#       newline in their name are not supported), SETSLOT NODE on every
#       running master, then waits until every running node agrees.
#   cluster_failover_by_kill DIR PORT
#       kill -9 of the master on PORT; waits until one of its replicas is
#       master and the other running nodes agree (the killed node marked
#       failed and slotless, cluster_state:ok); prints the new master's port.
#       Fails without killing anything when PORT is no master with replicas.
#
# Redlock (independent masters)
#   redlock_start DIR [N=5]
#       N redis-server masters, no replicas, unaware of each other. Exports
#       REDLOCK_PORTS (space-separated, in start order) and RLOCK_URL:
#       redis://127.0.0.1:P/0 for each, separated by spaces (rediss:// with
#       TOPOLOGY_TLS_CERTS).
#   redlock_export DIR
#       Exports those variables again, from DIR.
#
# TLS
#   With TOPOLOGY_TLS_CERTS=DIR (certificates made by redis_make_certs; set
#   for every topology of the shell), each process listens on TLS only (port
#   0; its port is the tls-port), replicas, sentinels and the cluster bus
#   speak TLS (tls-replication, tls-cluster), client certificates are not
#   asked for, topology_cli passes --tls, and the URLs are rediss+sentinel://
#   and rediss+cluster://.
#
# Any topology (a PORT is looked up among the topologies started by this
# shell or its parents, listed in $TOPOLOGY_DIRS)
#   topology_freeze PORT / topology_thaw PORT
#       SIGSTOP / SIGCONT the process on PORT, and wait until it is stopped
#       / running again.
#   topology_kill PORT
#       SIGKILL the process on PORT and wait until it is gone.
#   topology_restart PORT
#       Start the process that ran on PORT (killed or stopped) again, with
#       its config, and wait until it answers with its new PID. A data node
#       comes back empty (save "", appendonly no) with a new run_id; its old
#       log is kept as KIND.log.N. Fails when it still runs or PORT is taken.
#   topology_stop DIR
#       Stop every redis-server and redis-sentinel that has a pidfile under
#       DIR (TERM and CONT, then KILL after $TOPOLOGY_STOP_TIMEOUT s), also
#       after a start that failed halfway. Returns 1 if one would not die.
#   topology_pid PORT
#       Prints the PID of the process on PORT, read from its pidfile.
#   topology_cli PORT ARG...
#       redis-cli on 127.0.0.1:PORT, given up after $TOPOLOGY_CLI_TIMEOUT s
#       (a frozen server accepts connections but never answers).
#
# The *_start functions take an absent or empty DIR; each process lives in
# DIR/KIND-PORT (KIND: node, sentinel or cluster) with its config, pidfile
# (*.pid) and log. Every process listens on 127.0.0.1 only, on a random free
# port in 20000-55535 (a cluster node's bus port, +10000, is free too), never
# 6379 or 26379. Data nodes run with save "", appendonly no,
# repl-diskless-sync yes and repl-diskless-sync-delay 0; lines in
# $TOPOLOGY_NODE_CONFIG (and $TOPOLOGY_SENTINEL_CONFIG for sentinels) are
# appended to every config and override these. Readiness is polled, never
# slept for. Safe under set -e (bats). Failures return 1 with a message on
# stderr; a missing binary returns 125 (skip) unless CI=true or
# RLOCK_REQUIRE_REDIS=1 (then 1).

# shellcheck source-path=SCRIPTDIR source=redis.bash disable=SC1091
source "$(dirname "${BASH_SOURCE[0]}")/redis.bash"

# Seconds: a whole bring-up, a failover, a stop, one redis-cli call.
: "${TOPOLOGY_START_TIMEOUT:=30}"
: "${TOPOLOGY_FAILOVER_TIMEOUT:=15}"
: "${TOPOLOGY_STOP_TIMEOUT:=5}"
: "${TOPOLOGY_CLI_TIMEOUT:=2}"
: "${SENTINEL_MASTER_NAME:=mymaster}"

# Why the last readiness check failed, printed when a wait times out.
TOPOLOGY_WHY=

topology_error() {
  echo "topology.bash: ERROR: $*" >&2
}

# topology_require BINARY...: 0 when all are in PATH, else 125 or 1.
topology_require() {
  local bin
  for bin in "$@"; do
    command -v "$bin" >/dev/null 2>&1 && continue
    if redis_skip_allowed; then
      echo "topology.bash: $bin not found in PATH; skipping" >&2
      return 125
    fi
    topology_error "$bin not found in PATH" \
      "(required because CI=true or RLOCK_REQUIRE_REDIS=1)"
    return 1
  done
}

topology_cli() {
  local port=${1:?usage: topology_cli PORT ARG...}
  shift
  # shellcheck disable=SC2046 # the TLS options are words
  timeout "$TOPOLOGY_CLI_TIMEOUT" redis-cli $(topology_tls_args) -h 127.0.0.1 -p "$port" "$@"
}

# topology_tls_args: redis-cli's TLS options when TOPOLOGY_TLS_CERTS is set.
topology_tls_args() {
  [[ -z ${TOPOLOGY_TLS_CERTS:-} ]] || echo "--tls --cacert $TOPOLOGY_TLS_CERTS/ca.crt"
}

# topology_tls_config PORT: the config lines that make a process listen on
# TLS only (PORT is its tls-port) and speak TLS to the others.
topology_tls_config() {
  [[ -n ${TOPOLOGY_TLS_CERTS:-} ]] || return 0
  cat <<EOF
port 0
tls-port $1
tls-cert-file $TOPOLOGY_TLS_CERTS/server.crt
tls-key-file $TOPOLOGY_TLS_CERTS/server.key
tls-ca-cert-file $TOPOLOGY_TLS_CERTS/ca.crt
tls-auth-clients no
tls-replication yes
EOF
}

# topology_info PORT SECTION: INFO SECTION without carriage returns.
topology_info() {
  topology_cli "$1" info "$2" 2>/dev/null | tr -d '\r'
}

# topology_info_field PORT SECTION FIELD: one field's value.
topology_info_field() {
  topology_info "$1" "$2" | sed -n "s/^$3://p"
}

topology_role() {
  topology_cli "$1" role 2>/dev/null | head -n 1
}

# topology_poll SECONDS WHAT CMD...: run CMD until it succeeds; on timeout
# name WHAT and the last reason CMD left in TOPOLOGY_WHY.
topology_poll() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  TOPOLOGY_WHY=
  until "$@"; do
    if ((SECONDS >= deadline)); then
      topology_error "timed out after ${timeout}s waiting for $what${TOPOLOGY_WHY:+ ($TOPOLOGY_WHY)}"
      return 1
    fi
    sleep 0.1
  done
}

# topology_pid_is_ours PID DIR: PID is alive and runs in DIR (redis chdirs
# to its `dir`), so a recycled PID is never signalled.
topology_pid_is_ours() {
  redis_pid_alive "$1" && [[ /proc/$1/cwd -ef $2 ]]
}

# topology_pidfile_pid PIDFILE: the PID in PIDFILE when it is ours.
topology_pidfile_pid() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  topology_pid_is_ours "$pid" "$(dirname "$1")" || return 1
  echo "$pid"
}

# topology_stopped PID: true while PID is stopped (SIGSTOP).
topology_stopped() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ ${state:0:1} == T ]]
}

# topology_find PORT: set TOPOLOGY_PID and TOPOLOGY_PIDFILE for the process
# on PORT.
topology_find() {
  local port=$1 dir pidfile
  local -a dirs
  IFS=: read -r -a dirs <<<"${TOPOLOGY_DIRS:-}"
  for dir in "${dirs[@]}"; do
    for pidfile in "$dir"/*-"$port"/*.pid; do
      TOPOLOGY_PID=$(topology_pidfile_pid "$pidfile") || continue
      TOPOLOGY_PIDFILE=$pidfile
      return 0
    done
  done
  topology_error "no process of ours on port $port (TOPOLOGY_DIRS=${TOPOLOGY_DIRS:-})"
  return 1
}

topology_pid() {
  topology_find "${1:?usage: topology_pid PORT}" || return 1
  echo "$TOPOLOGY_PID"
}

# topology_ports DIR KIND [running]: the ports of KIND's processes in DIR,
# one a line, in start order; with `running`, only those alive and not
# frozen.
topology_ports() {
  local dir=$1 kind=$2 filter=${3:-} sub pid
  [[ -s $dir/$kind.order ]] || return 0
  while read -r sub; do
    if [[ $filter == running ]]; then
      pid=$(topology_pidfile_pid "$dir/$sub/$kind.pid") || continue
      topology_stopped "$pid" && continue
    fi
    echo "${sub#"$kind"-}"
  done <"$dir/$kind.order"
}

# topology_prepare DIR: make DIR (absent or empty), register it in
# TOPOLOGY_DIRS and set TOPOLOGY_DIR to its absolute path.
topology_prepare() {
  local dir=$1
  mkdir -p "$dir" || return 1
  dir=$(cd "$dir" && pwd -P) || return 1
  if [[ -n $(ls -A "$dir") ]]; then
    topology_error "'$dir' is not empty"
    return 1
  fi
  topology_register "$dir"
}

# topology_register DIR: add DIR to TOPOLOGY_DIRS, where topology_find
# looks, and set TOPOLOGY_DIR to its absolute path.
topology_register() {
  local dir
  dir=$(cd "$1" && pwd -P) || return 1
  case ":${TOPOLOGY_DIRS:-}:" in
  *":$dir:"*) ;;
  *) export TOPOLOGY_DIRS=${TOPOLOGY_DIRS:+$TOPOLOGY_DIRS:}$dir ;;
  esac
  TOPOLOGY_DIR=$dir
}

# topology_pick_port KIND: set TOPOLOGY_PORT to a free port for KIND.
topology_pick_port() {
  redis_pick_port
  TOPOLOGY_PORT=$REDIS_RANDOM_PORT
  ((TOPOLOGY_PORT <= 55535 && TOPOLOGY_PORT != 26379)) || return 1
  redis_port_in_use "$TOPOLOGY_PORT" && return 1
  [[ $1 != cluster ]] || ! redis_port_in_use $((TOPOLOGY_PORT + 10000))
}

# topology_await SUB KIND PORT: poll until the process started in SUB
# answers on PORT with the PID of its pidfile (0), failed to bind (1),
# died (3) or the deadline passed (2).
topology_await() {
  local sub=$1 kind=$2 port=$3 pid deadline=$((SECONDS + REDIS_START_TIMEOUT + 1))
  while ((SECONDS < deadline)); do
    if grep -qE 'Could not create server TCP listening socket|Failed listening on port|Address already in use' \
      "$sub/$kind.log" 2>/dev/null; then
      return 1
    fi
    if [[ -s $sub/$kind.pid ]]; then
      pid=$(<"$sub/$kind.pid")
      redis_pid_alive "$pid" || return 3
      [[ $(topology_info_field "$port" server process_id) == "$pid" ]] && return 0
    fi
    sleep 0.05
  done
  return 2
}

# topology_launch KIND DIR WRITER [ARG...]: start one process of KIND in
# DIR/KIND-PORT on a free port, its config printed by WRITER SUB PORT ARG...;
# sets TOPOLOGY_PORT and appends KIND-PORT to DIR/KIND.order.
topology_launch() {
  local kind=$1 dir=$2 writer=$3 sub binary=redis-server rc try
  shift 3
  [[ $kind != sentinel ]] || binary=redis-sentinel
  for ((try = 1; try <= 20; try++)); do
    topology_pick_port "$kind" || continue
    sub=$dir/$kind-$TOPOLOGY_PORT
    rm -rf "$sub"
    mkdir "$sub" || return 1
    "$writer" "$sub" "$TOPOLOGY_PORT" "$@" >"$sub/$kind.conf" || return 1
    # fd 3 closed: a daemon holding it would make bats wait for it.
    if ! "$binary" "$sub/$kind.conf" >"$sub/start.out" 2>&1 3>&-; then
      topology_error "$binary $sub/$kind.conf failed: $(cat "$sub/start.out")"
      return 1
    fi
    rc=0
    topology_await "$sub" "$kind" "$TOPOLOGY_PORT" || rc=$?
    case $rc in
    0)
      echo "$kind-$TOPOLOGY_PORT" >>"$dir/$kind.order"
      return 0
      ;;
    1) ;; # the port was taken meanwhile: try another
    *)
      topology_error "$binary on port $TOPOLOGY_PORT did not come up; log follows"
      cat "$sub/$kind.log" >&2 2>/dev/null
      return 1
      ;;
    esac
  done
  topology_error "no free port found for $kind after $try tries"
  return 1
}

# topology_node_config SUB PORT [MASTER_PORT|cluster]: a data node's config.
topology_node_config() {
  local sub=$1 port=$2 mode=${3:-} kind
  kind=$(basename "$sub")
  kind=${kind%-*}
  cat <<EOF
bind 127.0.0.1
port $port
daemonize yes
pidfile $sub/$kind.pid
logfile $sub/$kind.log
dir $sub
save ""
appendonly no
repl-diskless-sync yes
repl-diskless-sync-delay 0
EOF
  topology_tls_config "$port"
  if [[ $mode == cluster ]]; then
    printf 'cluster-enabled yes\ncluster-config-file %s/nodes.conf\n' "$sub"
    printf 'cluster-node-timeout 1000\n'
    [[ -z ${TOPOLOGY_TLS_CERTS:-} ]] || printf 'tls-cluster yes\n'
  elif [[ -n $mode ]]; then
    printf 'replicaof 127.0.0.1 %s\n' "$mode"
  fi
  printf '%s\n' "${TOPOLOGY_NODE_CONFIG:-}"
}

# topology_sentinel_config SUB PORT MASTER_PORT QUORUM: a sentinel's config.
topology_sentinel_config() {
  local sub=$1 port=$2 master=$3 quorum=$4 name=$SENTINEL_MASTER_NAME
  cat <<EOF
bind 127.0.0.1
port $port
daemonize yes
pidfile $sub/sentinel.pid
logfile $sub/sentinel.log
dir $sub
sentinel resolve-hostnames no
sentinel monitor $name 127.0.0.1 $master $quorum
sentinel down-after-milliseconds $name 1000
sentinel failover-timeout $name 5000
sentinel parallel-syncs $name 1
EOF
  topology_tls_config "$port"
  printf '%s\n' "${TOPOLOGY_SENTINEL_CONFIG:-}"
}

# topology_replicas_synced MASTER PORT...: MASTER is master and each PORT
# is its replica with the link up, on both sides.
topology_replicas_synced() {
  local master=$1 port info
  shift
  info=$(topology_info "$master" replication)
  if [[ $info != *role:master* ]]; then
    TOPOLOGY_WHY="$master is not master"
    return 1
  fi
  for port; do
    if [[ $info != *",port=$port,state=online,"* ]]; then
      TOPOLOGY_WHY="$master does not list $port as online"
      return 1
    fi
    if [[ $(topology_info_field "$port" replication master_port) != "$master" ||
      $(topology_info_field "$port" replication master_link_status) != up ]]; then
      TOPOLOGY_WHY="$port has no live link to $master"
      return 1
    fi
  done
}

# sentinel_list PORT WHAT FLAGS: the ports of the WHAT (replicas or
# sentinels) that the sentinel on PORT knows with flags matching the
# extended regular expression FLAGS.
sentinel_list() {
  topology_cli "$1" sentinel "$2" "$SENTINEL_MASTER_NAME" 2>/dev/null |
    awk -v want="^($3)$" 'NR % 2 { key = $0; next }
      key == "port" { port = $0 }
      key == "flags" && $0 ~ want { print port }'
}

# sentinel_reported PORT: the master port the sentinel on PORT reports.
sentinel_reported() {
  topology_cli "$1" sentinel get-master-addr-by-name "$SENTINEL_MASTER_NAME" 2>/dev/null |
    sed -n 2p
}

# sentinel_load DIR: read the master name written by sentinel_start.
sentinel_load() {
  if [[ ! -s $1/master-name ]]; then
    topology_error "no sentinel topology in '$1'"
    return 1
  fi
  SENTINEL_MASTER_NAME=$(<"$1/master-name")
}

sentinel_master_port() {
  local dir=${1:?usage: sentinel_master_port DIR} port master
  sentinel_load "$dir" || return 1
  for port in $(topology_ports "$dir" sentinel running); do
    master=$(sentinel_reported "$port")
    [[ $master =~ ^[0-9]+$ ]] && echo "$master" && return 0
  done
  topology_error "no sentinel in '$dir' reports a master"
  return 1
}

# sentinel_agreed DIR: set SENTINEL_AGREED to the master every running
# sentinel reports, or fail.
sentinel_agreed() {
  local port master
  SENTINEL_AGREED=
  for port in $(topology_ports "$1" sentinel running); do
    master=$(sentinel_reported "$port")
    if [[ -z $master || (-n $SENTINEL_AGREED && $master != "$SENTINEL_AGREED") ]]; then
      TOPOLOGY_WHY="sentinel $port reports '${master}', others '${SENTINEL_AGREED}'"
      return 1
    fi
    SENTINEL_AGREED=$master
  done
  [[ -n $SENTINEL_AGREED ]] || TOPOLOGY_WHY="no sentinel is running"
  [[ -n $SENTINEL_AGREED ]]
}

# sentinel_ready DIR: see sentinel_wait_ready.
sentinel_ready() {
  local dir=$1 port other known
  local -a replica_ports sentinel_ports
  sentinel_agreed "$dir" || return 1
  mapfile -t replica_ports < <(topology_ports "$dir" node running | grep -vx "$SENTINEL_AGREED")
  mapfile -t sentinel_ports < <(topology_ports "$dir" sentinel running)
  topology_replicas_synced "$SENTINEL_AGREED" "${replica_ports[@]}" || return 1
  for port in "${sentinel_ports[@]}"; do
    known=" $(sentinel_list "$port" replicas slave | tr '\n' ' ') "
    for other in "${replica_ports[@]}"; do
      [[ $known == *" $other "* ]] && continue
      TOPOLOGY_WHY="sentinel $port does not know replica $other as up"
      return 1
    done
    # master_down stays set after a failover until the next vote: harmless.
    known=" $(sentinel_list "$port" sentinels 'sentinel(,master_down)?' | tr '\n' ' ') "
    for other in "${sentinel_ports[@]}"; do
      [[ $other == "$port" || $known == *" $other "* ]] && continue
      TOPOLOGY_WHY="sentinel $port does not know sentinel $other"
      return 1
    done
  done
}

sentinel_wait_ready() {
  local dir=${1:?usage: sentinel_wait_ready DIR}
  sentinel_load "$dir" || return 1
  topology_poll "$TOPOLOGY_START_TIMEOUT" "the sentinel topology in $dir" \
    sentinel_ready "$dir"
}

# sentinel_failed_over DIR OLD_PORT: see sentinel_wait_failover.
sentinel_failed_over() {
  sentinel_agreed "$1" || return 1
  if [[ $SENTINEL_AGREED == "$2" ]]; then
    TOPOLOGY_WHY="the sentinels still report $2"
    return 1
  fi
  if [[ $(topology_role "$SENTINEL_AGREED") != master ]]; then
    TOPOLOGY_WHY="$SENTINEL_AGREED does not answer ROLE master yet"
    return 1
  fi
}

sentinel_wait_failover() {
  local dir=${1:?usage: sentinel_wait_failover DIR OLD_PORT [TIMEOUT]}
  local old=${2:?usage: sentinel_wait_failover DIR OLD_PORT [TIMEOUT]}
  sentinel_load "$dir" || return 1
  topology_poll "${3:-$TOPOLOGY_FAILOVER_TIMEOUT}" "a failover away from $old" \
    sentinel_failed_over "$dir" "$old" || return 1
  echo "$SENTINEL_AGREED"
}

# topology_url SCHEME DIR KIND SUFFIX: SCHEME://127.0.0.1:P1,...SUFFIX
# (rediss+... for redis+... when TOPOLOGY_TLS_CERTS is set).
topology_url() {
  local port url='' scheme=$1
  [[ -z ${TOPOLOGY_TLS_CERTS:-} ]] || scheme=rediss${scheme#redis}
  for port in $(topology_ports "$2" "$3"); do
    url+=${url:+,}127.0.0.1:$port
  done
  echo "$scheme://$url$4"
}

sentinel_start() {
  local dir=${1:?usage: sentinel_start DIR [REPLICAS] [SENTINELS]}
  local replicas=${2:-2} sentinels=${3:-3} master quorum=2 i
  local -a ports
  topology_require redis-server redis-sentinel redis-cli || return
  topology_prepare "$dir" || return 1
  dir=$TOPOLOGY_DIR
  echo "$SENTINEL_MASTER_NAME" >"$dir/master-name"
  topology_launch node "$dir" topology_node_config || return 1
  master=$TOPOLOGY_PORT
  for ((i = 0; i < replicas; i++)); do
    topology_launch node "$dir" topology_node_config "$master" || return 1
  done
  # Sentinels learn the replicas from the master's INFO, sent when they
  # connect and then only every 10 s: the replicas must be there first.
  mapfile -t ports < <(topology_ports "$dir" node | tail -n +2)
  topology_poll "$TOPOLOGY_START_TIMEOUT" "replicas in sync with $master" \
    topology_replicas_synced "$master" "${ports[@]}" || return 1
  ((sentinels >= 2)) || quorum=1
  for ((i = 0; i < sentinels; i++)); do
    topology_launch sentinel "$dir" topology_sentinel_config "$master" "$quorum" ||
      return 1
  done
  sentinel_wait_ready "$dir" && sentinel_export "$dir"
}

sentinel_export() {
  local dir=${1:?usage: sentinel_export DIR}
  local -a ports
  sentinel_load "$dir" && topology_register "$dir" || return 1
  dir=$TOPOLOGY_DIR
  mapfile -t ports < <(topology_ports "$dir" node)
  export SENTINEL_MASTER_NAME SENTINEL_MASTER_PORT=${ports[0]}
  export SENTINEL_NODE_PORTS="${ports[*]}"
  export SENTINEL_REPLICA_PORTS="${ports[*]:1}"
  mapfile -t ports < <(topology_ports "$dir" sentinel)
  export SENTINEL_PORTS="${ports[*]}"
  RLOCK_SENTINEL_URL=$(topology_url redis+sentinel "$dir" sentinel "/$SENTINEL_MASTER_NAME")
  export RLOCK_SENTINEL_URL
}

# cluster_nodes PORT: CLUSTER NODES as the node on PORT sees it.
cluster_nodes() {
  topology_cli "$1" cluster nodes 2>/dev/null
}

# cluster_owner_in NODES SLOT: the port of the master owning SLOT in a
# CLUSTER NODES listing (importing/migrating marks in brackets skipped).
cluster_owner_in() {
  awk -v slot="$2" '$3 ~ /master/ {
    for (i = 9; i <= NF; i++) {
      if ($i ~ /^\[/) continue
      n = split($i, r, "-")
      if (slot >= r[1] + 0 && slot <= r[n] + 0) {
        addr = $2; sub(/@.*/, "", addr); sub(/.*:/, "", addr)
        print addr; exit
      }
    }
  }' <<<"$1"
}

# cluster_first_running DIR: the port of the first running node.
cluster_first_running() {
  local port
  port=$(topology_ports "$1" cluster running | head -n 1)
  if [[ -z $port ]]; then
    topology_error "no cluster node is running in '$1'"
    return 1
  fi
  echo "$port"
}

cluster_node_for_slot() {
  local dir=${1:?usage: cluster_node_for_slot DIR SLOT [ASK_PORT]}
  local slot=${2:?usage: cluster_node_for_slot DIR SLOT [ASK_PORT]} ask=${3:-} owner
  [[ -n $ask ]] || ask=$(cluster_first_running "$dir") || return 1
  owner=$(cluster_owner_in "$(cluster_nodes "$ask")" "$slot")
  if [[ -z $owner ]]; then
    topology_error "node $ask knows no owner of slot $slot"
    return 1
  fi
  echo "$owner"
}

cluster_node_for_key() {
  local dir=${1:?usage: cluster_node_for_key DIR KEY} key=${2?usage: cluster_node_for_key DIR KEY}
  local ask slot
  ask=$(cluster_first_running "$dir") || return 1
  slot=$(topology_cli "$ask" cluster keyslot "$key" 2>&1) || :
  [[ $slot =~ ^[0-9]+$ ]] || {
    topology_error "CLUSTER KEYSLOT failed on $ask: $slot"
    return 1
  }
  cluster_node_for_slot "$dir" "$slot" "$ask"
}

# cluster_ok DIR: see cluster_wait_ok.
cluster_ok() {
  local dir=$1 port other info nodes line
  local -a running
  mapfile -t running < <(topology_ports "$dir" cluster running)
  for port in "${running[@]}"; do
    info=$(topology_cli "$port" cluster info 2>/dev/null | tr -d '\r')
    if [[ $info != *cluster_state:ok* || $info != *cluster_slots_ok:16384* ]]; then
      TOPOLOGY_WHY="node $port: $(grep -E 'cluster_state|cluster_slots_ok' <<<"$info" | tr '\n' ' ')"
      return 1
    fi
    nodes=$(cluster_nodes "$port")
    for other in "${running[@]}"; do
      line=$(grep -E "^[^ ]+ 127\.0\.0\.1:$other@" <<<"$nodes")
      if [[ -z $line || $(cut -d' ' -f3 <<<"$line") =~ fail|handshake|noaddr ]]; then
        TOPOLOGY_WHY="node $port sees $other as: ${line:-nothing}"
        return 1
      fi
    done
    if [[ $(topology_role "$port") == slave &&
      $(topology_info_field "$port" replication master_link_status) != up ]]; then
      TOPOLOGY_WHY="replica $port has no live link to its master"
      return 1
    fi
  done
}

cluster_wait_ok() {
  local dir=${1:?usage: cluster_wait_ok DIR}
  topology_poll "$TOPOLOGY_START_TIMEOUT" "the cluster in $dir" cluster_ok "$dir"
}

# cluster_ports_by_role DIR ROLE: the ports of the running nodes whose ROLE
# is ROLE (master or slave), space-separated.
cluster_ports_by_role() {
  local port list=
  for port in $(topology_ports "$1" cluster running); do
    [[ $(topology_role "$port") == "$2" ]] && list+=${list:+ }$port
  done
  echo "$list"
}

cluster_start() {
  local dir=${1:?usage: cluster_start DIR [MASTERS] [REPLICAS_PER_MASTER]}
  local masters=${2:-3} replicas=${3:-1} i
  local -a addrs=()
  topology_require redis-server redis-cli || return
  if ((masters < 3)); then
    topology_error "redis-cli --cluster create needs at least 3 masters"
    return 1
  fi
  topology_prepare "$dir" || return 1
  dir=$TOPOLOGY_DIR
  for ((i = 0; i < masters * (1 + replicas); i++)); do
    topology_launch cluster "$dir" topology_node_config cluster || return 1
    addrs+=("127.0.0.1:$TOPOLOGY_PORT")
  done
  # shellcheck disable=SC2046 # the TLS options are words
  if ! timeout 60 redis-cli $(topology_tls_args) --cluster create "${addrs[@]}" \
    --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1 3>&-; then
    topology_error "redis-cli --cluster create failed; output follows"
    cat "$dir/create.log" >&2
    return 1
  fi
  cluster_wait_ok "$dir" && cluster_export "$dir"
}

cluster_export() {
  local dir=${1:?usage: cluster_export DIR}
  local -a ports
  if [[ ! -s $dir/cluster.order ]]; then
    topology_error "no cluster in '$dir'"
    return 1
  fi
  topology_register "$dir" || return 1
  dir=$TOPOLOGY_DIR
  mapfile -t ports < <(topology_ports "$dir" cluster)
  export CLUSTER_PORTS="${ports[*]}"
  CLUSTER_MASTER_PORTS=$(cluster_ports_by_role "$dir" master)
  CLUSTER_REPLICA_PORTS=$(cluster_ports_by_role "$dir" slave)
  export CLUSTER_MASTER_PORTS CLUSTER_REPLICA_PORTS
  RLOCK_CLUSTER_URL=$(topology_url redis+cluster "$dir" cluster "")
  export RLOCK_CLUSTER_URL
}

# cluster_setslot PORT ARG...: CLUSTER SETSLOT on PORT, which must say OK.
cluster_setslot() {
  local port=$1 out
  shift
  out=$(topology_cli "$port" cluster setslot "$@" 2>&1) || :
  [[ $out == OK ]] && return 0
  topology_error "CLUSTER SETSLOT $* on $port: $out"
  return 1
}

# cluster_move_keys FROM TO SLOT: MIGRATE every key of SLOT, 100 at a time.
cluster_move_keys() {
  local from=$1 to=$2 slot=$3 out
  local -a keys
  while :; do
    mapfile -t keys < <(topology_cli "$from" cluster getkeysinslot "$slot" 100 | grep -v '^$')
    ((${#keys[@]} > 0)) || return 0
    out=$(topology_cli "$from" migrate 127.0.0.1 "$to" "" 0 5000 keys "${keys[@]}" 2>&1) || :
    if [[ $out != OK && $out != NOKEY ]]; then
      topology_error "MIGRATE of slot $slot from $from to $to: $out"
      return 1
    fi
  done
}

# cluster_all_see_owner DIR SLOT PORT: every running node names PORT.
cluster_all_see_owner() {
  local port owner
  for port in $(topology_ports "$1" cluster running); do
    owner=$(cluster_owner_in "$(cluster_nodes "$port")" "$2")
    if [[ $owner != "$3" ]]; then
      TOPOLOGY_WHY="node $port sees slot $2 on ${owner:-nobody}"
      return 1
    fi
  done
}

cluster_migrate_slot() {
  local usage='usage: cluster_migrate_slot DIR SLOT TO_PORT'
  local dir=${1:?$usage} slot=${2:?$usage} to=${3:?$usage} from from_id to_id port
  from=$(cluster_node_for_slot "$dir" "$slot") || return 1
  [[ $from != "$to" ]] || return 0
  if [[ $(topology_role "$to") != master ]]; then
    topology_error "$to is not a master"
    return 1
  fi
  from_id=$(topology_cli "$from" cluster myid) || return 1
  to_id=$(topology_cli "$to" cluster myid) || return 1
  cluster_setslot "$to" "$slot" importing "$from_id" || return 1
  cluster_setslot "$from" "$slot" migrating "$to_id" || return 1
  cluster_move_keys "$from" "$to" "$slot" || return 1
  # The new owner first, so that it never answers MOVED back to the old one.
  cluster_setslot "$to" "$slot" node "$to_id" || return 1
  cluster_setslot "$from" "$slot" node "$to_id" || return 1
  for port in $(cluster_ports_by_role "$dir" master); do
    [[ $port == "$from" || $port == "$to" ]] && continue
    cluster_setslot "$port" "$slot" node "$to_id" || return 1
  done
  topology_poll "$TOPOLOGY_START_TIMEOUT" "all nodes to see slot $slot on $to" \
    cluster_all_see_owner "$dir" "$slot" "$to"
}

# cluster_promoted DIR OLD_ID REPLICA...: one REPLICA is master, and every
# running node sees OLD_ID failed and slotless with the cluster ok.
cluster_promoted() {
  local dir=$1 old_id=$2 port line
  shift 2
  CLUSTER_PROMOTED=
  for port; do
    [[ $(topology_role "$port") == master ]] && CLUSTER_PROMOTED=$port && break
  done
  if [[ -z $CLUSTER_PROMOTED ]]; then
    TOPOLOGY_WHY="no replica of $old_id is master yet"
    return 1
  fi
  for port in $(topology_ports "$dir" cluster running); do
    line=$(grep "^$old_id " <<<"$(cluster_nodes "$port")")
    if [[ $(cut -d' ' -f3 <<<"$line") != *fail* || -n $(cut -d' ' -f9- <<<"$line") ]]; then
      TOPOLOGY_WHY="node $port sees the old master as: ${line:-nothing}"
      return 1
    fi
  done
  cluster_ok "$dir"
}

cluster_failover_by_kill() {
  local dir=${1:?usage: cluster_failover_by_kill DIR PORT}
  local port=${2:?usage: cluster_failover_by_kill DIR PORT} id
  local -a candidates
  if [[ $(topology_role "$port") != master ]]; then
    topology_error "$port is not a running master"
    return 1
  fi
  id=$(topology_cli "$port" cluster myid) || return 1
  mapfile -t candidates < <(cluster_nodes "$port" |
    awk -v id="$id" '$4 == id && $3 !~ /fail/ {
      addr = $2; sub(/@.*/, "", addr); sub(/.*:/, "", addr); print addr }')
  if ((${#candidates[@]} == 0)); then
    topology_error "master $port has no replica to promote"
    return 1
  fi
  topology_kill "$port" || return 1
  topology_poll "$TOPOLOGY_FAILOVER_TIMEOUT" "a replica of $port to take over" \
    cluster_promoted "$dir" "$id" "${candidates[@]}" || return 1
  echo "$CLUSTER_PROMOTED"
}

# topology_signal SIGNAL PORT STATE: send SIGNAL to the process on PORT and
# wait until it is stopped (STATE stopped) or running (STATE running).
topology_signal() {
  local pid deadline=$((SECONDS + 5))
  topology_find "$2" || return 1
  pid=$TOPOLOGY_PID
  kill "-$1" "$pid" || return 1
  while :; do
    if topology_stopped "$pid"; then
      [[ $3 == stopped ]] && return 0
    else
      [[ $3 == running ]] && return 0
    fi
    if ((SECONDS >= deadline)); then
      topology_error "process $pid on port $2 is not $3 after SIG$1"
      return 1
    fi
    sleep 0.02
  done
}

topology_freeze() {
  topology_signal STOP "${1:?usage: topology_freeze PORT}" stopped
}

topology_thaw() {
  topology_signal CONT "${1:?usage: topology_thaw PORT}" running
}

# topology_wait_gone SECONDS PID...: poll until no PID is alive.
topology_wait_gone() {
  local deadline=$((SECONDS + $1)) pid alive
  shift
  while :; do
    alive=
    for pid; do
      redis_pid_alive "$pid" && alive=$pid && break
    done
    [[ -z $alive ]] && return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.02
  done
}

topology_kill() {
  local port=${1:?usage: topology_kill PORT}
  topology_find "$port" || return 1
  kill -KILL "$TOPOLOGY_PID" 2>/dev/null || :
  if ! topology_wait_gone 5 "$TOPOLOGY_PID"; then
    topology_error "process $TOPOLOGY_PID on port $port survived SIGKILL"
    return 1
  fi
  # What a clean shutdown does, so that no stale PID is left to signal.
  rm -f "$TOPOLOGY_PIDFILE"
}

topology_stop() {
  local dir=${1:?usage: topology_stop DIR} pidfile pid
  local -a pids=() pidfiles=()
  [[ -d $dir ]] || return 0
  while IFS= read -r -d '' pidfile; do
    pid=$(topology_pidfile_pid "$pidfile") || continue
    pids+=("$pid")
    pidfiles+=("$pidfile")
  done < <(find "$dir" -name '*.pid' -type f -print0)
  ((${#pids[@]} > 0)) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || :
  # A frozen process acts on TERM only once continued.
  kill -CONT "${pids[@]}" 2>/dev/null || :
  if ! topology_wait_gone "$TOPOLOGY_STOP_TIMEOUT" "${pids[@]}"; then
    kill -KILL "${pids[@]}" 2>/dev/null || :
    if ! topology_wait_gone 5 "${pids[@]}"; then
      topology_error "processes in '$dir' would not die: ${pids[*]}"
      return 1
    fi
  fi
  rm -f "${pidfiles[@]}"
}

redlock_start() {
  local dir=${1:?usage: redlock_start DIR [N]} n=${2:-5} i
  topology_require redis-server redis-cli || return
  if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1)); then
    topology_error "redlock_start: N must be a positive number, got '$n'"
    return 1
  fi
  topology_prepare "$dir" || return 1
  dir=$TOPOLOGY_DIR
  echo "$n" >"$dir/redlock"
  for ((i = 0; i < n; i++)); do
    topology_launch node "$dir" topology_node_config || return 1
  done
  redlock_export "$dir"
}

redlock_export() {
  local dir=${1:?usage: redlock_export DIR} port scheme=redis url=
  local -a ports
  if [[ ! -s $dir/redlock ]]; then
    topology_error "no redlock topology in '$dir'"
    return 1
  fi
  topology_register "$dir" || return 1
  dir=$TOPOLOGY_DIR
  [[ -z ${TOPOLOGY_TLS_CERTS:-} ]] || scheme=rediss
  mapfile -t ports < <(topology_ports "$dir" node)
  for port in "${ports[@]}"; do
    url+=${url:+ }$scheme://127.0.0.1:$port/0
  done
  export REDLOCK_PORTS="${ports[*]}" RLOCK_URL=$url
}

# topology_sub PORT: set TOPOLOGY_SUB and TOPOLOGY_KIND to the directory
# and kind of the process that was started on PORT, running or not.
topology_sub() {
  local port=$1 dir sub
  local -a dirs
  IFS=: read -r -a dirs <<<"${TOPOLOGY_DIRS:-}"
  for dir in "${dirs[@]}"; do
    for sub in "$dir"/*-"$port"; do
      [[ -d $sub ]] || continue
      TOPOLOGY_KIND=$(basename "$sub")
      TOPOLOGY_KIND=${TOPOLOGY_KIND%-*}
      [[ -s $sub/$TOPOLOGY_KIND.conf ]] || continue
      TOPOLOGY_SUB=$sub
      return 0
    done
  done
  topology_error "no process of ours was started on port $port (TOPOLOGY_DIRS=${TOPOLOGY_DIRS:-})"
  return 1
}

topology_restart() {
  local port=${1:?usage: topology_restart PORT} sub kind binary=redis-server pid n=1 rc=0
  topology_sub "$port" || return 1
  sub=$TOPOLOGY_SUB kind=$TOPOLOGY_KIND
  [[ $kind != sentinel ]] || binary=redis-sentinel
  if pid=$(topology_pidfile_pid "$sub/$kind.pid"); then
    topology_error "the $kind on port $port still runs (pid $pid)"
    return 1
  fi
  if redis_port_in_use "$port"; then
    topology_error "port $port is taken by another process"
    return 1
  fi
  # topology_await reads the log for bind errors: only the new run's.
  while [[ -e $sub/$kind.log.$n ]]; do
    n=$((n + 1))
  done
  [[ ! -e $sub/$kind.log ]] || mv "$sub/$kind.log" "$sub/$kind.log.$n" || return 1
  rm -f "$sub/$kind.pid"
  # fd 3 closed: a daemon holding it would make bats wait for it.
  if ! "$binary" "$sub/$kind.conf" >"$sub/start.out" 2>&1 3>&-; then
    topology_error "$binary $sub/$kind.conf failed: $(cat "$sub/start.out")"
    return 1
  fi
  topology_await "$sub" "$kind" "$port" || rc=$?
  ((rc == 0)) && return 0
  topology_error "$binary on port $port did not come back (topology_await: $rc); log follows"
  cat "$sub/$kind.log" >&2 2>/dev/null
  return 1
}
