#!/usr/bin/env bats
#
# Faults of the network, the memory and the server's role: a partition
# between rlock and Redis (network namespaces joined by a veth pair), rlock
# killed by the OOM killer of a memory cgroup, and a server that refuses
# writes (a read-only replica, a failover, maxmemory with noeviction).
#
# The safety property, as in faults.bats: the child of a holder whose lease
# may have expired is dead, and two holders' children never run at once.
# Children write heartbeats ($EPOCHREALTIME, every 50 ms); a lease's start
# is the `time` of the last "acquired" or "renewed" event.
#
# Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) for `ip netns`, a writable
# memory cgroup (cgroup v2 with the memory controller, or the v1 memory
# hierarchy) and /proc/PID/mem. Without them those tests skip, except where a
# real run is required (CI=true or RLOCK_REQUIRE_REDIS=1): there they fail.
# No packet leaves the namespaces the tests create; the replica tests use
# redis-servers on loopback (random ports, never 6379).

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers
load heartbeat
load netns

setup() {
  common_setup
  nf_setup
}
teardown() {
  nf_teardown
}

# Tight timeouts, so that a partition is noticed within the TTL.
FAST=(--connect-timeout 0.3s --io-timeout 0.3s)

# --- a network partition -------------------------------------------------------

@test "partition longer than the TTL: the child is dead before the lease can expire; 70; a waiter at the server never overlaps; after healing the lock is taken again" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 hb3=$BATS_TEST_TMPDIR/hb3
  local ev=$BATS_TEST_TMPDIR/ev r1 r1_err waiter pgid cut_at
  nf_netns_pair
  nf_redis_in_netns "$BATS_TEST_TMPDIR/r"
  bg ip netns exec "$NF_CLI_NS" "$RLOCK" -t 2s "${FAST[@]}" --events "$ev" part \
    bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  r1_err=$BG_ERR
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  # Cut right after a renewal, so that the lease being guarded is a renewed
  # one. Down on the server's end: the client's end loses its carrier, its
  # packets go nowhere (timeouts, not errors).
  wait_until 5 has_event "$ev" renewed
  nf_link "$NF_SRV_NS" "$NF_SRV_IF" down
  cut_at=$SECONDS
  # A second holder that reaches the server by its unix socket, not through
  # the partition: it takes the lock as soon as the lease expires there.
  bg "$RLOCK" --url "unix://$REDIS_SOCKET" -w 10s -t 2s part bash -c "$(beats_script "$hb2" 10)"
  waiter=$BG_PID
  # The safety property: no sign of life at or after (lease start + TTL),
  # and none once the second holder ran.
  lost_without_overlap "$r1" "$pgid" "$hb1" "$ev" 2000 "$waiter" "$hb2"
  grep -q "rlock: lost lock 'part': could not renew it in time" "$r1_err"
  grep -q '"event":"renew-failed".*10\.213\.0\.1' "$ev"
  # Heal after more than the TTL in all; once the server answers over the
  # veth pair again (the client's ARP entry for it may have to be resolved
  # anew first), rlock in the client namespace takes the lock through it.
  while ((SECONDS - cut_at < 3)); do sleep 0.1; done
  nf_link "$NF_SRV_NS" "$NF_SRV_IF" up
  wait_until 5 nf_answers_over_veth "$REDIS_PORT"
  run -0 --separate-stderr nf_rl "$NF_CLI_NS" "${FAST[@]}" -w 5s -t 2s part \
    bash -c "$(beats_script "$hb3" 1)"
  before "$(last_beat "$hb2")" "$(first_beat "$hb3")" \
    "the waiter's child's last heartbeat vs the third child's first"
  key_absent "$(lock_key 'part')"
}

@test "partition that heals well within the validity: the run goes on and exits with COMMAND's status" {
  local ev=$BATS_TEST_TMPDIR/ev finish=$BATS_TEST_TMPDIR/finish r1 renewed
  nf_netns_pair
  nf_redis_in_netns "$BATS_TEST_TMPDIR/r"
  bg ip netns exec "$NF_CLI_NS" "$RLOCK" -t 3s "${FAST[@]}" --events "$ev" healed sh -c \
    'trap "echo got-TERM; exit 1" TERM
     while [ ! -e "$1" ]; do sleep 0.05; done; echo done' _ "$finish"
  r1=$BG_PID
  wait_until 5 has_event "$ev" renewed
  # Cut on the client's end (its route goes: connects fail at once) right
  # after a renewal; heal once a renewal has failed. The next renewal is due
  # 1s after the last, the child must be stopped 2.465s after it.
  nf_link "$NF_CLI_NS" "$NF_CLI_IF" down
  wait_until 3 renewal_failed "$ev"
  nf_link "$NF_CLI_NS" "$NF_CLI_IF" up
  renewed=$(event_count "$ev" renewed)
  wait_until 3 more_than "$renewed" event_count "$ev" renewed
  running "$r1"
  touch "$finish"
  exits_with 0 "$r1"
  [ "$(<"$BG_OUT")" = "done" ]
  run ! grep -q 'lost lock' "$BG_ERR"
  run ! grep -q '"event":"lost"' "$ev"
  key_absent "$(lock_key 'healed')"
}

# renewal_failed FILE: the --events FILE says a renewal failed (or, at the
# least, that the lock was given up).
renewal_failed() {
  grep -qE '"event":"(renew-failed|lost)"' "$1"
}

# --- rlock killed by the OOM killer ---------------------------------------------

# has_threads PID: true once PID runs a thread besides its main one.
has_threads() {
  local tasks=(/proc/"$1"/task/*)
  ((${#tasks[@]} >= 2))
}

@test "rlock OOM-killed in a memory cgroup: the watchdog kills the child's group at once; the lease expires by itself within the TTL" {
  local hb=$BATS_TEST_TMPDIR/hb ev=$BATS_TEST_TMPDIR/ev r1 pgid token killed t0 pttl
  nf_memcg_create
  # The heartbeats come from a subshell in the child's group: the child
  # itself dies with rlock (PR_SET_PDEATHSIG); the rest is the watchdog's.
  bg "$RLOCK" -t 3s --events "$ev" oom bash -c \
    "echo \"\$RLOCK_TOKEN\" >'$BATS_TEST_TMPDIR/token'; ($(heartbeat_script "$hb")) & wait"
  r1=$BG_PID
  wait_until 10 beating "$hb"
  # The renewer's thread (whose stack nf_fault_in grows) starts 100 ms into
  # the run.
  wait_until 10 has_threads "$r1"
  pgid=$(child_group "$hb")
  token=$(<"$BATS_TEST_TMPDIR/token")
  # Only rlock goes into the cgroup; its child and the watchdog stay out.
  nf_memcg_enter "$r1"
  [ "$(nf_memcg_procs)" = "$r1" ]
  nf_memcg_limit $((1024 * 1024))
  # rlock grows by 4 MB (its renewer's stack, deeper than it ever goes):
  # over the limit, and nothing to reclaim.
  killed=$(usec "$EPOCHREALTIME")
  nf_fault_in "$r1"
  exits_with 137 "$r1"
  (($(nf_memcg_oom_kills) >= 1))
  # Nothing released the lease: it is still this run's, and expires no later
  # than its start + TTL.
  t0=$(usec "$EPOCHREALTIME")
  pttl=$(redis_cli pttl "$(lock_key 'oom')")
  [ "$(redis_cli hget "$(lock_key 'oom')" token)" = "$token" ]
  ((pttl > 0))
  before "$((t0 + pttl * 1000))" "$(($(lease_start "$ev") + 3000000 + 1000))" \
    "the key's expiry vs its lease's end"
  # The group is gone (its last processes are reaped by init: poll for up
  # to 3 s), and it stopped at once.
  wait_until 3 group_dead "$pgid"
  before "$(last_beat "$hb")" "$((killed + 1000000))" \
    "child's last heartbeat vs rlock's OOM kill + 1 s"
  wait_until 4 key_absent "$(lock_key 'oom')"
  run -0 rl -n oom true
}

# --- a server that refuses writes ----------------------------------------------

@test "a read-only replica: 69, one line naming READONLY; COMMAND never runs; nothing changed" {
  local m_sock m_port before_r before_m
  nf_redis m
  m_sock=$NF_SOCK m_port=$NF_PORT
  redis-cli -s "$m_sock" set "$(fence_key 'ro')" 41 >/dev/null
  redis-cli -s "$m_sock" set unrelated x >/dev/null
  nf_redis r
  nf_follow "$NF_SOCK" "$m_port"
  wait_until 5 nf_get_is "$NF_SOCK" "$(fence_key 'ro')" 41
  before_r=$(nf_snapshot "$NF_SOCK")
  before_m=$(nf_snapshot "$m_sock")
  run -69 --separate-stderr rl ro touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: "*READONLY* ]]
  [ ! -e ran ]
  [ "$(nf_snapshot "$NF_SOCK")" = "$before_r" ]
  [ "$(nf_snapshot "$m_sock")" = "$before_m" ]
}

# Redis checks OOM at a script's first write only, and only for a write that
# can grow memory: the acquire script's first write is therefore its SET of
# the fence (a ZREM of a dead --fair queue entry first would let the whole
# script through); renewals write PEXPIRE first and get through (fences.bats).
@test "a server over maxmemory with noeviction: 69, one line naming OOM; COMMAND never runs; nothing changed" {
  local before
  nf_redis r
  redis_cli set "$(fence_key 'oom')" 41 >/dev/null
  redis_cli set unrelated x >/dev/null
  redis_cli config set maxmemory-policy noeviction >/dev/null
  redis_cli config set maxmemory 1 >/dev/null
  # Writes are refused now.
  [[ $(redis_cli set probe y) == OOM* ]]
  before=$(nf_snapshot "$NF_SOCK")
  run -69 --separate-stderr rl -t 2s oom touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: "*OOM* ]]
  [ ! -e ran ]
  [ "$(nf_snapshot "$NF_SOCK")" = "$before" ]
}

@test "failover mid-run: the server becomes a replica, renewals fail with READONLY; the child is dead before the lease can expire; 70; the new master's next holder never overlaps" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 ev=$BATS_TEST_TMPDIR/ev
  local r_sock r_port m_sock m_port r1 r1_err waiter pgid
  # R is the master rlock uses; M replicates it.
  nf_redis m
  m_sock=$NF_SOCK m_port=$NF_PORT
  nf_redis r
  r_sock=$NF_SOCK r_port=$NF_PORT
  nf_follow "$m_sock" "$r_port"
  bg "$RLOCK" -t 2s "${FAST[@]}" --events "$ev" failover bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  r1_err=$BG_ERR
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev" renewed
  # The failover: R stops taking writes, M catches up and is promoted, R
  # follows M. R keeps the lock (as M has it): renewals find their token and
  # are refused at their first write.
  [ "$(redis-cli -s "$r_sock" config set min-replicas-to-write 100)" = OK ]
  wait_until 5 nf_hget_is "$m_sock" "$(lock_key 'failover')" renewals \
    "$(redis-cli -s "$r_sock" hget "$(lock_key 'failover')" renewals)"
  [ "$(redis-cli -s "$m_sock" replicaof no one)" = OK ]
  nf_follow "$r_sock" "$m_port"
  # The next holder asks the new master.
  bg "$RLOCK" --url "redis://127.0.0.1:$m_port/0" -w 10s -t 2s failover \
    bash -c "$(beats_script "$hb2" 10)"
  waiter=$BG_PID
  lost_without_overlap "$r1" "$pgid" "$hb1" "$ev" 2000 "$waiter" "$hb2"
  # It gave up because the renewals kept failing with READONLY.
  grep -q "rlock: lost lock 'failover': could not renew it in time (.*READONLY" "$r1_err"
  grep -q '"event":"renew-failed".*READONLY' "$ev"
}
