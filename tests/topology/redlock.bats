#!/usr/bin/env bats
#
# rlock over a quorum of independent Redis masters (Redlock, issue #13,
# /work/notes/redlock-contract.md): N --url or an $RLOCK_URL of N URLs, the
# usage errors, what killed, restarted and frozen servers do to acquires and
# renewals, fences across shifting majorities, contention and status.
#
# The checks trust nothing rlock says about itself. Where the lock lives,
# its token and its PTTL are read from each server with redis-cli; a
# command appends $EPOCHREALTIME to a file of its own every 20 ms while it
# runs (a heartbeat, tests/cli/heartbeat.bash), and the intervals of
# different runs must not intersect; the contention test uses a mkdir
# critical section (tests/lib/contention.bash).
#
# Topology: 5 redis-server masters (redlock_start), started in setup_file
# and shared by the file. A test that kills a server restarts it (empty)
# before it ends, and teardown thaws what a test froze and restarts what a
# failed test left dead, so every test starts with 5 running servers.

# Child scripts are single-quoted on purpose (SC2016); `run` sets output,
# lines and stderr (SC2154); tests that unset or change RLOCK_URL look,
# to the linter, like a subshell's change (SC2030, SC2031).
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
  export REDLOCK_DIR=$BATS_FILE_TMPDIR/redlock
  redlock_start "$REDLOCK_DIR" 5 || rc=$?
  brought_up "$rc" "bring-up of 5 masters" "$start"
}

teardown_file() {
  topology_stop "$BATS_FILE_TMPDIR"
}

setup() {
  topology_setup || return
  # RLOCK_URL: the 5 URLs, separated by spaces; PORTS: their ports.
  redlock_export "$REDLOCK_DIR"
  read -ra PORTS <<<"$REDLOCK_PORTS"
}

teardown() {
  topology_teardown
  info_allowed_again
  [[ -z ${REDLOCK_DIR:-} || ! -s $REDLOCK_DIR/redlock ]] || revive_all
}

# --- the servers ---------------------------------------------------------------

# url_of PORT: the URL of the server on PORT, as RLOCK_URL names it.
url_of() {
  printf 'redis://127.0.0.1:%s/0' "$1"
}

# url_args PORT...: set URL_ARGS to --url U for each PORT.
url_args() {
  local port
  URL_ARGS=()
  for port; do
    URL_ARGS+=(--url "$(url_of "$port")")
  done
}

# alive PORT: the server on PORT runs (frozen or not).
alive() {
  topology_pidfile_pid "$REDLOCK_DIR/node-$1/node.pid" >/dev/null
}

# revive_all: restart (empty) every server of the topology that is dead.
revive_all() {
  local port
  for port in $(topology_ports "$REDLOCK_DIR" node); do
    alive "$port" || topology_restart "$port" || return 1
  done
}

# kill_nodes PORT...: kill -9 the servers on PORT...
kill_nodes() {
  local port
  for port; do
    topology_kill "$port" || return 1
  done
}

# restart_empty PORT: kill -9 the server on PORT and start it again: empty,
# with a new run_id.
restart_empty() {
  topology_kill "$1" && topology_restart "$1"
}

# freeze PORT... / thaw PORT...: SIGSTOP / SIGCONT the servers on PORT...;
# teardown continues whatever a test froze.
freeze() {
  local port
  for port; do
    echo "$port" >>"$FROZEN_FILE"
    topology_freeze "$port" || return 1
  done
}
thaw() {
  local port
  for port; do
    topology_thaw "$port" || return 1
  done
}

# held_count KEY [PORT...]: on how many of the servers (default: all 5) KEY
# exists; a server that does not answer counts as not having it.
held_count() {
  local key=$1 port n=0
  shift
  (($# > 0)) || set -- "${PORTS[@]}"
  for port; do
    [[ $(topology_cli "$port" exists "$key" 2>/dev/null) == 1 ]] && n=$((n + 1))
  done
  echo "$n"
}

# absent_on KEY PORT...: KEY exists on none of the servers on PORT...
absent_on() {
  local key=$1 port
  shift
  for port; do
    if [[ $(exists_on "$key" "$port") != 0 ]]; then
      echo "$key is still on the server on $port" >&2
      return 1
    fi
  done
}

# foreign_hold NAME TOKEN PORT...: on the servers on PORT..., the lock hash
# of NAME as acquire.lua writes it, for another holder with TOKEN
# (alice@elsewhere:4242), for 20 s.
foreign_hold() {
  local name=$1 token=$2 key port
  shift 2
  key=$(lock_key "$name")
  for port; do
    [[ $(topology_cli "$port" hset "$key" token "$token" fence 7 ttl_ms 20000 \
      host elsewhere pid 4242 user alice command 'sleep 20' \
      acquired_ms "$(now_ms)" renewals 0) == 9 ]] || return 1
    [[ $(topology_cli "$port" pexpire "$key" 20000) == 1 ]] || return 1
  done
}

# token_on KEY PORT: the token of the lock hash KEY on the server on PORT.
token_on() {
  topology_cli "$2" hget "$1" token
}

# copy_lock KEY FROM TO: the lock hash KEY of the server on FROM, with its
# PTTL, written on the server on TO: as if TO had come back from a restart
# with the key (a snapshot, an AOF without fsync on every write).
copy_lock() {
  local key=$1 from=$2 to=$3 pttl
  local -a fields
  mapfile -t fields < <(topology_cli "$from" hgetall "$key")
  pttl=$(topology_cli "$from" pttl "$key")
  if ((${#fields[@]} < 2)) || ! [[ $pttl =~ ^[0-9]+$ ]]; then
    echo "copy_lock: no $key on $from (PTTL $pttl)" >&2
    return 1
  fi
  topology_cli "$to" hset "$key" "${fields[@]}" >/dev/null &&
    [[ $(topology_cli "$to" pexpire "$key" "$pttl") == 1 ]]
}

# fenced_run NAME: a run of NAME whose command appends RLOCK_FENCE to
# ./fences; sets FENCE.
fenced_run() {
  run -0 --separate-stderr rl -w 10s "$1" sh -c 'echo "$RLOCK_FENCE" >>fences; echo "$RLOCK_FENCE"'
  echo "fence $output${stderr:+, stderr: $stderr}"
  FENCE=$output
  [[ $FENCE =~ ^[0-9]+$ ]]
}

# --- runs over 5 servers ---------------------------------------------------------

# The command prints RLOCK_FENCE, then for each server "PORT TOKEN FENCE"
# of the lock hash there (empty where it has none).
inspect_script='echo "$RLOCK_FENCE"
for p; do
  echo "$p $(redis-cli -h 127.0.0.1 -p "$p" hget "$RLOCK_KEY" token) $(redis-cli -h 127.0.0.1 -p "$p" hget "$RLOCK_KEY" fence)"
done'

# inspected OUTPUT: checks what inspect_script printed: on at least 3
# servers the lock hash, all with one token, and RLOCK_FENCE a number that
# is the fence of one of them (the largest the granting servers gave).
inspected() {
  local fence holders tokens
  fence=$(head -n 1 <<<"$1")
  [[ $fence =~ ^[0-9]+$ ]]
  holders=$(tail -n +2 <<<"$1" | awk 'NF == 3' | wc -l)
  tokens=$(tail -n +2 <<<"$1" | awk 'NF == 3 { print $2 }' | sort -u | wc -l)
  note "held on $holders of 5 servers, RLOCK_FENCE $fence"
  ((holders >= 3 && tokens == 1))
  tail -n +2 <<<"$1" | awk -v f="$fence" 'NF == 3 && $3 == f { found = 1 } END { exit !found }'
}

@test "5 --url: the lock on at least 3 (normally all 5) servers during the command, one token, on none after; RLOCK_FENCE set; \$RLOCK_URL of 5 URLs the same" {
  local key url=$RLOCK_URL
  key=$(lock_key five)
  url_args "${PORTS[@]}"
  unset RLOCK_URL
  run -0 --separate-stderr rl "${URL_ARGS[@]}" --events ev five sh -c "$inspect_script" _ "${PORTS[@]}"
  echo "$output"
  inspected "$output"
  [[ $(held_count "$key") == 0 ]]
  # --events: the acquire says how many granted, of how many.
  grep '"event":"acquired"' ev | tee acquired
  grep -qE '"granted":[345]([,}]|$)' acquired
  grep -qE '"servers":5([,}]|$)' acquired

  export RLOCK_URL=$url
  [[ $RLOCK_URL == *" "*" "*" "*" "* ]]
  run -0 --separate-stderr rl five sh -c "$inspect_script" _ "${PORTS[@]}"
  echo "$output"
  inspected "$output"
  [[ $(held_count "$key") == 0 ]]
}

# refused PATTERN ARG...: `rlock ARG... usage touch ran` exits 64 with one
# line on stderr that matches the extended regular expression PATTERN and
# nothing on stdout; the command did not run and no server got the key.
refused() {
  local pattern=$1
  shift
  run -64 --separate-stderr rl "$@" usage touch ran
  echo "$* -> $stderr"
  [[ -z $output ]]
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == rlock:* && $stderr =~ $pattern ]]
  [[ ! -e ran ]]
  [[ $(held_count "$(lock_key usage)") == 0 ]]
}

@test "usage errors are 64 with one line naming the option or value: 2 URLs, a cluster member, --quorum out of range or with one URL, --fair, a server twice" {
  local p0=${PORTS[0]} all
  local -a five
  url_args "${PORTS[@]}"
  five=("${URL_ARGS[@]}")
  all=$RLOCK_URL
  unset RLOCK_URL
  refused '--url.*[23]' --url "$(url_of "$p0")" --url "$(url_of "${PORTS[1]}")"
  RLOCK_URL="$(url_of "$p0") $(url_of "${PORTS[1]}")" refused '(--url|RLOCK_URL).*[23]'
  # (five holds --url U pairs: its first 8 words are 4 URLs.)
  refused '--url|[Cc]luster' "${five[@]:0:8}" --url "redis+cluster://127.0.0.1:${PORTS[4]}"
  refused '--quorum.*2' "${five[@]}" --quorum 2
  refused '--quorum.*6' "${five[@]}" --quorum 6
  refused '--quorum' --url "$(url_of "$p0")" --quorum 1
  refused '--fair' "${five[@]}" --fair
  RLOCK_URL=$all refused '--fair' --fair
  # The same server twice, spelt the same or not.
  refused "--url|127\.0\.0\.1:$p0" "${five[@]}" --url "$(url_of "$p0")"
  refused "--url|127\.0\.0\.1:$p0" "${five[@]:0:6}" --url "redis://127.0.0.1:$p0"
}

@test "4 servers: one warning line on stderr and the run goes on; the default quorum is 3 of 4" {
  local -a four
  url_args "${PORTS[@]:0:4}"
  four=("${URL_ARGS[@]}")
  unset RLOCK_URL
  run -0 --separate-stderr rl "${four[@]}" even echo ran
  echo "$stderr"
  [[ $output == ran ]]
  [[ $(grep -c '^rlock: warning: ' <<<"$stderr") == 1 ]]
  # Held elsewhere on 2 of the 4: 2 grants are no quorum.
  foreign_hold even other "${PORTS[0]}" "${PORTS[1]}"
  run -75 rl "${four[@]}" -n even touch ran
  [[ ! -e ran ]]
  absent_on "$(lock_key even)" "${PORTS[2]}" "${PORTS[3]}"
  topology_cli "${PORTS[0]}" del "$(lock_key even)"
  topology_cli "${PORTS[1]}" del "$(lock_key even)"
}

# --- unreachable, held, restarted, frozen servers ---------------------------------

@test "2 of 5 killed: acquire, renewals through a hold of 3 TTLs, and release work (exit 0)" {
  local key hb=$BATS_TEST_TMPDIR/hb r port
  local -a up=("${PORTS[@]:2}")
  key=$(lock_key two-down)
  kill_nodes "${PORTS[0]}" "${PORTS[1]}"
  bg "$RLOCK" -t 1s two-down bash -c "$(hold_script "$hb" 3)"
  r=$BG_PID
  wait_until 10 beating "$hb"
  child_group "$hb" >/dev/null
  renewed_on "$key" "${up[0]}"
  # More than a TTL into the hold, still on each of the three.
  wait_until 10 more_than 1500 span_ms "$hb"
  for port in "${up[@]}"; do
    held_on "$key" "$port"
  done
  reaped 0 "$r" 15
  cat "$BG_ERR"
  (($(span_ms "$hb") >= 2900))
  absent_on "$key" "${up[@]}"
  revive_all
}

@test "3 of 5 killed: 69 at once, without waiting for -w, one line naming 3 of 5 servers unreachable and each of them" {
  local start took port
  kill_nodes "${PORTS[@]:0:3}"
  start=$EPOCHREALTIME
  run -69 --separate-stderr rl -w 20s three-down touch ran
  took=$(elapsed "$start")
  note "3 of 5 killed: exit 69 after $took s: $stderr"
  [[ -z $output ]]
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == rlock:*"3 of 5 servers unreachable, quorum 3"* ]]
  for port in "${PORTS[@]:0:3}"; do
    [[ $stderr == *"127.0.0.1:$port"* ]]
  done
  [[ ! -e ran ]]
  # Far from the 20 s of -w.
  awk -v t="$took" 'BEGIN { exit !(t < 10) }'
  absent_on "$(lock_key three-down)" "${PORTS[3]}" "${PORTS[4]}"
  revive_all
}

@test "held by another token on 3 of 5: -n exits 75 naming the holder, and leaves no key on the other 2; on 2 of 5 the run wins" {
  local key port
  key=$(lock_key held)
  foreign_hold held other "${PORTS[@]:0:3}"
  run -75 --separate-stderr rl -n -v held touch ran
  echo "$stderr"
  [[ ! -e ran ]]
  [[ $stderr == *alice@elsewhere:4242* ]]
  # The grants of the 2 free servers were given back; the 3 holds untouched.
  absent_on "$key" "${PORTS[3]}" "${PORTS[4]}"
  for port in "${PORTS[@]:0:3}"; do
    [[ $(token_on "$key" "$port") == other ]]
  done
  # The contrast: held on 2 only, the 3 others make a quorum.
  key=$(lock_key held2)
  foreign_hold held2 other "${PORTS[0]}" "${PORTS[1]}"
  run -0 --separate-stderr rl -n held2 sh -c 'echo "$RLOCK_FENCE"'
  [[ $output =~ ^[0-9]+$ ]]
  # Its release left the other holder's hash alone.
  [[ $(token_on "$key" "${PORTS[0]}") == other && $(token_on "$key" "${PORTS[1]}") == other ]]
  absent_on "$key" "${PORTS[@]:2}"
  for port in "${PORTS[@]}"; do
    topology_cli "$port" del "$(lock_key held)" "$(lock_key held2)" >/dev/null
  done
}

@test "servers killed and restarted empty during a hold: 2 of 5 and the run goes on, the key never re-created on them; 3 of 5, even with the key put back on two, and the run is stopped (70) within its lease" {
  local key hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 ev=$BATS_TEST_TMPDIR/ev
  local r pgid rc=0 port start
  key=$(lock_key restarted)
  bg "$RLOCK" -t 2s restarted bash -c "$(hold_script "$hb1" 5)"
  r=$BG_PID
  wait_until 10 beating "$hb1"
  child_group "$hb1" >/dev/null
  restart_empty "${PORTS[0]}"
  restart_empty "${PORTS[1]}"
  # Two renewals after the restarts reach the others...
  renewed_on "$key" "${PORTS[2]}"
  renewed_on "$key" "${PORTS[2]}"
  # ...and a renewal never writes the key on a server that lost it.
  absent_on "$key" "${PORTS[0]}" "${PORTS[1]}"
  reaped 0 "$r" 15
  (($(span_ms "$hb1") >= 4900))

  # Three restarted, the first two given the key back with the holder's
  # token: only their new run_id tells rlock that they do not count, and
  # without them 2 of 5 are left. (Not the third: by then rlock may have
  # stopped and released the lock everywhere.)
  key=$(lock_key restarted3)
  bg "$RLOCK" -t 2s --events "$ev" restarted3 bash -c "$(hold_script "$hb2" 12)"
  r=$BG_PID
  wait_until 10 beating "$hb2"
  pgid=$(child_group "$hb2")
  wait_until 5 has_event "$ev" renewed
  start=$EPOCHREALTIME
  for port in "${PORTS[@]:0:2}"; do
    restart_empty "$port"
    copy_lock "$key" "${PORTS[4]}" "$port"
  done
  restart_empty "${PORTS[2]}"
  reap "$r" 15 || rc=$?
  note "3 restarted: rlock exited $rc $(elapsed "$start") s after the first restart"
  cat "$BG_ERR"
  ((rc == 70))
  wait_until 3 group_dead "$pgid"
  before "$(last_beat "$hb2")" "$(($(lease_start "$ev") + 2000 * 1000))" \
    "the child's last heartbeat vs the end of the last lease"
}

@test "one server frozen (SIGSTOP) during a hold and during acquires: each run completes (exit 0)" {
  local key hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 r start frozen=${PORTS[0]}
  key=$(lock_key frozen)
  bg "$RLOCK" -t 1s frozen bash -c "$(hold_script "$hb1" 3)"
  r=$BG_PID
  wait_until 10 beating "$hb1"
  child_group "$hb1" >/dev/null
  freeze "$frozen"
  renewed_on "$key" "${PORTS[1]}"
  reaped 0 "$r" 15
  cat "$BG_ERR"
  (($(span_ms "$hb1") >= 2900))
  absent_on "$key" "${PORTS[@]:1}"
  # Acquires while it is frozen: a short run, then one longer than its TTL.
  start=$EPOCHREALTIME
  run -0 --separate-stderr rl -t 1s frozen sh -c 'echo "$RLOCK_FENCE"'
  note "a short run with one server frozen: $(elapsed "$start") s"
  echo "$stderr"
  [[ $output =~ ^[0-9]+$ ]]
  start=$EPOCHREALTIME
  run -0 rl -t 1s frozen bash -c "$(hold_script "$hb2" 2)"
  note "a run of 2 s with one server frozen: $(elapsed "$start") s"
  (($(span_ms "$hb2") >= 1900))
  absent_on "$key" "${PORTS[@]:1}"
  thaw "$frozen"
  # What the frozen server had queued runs now; a key it writes expires.
  wait_until 10 absent_on "$key" "$frozen"
}

@test "renewals that lose the quorum (3 of 5 frozen longer than the TTL): the run is stopped (70) within its lease, before a second holder's command starts" {
  local key hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 ev1=$BATS_TEST_TMPDIR/ev1
  local r1 r2 pgid rc1=0 start
  key=$(lock_key lost)
  bg "$RLOCK" -t 2s --events "$ev1" lost bash -c "$(hold_script "$hb1" 10)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev1" renewed
  start=$EPOCHREALTIME
  freeze "${PORTS[@]:0:3}"
  # Longer than the TTL: once continued, the three find the key expired
  # (by their clock) and grant it to whoever asks; only rlock's own
  # deadline can have stopped the first command by then.
  sleep 2.5
  thaw "${PORTS[@]:0:3}"
  bg "$RLOCK" -t 2s -w 20s lost bash -c "$(hold_script "$hb2" 1)"
  r2=$BG_PID
  reap "$r1" 15 || rc1=$?
  reaped 0 "$r2" 20
  note "the holder exited $rc1; the second holder's command started" \
    "$((($(first_beat "$hb2") - $(usec "$start")) / 1000)) ms after the freeze"
  cat "$BATS_TEST_TMPDIR"/bg.*.err
  ((rc1 == 70))
  wait_until 3 group_dead "$pgid"
  before "$(last_beat "$hb1")" "$(($(lease_start "$ev1") + 2000 * 1000))" \
    "the first child's last heartbeat vs the end of its last lease"
  no_overlap "$hb1" "$hb2"
  [[ -s $hb2 ]]
  [[ $(held_count "$key") == 0 ]]
}

# A server whose fence runs far ahead (its clock ahead, say) grants in one
# majority and is down in the next: without the write-back of the largest
# fence to the granting servers, the next majority's fences would be lower.
@test "fences strictly increase while the granting majority shifts, even after a server whose fence is 100 s ahead drops out" {
  local first ahead
  : >fences
  fenced_run shifting
  first=$FENCE
  # Only P0 P1 P2 up; P0's fence 100 s ahead.
  kill_nodes "${PORTS[3]}" "${PORTS[4]}"
  ahead=$((first + 100000000))
  [[ $(topology_cli "${PORTS[0]}" set "$(fence_key shifting)" "$ahead" px 300000) == OK ]]
  fenced_run shifting
  ((FENCE >= ahead))
  # Only P2 P3 P4 up (P3 P4 empty): P2 alone carries what the last saw.
  topology_restart "${PORTS[3]}"
  topology_restart "${PORTS[4]}"
  kill_nodes "${PORTS[0]}" "${PORTS[1]}"
  fenced_run shifting
  # P0 P1 P3 P4 up (P0 P1 empty).
  topology_restart "${PORTS[0]}"
  topology_restart "${PORTS[1]}"
  kill_nodes "${PORTS[2]}"
  fenced_run shifting
  topology_restart "${PORTS[2]}"
  fenced_run shifting
  cat fences
  [[ $(grep -cxE '[0-9]+' fences) == 5 ]]
  increasing fences
}

@test "contention: 8 processes x 25 runs over the 5 servers: no overlap, counter 200, fences increase" {
  local start=$EPOCHREALTIME
  contend "$BATS_TEST_TMPDIR/cs" 8 25 "$RLOCK" contended
  note "contention, 200 runs: $(elapsed "$start") s"
  contention_ok "$BATS_TEST_TMPDIR/cs" 200
  [[ $(held_count "$(lock_key contended)") == 0 ]]
}

# --- status ------------------------------------------------------------------------

# lock_servers FILE NAME: from the status --json array in FILE, the lock
# NAME's quorum, then "NODE HELD TOKEN TTL_MS FENCE" for each server in
# "nodes"; fails when a field is missing.
lock_servers() {
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
lock = [l for l in doc if l["name"] == sys.argv[2]]
assert len(lock) == 1, "%d locks named %s" % (len(lock), sys.argv[2])
lock = lock[0]
print(json.dumps(lock["quorum"]))
for s in lock["nodes"]:
    print(s["node"], json.dumps(s["held"]), s["token"], s["ttl_ms"], s["fence"])
' "$1" "$2"
}

# hold_shown: in the background, lock "shown" held for 30 s; sets TOKEN to
# its token, read from a server.
hold_shown() {
  bg "$RLOCK" -t 20s shown sh -c 'echo up >started; sleep 30'
  wait_until 10 file_has started || {
    cat "$BG_ERR"
    return 1
  }
  TOKEN=$(token_on "$(lock_key shown)" "${PORTS[4]}")
  [[ -n $TOKEN ]]
}

@test "--once-per over 5 servers: the mark is on all 5; with 2 restarted empty, then 2 others down, a second run in the slot still skips (75)" {
  local log=$BATS_TEST_TMPDIR/ran.log port slot
  run -0 --separate-stderr "$RLOCK" --once-per 1h daily sh -c 'echo first >>"$1"' _ "$log"
  for port in "${PORTS[@]}"; do
    [ -n "$(topology_cli "$port" get "$(once_key daily)")" ]
  done
  slot=$(topology_cli "${PORTS[0]}" get "$(once_key daily)")
  restart_empty "${PORTS[0]}"
  restart_empty "${PORTS[1]}"
  run -75 --separate-stderr "$RLOCK" --once-per 1h daily sh -c 'echo second >>"$1"' _ "$log"
  kill_nodes "${PORTS[2]}" "${PORTS[3]}"
  run -75 --separate-stderr "$RLOCK" --once-per 1h daily sh -c 'echo third >>"$1"' _ "$log"
  # Unless the hour turned meanwhile (then the runs were in a new slot).
  [[ $(topology_cli "${PORTS[4]}" get "$(once_key daily)") == "$slot" ]] || {
    echo "an hour boundary passed during the test: the slots differ" >&2
    return 1
  }
  [ "$(cat "$log")" = first ]
  revive_all
}

@test "status: the redlock: line and a SERVERS column; 4 reachable with one killed" {
  local row
  hold_shown
  run -0 --separate-stderr rl status
  echo "$output"
  [[ ${lines[0]} == "redlock: 5 servers, quorum 3, 5 reachable" ]]
  [[ ${lines[1]} == *SERVERS* ]]
  row=$(grep '^shown ' <<<"$output")
  [[ $row =~ \ [345]/5(\ |$) ]]

  kill_nodes "${PORTS[0]}"
  run --separate-stderr rl status
  echo "exit $status: $output"
  # (What follows "4 reachable", such as the server that is down, is free.)
  [[ ${lines[0]} == "redlock: 5 servers, quorum 3, 4 reachable"* ]]
  # Counted out of the 5 servers, not of those that answered.
  row=$(grep '^shown ' <<<"$output")
  [[ $row =~ \ [34]/5(\ |$) ]]
  revive_all
}

@test "status --json: each lock has nodes (node, held, token, ttl_ms, fence) and quorum; held on 2 of 5 is no quorum" {
  local port
  hold_shown
  run -0 --separate-stderr rl status --json shown
  echo "$output" >status.json
  run -0 lock_servers status.json shown
  echo "$output"
  [[ ${lines[0]} == true ]]
  ((${#lines[@]} == 6))
  # Every server listed once, by its address; where it is held, our token.
  for port in "${PORTS[@]}"; do
    [[ $(tail -n +2 <<<"$output" | cut -d' ' -f1 | grep -c "127\.0\.0\.1:$port\b") == 1 ]]
  done
  (($(tail -n +2 <<<"$output" | awk -v t="$TOKEN" '$2 == "true" && $3 == t' | wc -l) >= 3))

  foreign_hold minority other "${PORTS[0]}" "${PORTS[1]}"
  run -0 --separate-stderr rl status --json minority
  echo "$output" >minority.json
  run -0 lock_servers minority.json minority
  echo "$output"
  [[ ${lines[0]} == false ]]
  (($(tail -n +2 <<<"$output" | awk '$2 == "true" && $3 == "other"' | wc -l) == 2))
  for port in "${PORTS[0]}" "${PORTS[1]}"; do
    topology_cli "$port" del "$(lock_key minority)" >/dev/null
  done
}

@test "status: nodes that disagree on the token are marked split" {
  local port
  foreign_hold disputed tokenA "${PORTS[@]:0:3}"
  foreign_hold disputed tokenB "${PORTS[3]}" "${PORTS[4]}"
  run -0 --separate-stderr rl status disputed
  echo "$output"
  [[ $(grep '^disputed ' <<<"$output") =~ \ [0-9]/5\ split ]]
  for port in "${PORTS[@]}"; do
    topology_cli "$port" del "$(lock_key disputed)" >/dev/null
  done
}

# --- issue #23: INFO refused, black holes, split votes, restarts noticed ------

# three_servers [PORT PORT PORT]: RLOCK_URL names those 3 servers only (by
# default the first 3), quorum 2.
three_servers() {
  (($# == 3)) || set -- "${PORTS[@]:0:3}"
  RLOCK_URL="$(url_of "$1") $(url_of "$2") $(url_of "$3")"
  export RLOCK_URL
}

# no_info PORT...: the default user of the servers on PORT... may not run
# INFO (as with the common ACL +@all -@dangerous); teardown allows it again.
no_info() {
  local port
  for port; do
    echo "$port" >>"$BATS_TEST_TMPDIR/no-info"
    [[ $(topology_cli "$port" acl setuser default -info) == OK ]] || return 1
  done
}

# info_allowed_again: teardown's: INFO for the default user where a test
# took it away.
info_allowed_again() {
  local port
  [[ -f $BATS_TEST_TMPDIR/no-info ]] || return 0
  while read -r port; do
    topology_cli "$port" acl setuser default +info >/dev/null 2>&1 || :
  done <"$BATS_TEST_TMPDIR/no-info"
}

# black_hole: a loopback port that never takes a connection (a listening
# socket whose accept queue is full: the kernel drops the requests, as a
# firewall that drops SYNs does); sets BH_PORT. Teardown kills it.
black_hole() {
  bg python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
port = s.getsockname()[1]
fill = [socket.socket() for _ in range(3)]
for c in fill:
    c.setblocking(False)
    c.connect_ex(("127.0.0.1", port))
print(port, flush=True)
time.sleep(600)'
  wait_until 5 file_has "$BG_OUT"
  BH_PORT=$(<"$BG_OUT")
  [[ $BH_PORT =~ ^[0-9]+$ ]]
}

# up_for SECONDS PORT...: each server on PORT... says it has been up that
# long.
up_for() {
  local seconds=$1 port up
  shift
  for port; do
    up=$(topology_info_field "$port" server uptime_in_seconds)
    [[ $up =~ ^[0-9]+$ ]] && ((up >= seconds)) || return 1
  done
}

# contender_hold NAME PID PORT: on the server on PORT, lock NAME held for
# 60 s by a contender of its own (token tok-PID, holder alice@elsewhere:PID).
contender_hold() {
  local key
  key=$(lock_key "$1")
  [[ $(topology_cli "$3" hset "$key" token "tok-$2" fence 7 ttl_ms 60000 \
    host elsewhere pid "$2" user alice command 'sleep 60' \
    acquired_ms "$(now_ms)" renewals 0) == 9 ]] &&
    [[ $(topology_cli "$3" pexpire "$key" 60000) == 1 ]]
}

@test "INFO refused (ACL -info) with a restart grace: after 2 of 3 servers restart empty under a holder, a second run does not get in: it fails at once naming INFO and the option" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2 r1 rc1=0 port
  three_servers
  no_info "${PORTS[@]:0:3}"
  # The holder has no grace (RLOCK_RESTART_GRACE=0): INFO is not needed.
  bg "$RLOCK" -t 30s noinfo bash -c "$(hold_script "$hb1" 6)"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  child_group "$hb1" >/dev/null
  for port in "${PORTS[@]:1:2}"; do
    restart_empty "$port"
    no_info "$port"
  done
  # The two restarted servers are free: only the grace can keep B out, and
  # it cannot tell when they started.
  run -69 --separate-stderr rl --restart-grace 30s -w 5s noinfo bash -c "$(hold_script "$hb2" 1)"
  echo "$stderr"
  ((${#stderr_lines[@]} == 1))
  [[ $stderr == *"cannot tell when the Redis server at 127.0.0.1:"*"INFO refused"*"allow INFO or set --restart-grace 0"* ]]
  [[ ! -e $hb2 ]]
  reap "$r1" 15 || rc1=$?
  note "the holder exited $rc1"
  cat "$BG_ERR"
  ((rc1 == 0 || rc1 == 70))
  [[ $(held_count "$(lock_key noinfo)" "${PORTS[@]:0:3}") == 0 ]]
}

@test "INFO refused on one of 3 servers with a restart grace: it never counts; with another held elsewhere, -n is 75 and leaves no key; once that is free, the other two make the quorum" {
  local ports=("${PORTS[0]}" "${PORTS[3]}" "${PORTS[4]}")
  three_servers "${ports[@]}"
  # Older than the grace (1 s): only the refused INFO can hold one back.
  wait_until 10 up_for 3 "${ports[@]:1}"
  no_info "${ports[0]}"
  contender_hold oneinfo 4242 "${ports[1]}"
  run -75 --separate-stderr rl --restart-grace 1s -n oneinfo touch ran
  echo "$stderr"
  [[ ! -e ran ]]
  absent_on "$(lock_key oneinfo)" "${ports[0]}" "${ports[2]}"
  topology_cli "${ports[1]}" del "$(lock_key oneinfo)" >/dev/null
  run -0 --separate-stderr rl --restart-grace 1s -w 5s oneinfo sh -c 'echo "$RLOCK_FENCE"'
  echo "$stderr"
  [[ $output =~ ^[0-9]+$ ]]
  [[ $(held_count "$(lock_key oneinfo)" "${ports[@]}") == 0 ]]
}

@test "a black-holed server (its accept queue full) costs little: with 2 live servers and it, -t 3s runs its command and exits 0, and -t 30s starts it well before --connect-timeout; so does a frozen one" {
  local start first
  black_hole
  RLOCK_URL="$(url_of "${PORTS[0]}") $(url_of "${PORTS[1]}") $(url_of "$BH_PORT")"
  export RLOCK_URL
  start=$EPOCHREALTIME
  run -0 --separate-stderr rl --connect-timeout 5s -t 3s -w 8s bh sh -c 'echo ran'
  note "-t 3s with a black hole: exit 0 after $(elapsed "$start") s"
  echo "$stderr"
  [[ $output == ran ]]
  start=$EPOCHREALTIME
  run -0 --separate-stderr rl --connect-timeout 5s -t 30s -w 8s bh bash -c 'echo "$EPOCHREALTIME"'
  echo "$stderr"
  first=$output
  [[ $first =~ ^[0-9]+[.,][0-9]+$ ]]
  note "-t 30s with a black hole: the command started $(awk -v a="$start" -v b="$first" 'BEGIN { printf "%.2f", b - a }') s after the launch"
  # Before one --connect-timeout: the black hole was not waited for.
  awk -v a="$start" -v b="$first" 'BEGIN { exit !(b - a < 5) }'
  [[ $(held_count "$(lock_key bh)" "${PORTS[@]:0:2}") == 0 ]]

  # A frozen server accepts connections (the kernel does) and never answers.
  three_servers
  freeze "${PORTS[2]}"
  for first in 1 2 3; do
    run -0 --separate-stderr rl --connect-timeout 5s -t 3s -w 8s fz sh -c 'echo ran'
    echo "$stderr"
    [[ $output == ran ]]
  done
  thaw "${PORTS[2]}"
}

@test "a split vote (each of 3 servers held by another contender, or ours): the waiter looks again soon, and gets in well inside the safety net's span once the others undo" {
  local ev=$BATS_TEST_TMPDIR/ev r start
  three_servers
  contender_hold split 4242 "${PORTS[0]}"
  contender_hold split 4343 "${PORTS[1]}"
  bg "$RLOCK" -t 10s -w 30s --events "$ev" split sh -c 'echo ran'
  r=$BG_PID
  wait_until 10 has_event "$ev" waiting
  sleep 0.5
  # The other two contenders undo quietly (no wake-up), as losers do.
  topology_cli "${PORTS[0]}" del "$(lock_key split)" >/dev/null
  topology_cli "${PORTS[1]}" del "$(lock_key split)" >/dev/null
  start=$EPOCHREALTIME
  # The holders' leases are 60 s and the safety net after them 5-10 s: the
  # run must not sleep for either.
  reaped 0 "$r" 4
  note "the split's loser got in $(elapsed "$start") s after the others undid"
  [[ $(<"$BG_OUT") == ran ]]
}

@test "2 of 3 servers restarted empty during a hold are noticed at once, not at the next renewal: the run is stopped (70) long before it" {
  local hb=$BATS_TEST_TMPDIR/hb r rc=0 start pgid
  three_servers
  # -t 60s: the first renewal is due 20 s after the acquire.
  bg "$RLOCK" -t 60s g8 bash -c "$(hold_script "$hb" 30)"
  r=$BG_PID
  wait_until 10 beating "$hb"
  pgid=$(child_group "$hb")
  # The renewer has connected by now.
  sleep 0.5
  start=$EPOCHREALTIME
  restart_empty "${PORTS[0]}"
  restart_empty "${PORTS[1]}"
  reap "$r" 10 || rc=$?
  note "2 of 3 restarted: rlock exited $rc $(elapsed "$start") s after the first restart"
  cat "$BG_ERR"
  ((rc == 70))
  wait_until 3 group_dead "$pgid"
}
