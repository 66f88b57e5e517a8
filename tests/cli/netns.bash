# shellcheck shell=bash
#
# Helpers for netfaults.bats: network namespaces joined by a veth pair (with
# a redis-server in one and rlock in the other), memory cgroups, replicas,
# and the heartbeat and lease-time checks of faults.bats. Load after helpers.
#
# Everything a test creates is recorded in $BATS_TEST_TMPDIR and removed by
# nf_teardown, also when the test failed half-way: redis-servers, processes,
# the children's process groups, namespaces (with the veth pair in them) and
# cgroups. Namespaces are named rlk-<pid>-<test number>-{srv,cli}, so that
# parallel runs never share one. No address outside those namespaces is
# used: the veth pair carries 10.213.0.1/30 (server) and 10.213.0.2/30
# (client), and nothing else is configured on either side.

# Child scripts are single-quoted on purpose.
# shellcheck disable=SC2016

NF_SRV_ADDR=10.213.0.1
NF_CLI_ADDR=10.213.0.2
NF_SRV_IF=rlk-srv
NF_CLI_IF=rlk-cli

# nf_setup: from setup, after common_setup.
nf_setup() {
  NF_NETNS_FILE=$BATS_TEST_TMPDIR/nf.netns
  NF_REDIS_FILE=$BATS_TEST_TMPDIR/nf.redis
  NF_CGROUP_FILE=$BATS_TEST_TMPDIR/nf.cgroups
  GROUPS_FILE=$BATS_TEST_TMPDIR/nf.groups
  : >"$NF_NETNS_FILE"
  : >"$NF_REDIS_FILE"
  : >"$NF_CGROUP_FILE"
  : >"$GROUPS_FILE"
}

# nf_teardown: from teardown. Stops this test's redis-servers, the processes
# started with bg, what is left of the children's groups and of anything in
# this test's namespaces and cgroups, then deletes the namespaces and cgroups.
nf_teardown() {
  local dir ns cg pid
  [[ -n ${NF_REDIS_FILE:-} ]] || return 0
  while read -r dir; do
    [[ -n $dir ]] && redis_stop "$dir"
  done <"$NF_REDIS_FILE"
  common_teardown
  kill_child_groups
  # Only this test's processes can be in the namespaces and cgroups it made.
  while read -r ns; do
    [[ -n $ns ]] || continue
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null
    done
    wait_until 5 nf_netns_empty "$ns" || true
    ip netns delete "$ns" 2>/dev/null
  done <"$NF_NETNS_FILE"
  while read -r cg; do
    [[ -n $cg && -d $cg ]] || continue
    while read -r pid; do
      [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
    done <"$cg/cgroup.procs"
    wait_until 5 nf_rmdir "$cg" || true
  done <"$NF_CGROUP_FILE"
  return 0
}

nf_netns_empty() {
  [[ -z $(ip netns pids "$1" 2>/dev/null) ]]
}

nf_rmdir() {
  rmdir "$1" 2>/dev/null || [[ ! -d $1 ]]
}

# nf_unavailable REASON: this machine lacks something the test needs: skip,
# or fail where a real run is required (CI=true or RLOCK_REQUIRE_REDIS=1).
nf_unavailable() {
  if redis_skip_allowed; then
    skip "$1"
  fi
  echo "netns.bash: $1 (required because CI=true or RLOCK_REQUIRE_REDIS=1)" >&2
  return 1
}

# --- network namespaces ------------------------------------------------------

# nf_netns_pair: two namespaces, NF_SRV_NS and NF_CLI_NS, joined by a veth
# pair that is created inside them (it never exists in the host's namespace):
# $NF_SRV_IF with $NF_SRV_ADDR/30, $NF_CLI_IF with $NF_CLI_ADDR/30.
nf_netns_pair() {
  local ns err
  command -v ip >/dev/null 2>&1 || {
    nf_unavailable "ip (iproute2) is not installed"
    return
  }
  NF_SRV_NS=rlk-$$-$BATS_TEST_NUMBER-srv
  NF_CLI_NS=rlk-$$-$BATS_TEST_NUMBER-cli
  for ns in "$NF_SRV_NS" "$NF_CLI_NS"; do
    if ! err=$(ip netns add "$ns" 2>&1); then
      nf_unavailable "cannot create a network namespace: $err"
      return
    fi
    echo "$ns" >>"$NF_NETNS_FILE"
  done
  if ! err=$(ip link add "$NF_SRV_IF" netns "$NF_SRV_NS" type veth \
    peer name "$NF_CLI_IF" netns "$NF_CLI_NS" 2>&1); then
    nf_unavailable "cannot create a veth pair: $err"
    return
  fi
  ip -n "$NF_SRV_NS" address add "$NF_SRV_ADDR/30" dev "$NF_SRV_IF" &&
    ip -n "$NF_CLI_NS" address add "$NF_CLI_ADDR/30" dev "$NF_CLI_IF" &&
    ip -n "$NF_SRV_NS" link set "$NF_SRV_IF" up &&
    ip -n "$NF_CLI_NS" link set "$NF_CLI_IF" up
}

# nf_link NS IF up|down: set a veth end up or down (down on either end cuts
# the pair: the other end loses its carrier).
nf_link() {
  ip -n "$1" link set "$2" "$3"
}

# nf_redis_in_netns DIR: a redis-server in $NF_SRV_NS listening on
# $NF_SRV_ADDR only (and on a unix socket in DIR, which the test's redis_cli
# uses); ready once it answers over the veth pair from $NF_CLI_NS. Exports
# REDIS_DIR, REDIS_PORT, REDIS_SOCKET, REDIS_PIDFILE and RLOCK_URL.
nf_redis_in_netns() {
  local dir=$1 port
  mkdir -p "$dir" || return 1
  dir=$(cd "$dir" && pwd) || return 1
  redis_pick_port
  port=$REDIS_RANDOM_PORT
  redis_write_config "$dir" "$port"
  # Only the client namespace can reach that address: no protected mode.
  sed -i -e "s/^bind .*/bind $NF_SRV_ADDR/" \
    -e 's/^protected-mode .*/protected-mode no/' "$dir/redis.conf"
  echo "$dir" >>"$NF_REDIS_FILE"
  ip netns exec "$NF_SRV_NS" redis-server "$dir/redis.conf" >/dev/null 2>&1 || return 1
  if ! wait_until "$REDIS_START_TIMEOUT" nf_answers_over_veth "$port"; then
    cat "$dir/redis.log" >&2 2>/dev/null
    return 1
  fi
  export REDIS_DIR=$dir
  export REDIS_PORT=$port
  export REDIS_SOCKET=$dir/redis.sock
  export REDIS_PIDFILE=$dir/redis.pid
  export RLOCK_URL=redis://$NF_SRV_ADDR:$port/0
}

nf_answers_over_veth() {
  [[ $(ip netns exec "$NF_CLI_NS" redis-cli -h "$NF_SRV_ADDR" -p "$1" ping 2>/dev/null) == PONG ]]
}

# nf_rl NS ARG...: rl (see helpers.bash), run inside network namespace NS.
nf_rl() {
  local ns=$1
  shift
  timeout -k 5 "$RL_LIMIT" env --default-signal ip netns exec "$ns" "$RLOCK" "$@"
}

# --- redis-servers on loopback -----------------------------------------------

# nf_redis NAME: a redis-server of this test's own in $BATS_TEST_TMPDIR/NAME
# (loopback; see redis.bash), stopped by teardown. Sets NF_PORT and NF_SOCK
# to it, and REDIS_* and RLOCK_URL as redis_start does; replication starts
# at once (no diskless-sync delay).
nf_redis() {
  local dir=$BATS_TEST_TMPDIR/$1
  echo "$dir" >>"$NF_REDIS_FILE"
  redis_start "$dir" || return 1
  # shellcheck disable=SC2034 # for the tests
  NF_PORT=$REDIS_PORT
  NF_SOCK=$REDIS_SOCKET
  redis-cli -s "$NF_SOCK" config set repl-diskless-sync-delay 0 >/dev/null
}

# nf_follow SOCK PORT: make the server at SOCK a replica of the loopback
# server on PORT and wait until its link is up.
nf_follow() {
  [[ $(redis-cli -s "$1" replicaof 127.0.0.1 "$2") == OK ]] || return 1
  wait_until 10 nf_link_is_up "$1"
}

nf_link_is_up() {
  redis-cli -s "$1" info replication | grep -q '^master_link_status:up'
}

# nf_hget_is SOCK KEY FIELD VALUE: true when HGET says VALUE.
nf_hget_is() {
  [[ $(redis-cli -s "$1" hget "$2" "$3") == "$4" ]]
}

# nf_get_is SOCK KEY VALUE: true when GET says VALUE.
nf_get_is() {
  [[ $(redis-cli -s "$1" get "$2") == "$3" ]]
}

# nf_snapshot SOCK: every key in db 0 of the server at SOCK with its type,
# serialized value and whether it expires, sorted.
nf_snapshot() {
  local sock=$1 key expiry
  redis-cli -s "$sock" --scan | LC_ALL=C sort | while IFS= read -r key; do
    expiry=volatile
    [[ $(redis-cli -s "$sock" pttl "$key") == -1 ]] && expiry=persistent
    printf '%s %s %s %s\n' "$key" "$(redis-cli -s "$sock" type "$key")" \
      "$(redis-cli -s "$sock" --no-raw dump "$key")" "$expiry"
  done
}

# --- memory cgroups ------------------------------------------------------------

# nf_memcg_create: a memory cgroup of this test's own, NF_CG, empty and
# without a limit; NF_CG_V is 2 (cgroup v2) or 1 (the v1 memory hierarchy).
# On v2 it is made beside the test's own cgroup (a cgroup with processes
# cannot hand out controllers): in the nearest ancestor that enables memory
# for its children. (Written on a machine whose memory controller is on v1:
# only the v1 path has run there.)
nf_memcg_create() {
  local line pre fs mnt root fstype opts v2_mnt="" v2_root="" v1_mnt="" v1_root=""
  local rel dir err name=rlk-$$-$BATS_TEST_NUMBER
  while IFS= read -r line; do
    pre=${line%% - *}
    fs=${line#* - }
    read -r _ _ _ root mnt _ <<<"$pre"
    read -r fstype _ opts <<<"$fs"
    if [[ $fstype == cgroup2 && -z $v2_mnt ]] &&
      grep -qw memory "$mnt/cgroup.controllers" 2>/dev/null; then
      v2_mnt=$mnt v2_root=$root
    elif [[ $fstype == cgroup && ,$opts, == *,memory,* && -z $v1_mnt ]]; then
      v1_mnt=$mnt v1_root=$root
    fi
  done </proc/self/mountinfo
  if [[ -n $v2_mnt ]]; then
    NF_CG_V=2
    rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
    [[ $v2_root != / ]] && rel=${rel#"$v2_root"}
    dir=$v2_mnt$rel
    while [[ $dir == "$v2_mnt"* ]]; do
      if grep -qw memory "$dir/cgroup.subtree_control" 2>/dev/null; then
        break
      fi
      [[ $dir == "$v2_mnt" ]] && break
      dir=${dir%/*}
    done
    if ! grep -qw memory "$dir/cgroup.subtree_control" 2>/dev/null; then
      nf_unavailable "no cgroup v2 directory at or above $v2_mnt$rel enables the memory controller for its children"
      return
    fi
  elif [[ -n $v1_mnt ]]; then
    NF_CG_V=1
    rel=$(sed -nE 's/^[0-9]+:([^:]*,)?memory(,[^:]*)?://p' /proc/self/cgroup)
    [[ $v1_root != / ]] && rel=${rel#"$v1_root"}
    dir=$v1_mnt$rel
  else
    nf_unavailable "no memory cgroup: neither a cgroup v2 mount with the memory controller nor a v1 memory hierarchy"
    return
  fi
  if ! err=$(mkdir "$dir/$name" 2>&1); then
    nf_unavailable "cannot create a memory cgroup: $err"
    return
  fi
  NF_CG=$dir/$name
  echo "$NF_CG" >>"$NF_CGROUP_FILE"
  if ((NF_CG_V == 2)) && [[ ! -f $NF_CG/memory.max ]]; then
    echo "netns.bash: $NF_CG has no memory.max" >&2
    return 1
  fi
}

# nf_memcg_enter PID: move process PID (all its threads, not its children)
# into NF_CG.
nf_memcg_enter() {
  echo "$1" >"$NF_CG/cgroup.procs"
}

# nf_memcg_procs: the processes in NF_CG, one per line.
nf_memcg_procs() {
  cat "$NF_CG/cgroup.procs"
}

# nf_memcg_limit BYTES: NF_CG's memory limit, without swap to fall back on.
nf_memcg_limit() {
  if ((NF_CG_V == 2)); then
    [[ ! -f $NF_CG/memory.swap.max ]] || echo 0 >"$NF_CG/memory.swap.max" || return 1
    echo "$1" >"$NF_CG/memory.max"
  else
    echo "$1" >"$NF_CG/memory.limit_in_bytes" || return 1
    # Without swap accounting (or swap) these do not exist or are refused.
    echo 0 >"$NF_CG/memory.swappiness" 2>/dev/null
    echo "$1" >"$NF_CG/memory.memsw.limit_in_bytes" 2>/dev/null
    return 0
  fi
}

# nf_memcg_oom_kills: how many processes the OOM killer killed in NF_CG.
nf_memcg_oom_kills() {
  if ((NF_CG_V == 2)); then
    sed -n 's/^oom_kill //p' "$NF_CG/memory.events"
  else
    sed -n 's/^oom_kill //p' "$NF_CG/memory.oom_control"
  fi
}

# nf_thread_stack PID: print "ADDRESS PAGES" of the lower half of the first
# thread stack of PID (a rw-p anonymous mapping right above a one-page guard
# mapping, as glibc lays them out). A thread never reaches that deep.
nf_thread_stack() {
  local range perms lo hi prev_end=-1 prev_perms="" prev_size=0
  local _offset _dev _inode path
  while read -r range perms _offset _dev _inode path; do
    lo=$((16#${range%-*}))
    hi=$((16#${range#*-}))
    if [[ $perms == rw-p && -z $path && $prev_perms == ---p ]] &&
      ((prev_end == lo && prev_size == 4096 && hi - lo >= 1048576)); then
      echo "$lo $(((hi - lo) / 4096 / 2))"
      return 0
    fi
    prev_end=$hi prev_perms=$perms prev_size=$((hi - lo))
  done <"/proc/$1/maps"
  return 1
}

# nf_fault_in PID: make PID allocate the pages of the lower half of a thread
# stack (nf_thread_stack), by writing zeros there through /proc/PID/mem, as
# the thread would by touching them. Only pages not yet in memory are written:
# those read as zeros, so PID's memory contents do not change, only its size.
# The kernel charges the new pages to PID's memory cgroup, as a page fault of
# its own would. Fails if there is no such stack or any of it is in memory.
nf_fault_in() {
  local pid=$1 addr pages entries
  read -r addr pages < <(nf_thread_stack "$pid") || {
    echo "nf_fault_in: no thread stack found in /proc/$pid/maps" >&2
    return 1
  }
  # pagemap: one 64-bit entry per page; bit 63 present, bit 62 swapped. The
  # entry of the page-aligned addr is at addr / 4096 * 8.
  entries=$(dd if="/proc/$pid/pagemap" bs=$((pages * 8)) iflag=skip_bytes \
    skip=$((addr / 512)) count=1 2>/dev/null | od -An -v -tx8 -w8)
  if [[ $(grep -c . <<<"$entries") != "$pages" ]] || grep -qv '^ *[0-3]' <<<"$entries"; then
    echo "nf_fault_in: the bottom of the stack is not all unused: $(sort <<<"$entries" | uniq -c)" >&2
    return 1
  fi
  # The write fails (EIO) once the OOM killer has killed PID.
  dd if=/dev/zero of="/proc/$pid/mem" bs=4096 seek=$((addr / 4096)) count="$pages" \
    conv=notrunc 2>/dev/null || true
}
