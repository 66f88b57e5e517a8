# shellcheck shell=bash
#
# Children's heartbeats and lease times, for the fault tests (faults.bats,
# netfaults.bats) and the topology suites (tests/topology/sentinel.bats,
# cluster.bats). Load after helpers. A heartbeat child appends
# $EPOCHREALTIME to a file every 50 ms (hold_script's every 20 ms); a lease's
# start is the `time` of the last "acquired" or "renewed" --events record.
# The tests' setup creates $GROUPS_FILE (process groups for teardown to kill).
#
# The child scripts are single-quoted on purpose.
# shellcheck disable=SC2016

# heartbeat_script FILE: a bash script that writes its PID to FILE.pid (it
# is its process group: rlock makes the child a group leader), then appends
# $EPOCHREALTIME to FILE every 50 ms until it is killed.
heartbeat_script() {
  printf 'echo $$ >"%s.pid.tmp" && mv "%s.pid.tmp" "%s.pid"; ' "$1" "$1" "$1"
  printf 'while :; do echo "$EPOCHREALTIME" >>"%s"; sleep 0.05; done' "$1"
}

# beats_script FILE N: a script that appends $EPOCHREALTIME to FILE N times,
# every 50 ms, then exits 0 (a second holder's child).
beats_script() {
  printf 'for i in $(seq %d); do echo "$EPOCHREALTIME" >>"%s"; sleep 0.05; done' "$2" "$1"
}

# hold_script FILE SECONDS: a bash script that writes its PID to FILE.pid
# (its process group: rlock makes the child a group leader), then appends
# $EPOCHREALTIME to FILE every 20 ms for SECONDS, then exits 0.
hold_script() {
  printf 'echo $$ >"%s.pid.tmp" && mv "%s.pid.tmp" "%s.pid"; ' "$1" "$1" "$1"
  printf 'end=$((${EPOCHREALTIME//[.,]/} + %d000000)); ' "$2"
  printf 'while ((${EPOCHREALTIME//[.,]/} < end)); do echo "$EPOCHREALTIME" >>"%s"; sleep 0.02; done' "$1"
}

# beating FILE: true once the heartbeat child of FILE is running.
beating() {
  file_has "$1.pid" && file_has "$1"
}

# child_group FILE: print the heartbeat child's process group and have
# teardown SIGKILL what is left of it.
child_group() {
  local pgid
  pgid=$(<"$1.pid")
  echo "$pgid" >>"$GROUPS_FILE"
  echo "$pgid"
}

# kill_child_groups: SIGKILL what is left of the process groups in
# $GROUPS_FILE, for teardown. Process group IDs can be reused: only
# processes whose command line names this test's directory.
kill_child_groups() {
  local target pid
  while read -r target; do
    [[ -n $target ]] || continue
    for pid in $(pgrep -g "$target"); do
      grep -qaF "$BATS_TEST_TMPDIR" "/proc/$pid/cmdline" 2>/dev/null &&
        kill -KILL "$pid" 2>/dev/null
    done
  done <"$GROUPS_FILE"
  return 0
}

# group_dead PGID: true when no process of process group PGID is alive (a
# zombie is dead, even before whoever inherited it has reaped it).
group_dead() {
  local pid
  for pid in $(pgrep -g "$1"); do
    running "$pid" && return 1
  done
  return 0
}

# usec T: a $EPOCHREALTIME value as integer microseconds.
usec() {
  local digits=${1//[.,]/}
  echo $((10#$digits))
}

# first_beat FILE / last_beat FILE: the first or last heartbeat in FILE, in
# microseconds since the epoch.
first_beat() {
  usec "$(grep -E '^[0-9]+[.,][0-9]{6}$' "$1" | head -n 1)"
}
last_beat() {
  usec "$(grep -E '^[0-9]+[.,][0-9]{6}$' "$1" | tail -n 1)"
}

# beats_after FILE T: number of heartbeats in FILE later than T (us).
beats_after() {
  local line n=0
  while read -r line; do
    [[ $line =~ ^[0-9]+[.,][0-9]{6}$ ]] || continue
    (($(usec "$line") > $2)) && n=$((n + 1))
  done <"$1"
  echo "$n"
}

# span_ms FILE: milliseconds between the first and the last beat in FILE.
span_ms() {
  echo $((($(last_beat "$1") - $(first_beat "$1")) / 1000))
}

# no_overlap FILE...: the heartbeat intervals [first, last] of the FILEs
# that have beats never intersect. Prints them, sorted by start, in ms.
no_overlap() {
  local file first last prev='' prev_end=0 bad=0
  for file; do
    [[ -s $file ]] || continue
    echo "$(first_beat "$file") $(last_beat "$file") $file"
  done | sort -n >"$BATS_TEST_TMPDIR/intervals"
  while read -r first last file; do
    echo "interval $((first / 1000)) - $((last / 1000)) ms: $file"
    if ((first <= prev_end)); then
      echo "OVERLAP: $file starts $(((prev_end - first) / 1000)) ms before $prev ends" >&2
      bad=1
    fi
    if ((last > prev_end)); then
      prev_end=$last prev=$file
    fi
  done <"$BATS_TEST_TMPDIR/intervals"
  return "$bad"
}

# event_count FILE EVENT: how many EVENT lines the --events FILE has.
event_count() {
  grep -c "\"event\":\"$2\"" "$1" 2>/dev/null || true
}

# has_event FILE EVENT: true when the --events FILE has an EVENT line.
has_event() {
  (($(event_count "$1" "$2") > 0))
}

# more_than N CMD [ARG...]: true when CMD prints a number larger than N.
more_than() {
  local n=$1
  shift
  (($("$@") > n))
}

# lease_start FILE: the `time` of the last "acquired" or "renewed" event in
# the --events FILE, in microseconds since the epoch. The event is written
# after the reply, so the server's expiry is never later than this + TTL.
lease_start() {
  local iso
  iso=$(grep -E '"event":"(acquired|renewed)"' "$1" | tail -n 1 |
    sed -E 's/.*"time":"([^"]+)".*/\1/')
  [[ -n $iso ]] || {
    echo "lease_start: no acquired/renewed event in $1" >&2
    return 1
  }
  date -u -d "$iso" +%s%6N
}

# exits_with CODE PID: background child PID exits (within 10 s) with CODE.
exits_with() {
  local rc=0
  reap "$2" 10 || rc=$?
  if ((rc != $1)); then
    echo "pid $2 exited with $rc, expected $1" >&2
    return 1
  fi
}

# before A B WHAT: A < B (both microseconds); otherwise say by how much not.
before() {
  if (($1 >= $2)); then
    echo "$3: $1 is not before $2 (late by $((($1 - $2) / 1000)) ms)" >&2
    return 1
  fi
}

# lost_without_overlap PID PGID HB1 EVENTS TTL_MS NEXT HB2: rlock PID exits
# 70 and its child's group PGID dies; the child's last heartbeat (in HB1)
# is before its lease's end (the last lease start in EVENTS + TTL_MS), and
# the next holder NEXT exits 0, its child's first heartbeat (in HB2) after
# the first child's last.
lost_without_overlap() {
  local pid=$1 pgid=$2 hb1=$3 events=$4 ttl_ms=$5 next=$6 hb2=$7
  exits_with 70 "$pid"
  wait_until 3 group_dead "$pgid"
  before "$(last_beat "$hb1")" "$(($(lease_start "$events") + ttl_ms * 1000))" \
    "first child's last heartbeat vs its lease's end"
  reaped 0 "$next" 10
  before "$(last_beat "$hb1")" "$(first_beat "$hb2")" \
    "first child's last heartbeat vs the next holder's child's first"
}

# kept_or_lost RC PGID HB1 EVENTS TTL_MS SECONDS HB2: after a failover under
# a holder (rlock's exit status RC, its child's group PGID, the child a
# hold_script of SECONDS beating in HB1, --events EVENTS, a TTL of TTL_MS)
# and a waiter whose child beat in HB2: the two children never beat at once
# and the waiter's ran; the holder either lost the lock (70), its child
# gone and its last beat before its lease's end, or kept it (0) and its
# command ran to its end.
kept_or_lost() {
  local rc=$1 pgid=$2 hb1=$3 events=$4 ttl_ms=$5 seconds=$6 hb2=$7
  no_overlap "$hb1" "$hb2"
  [[ -s $hb2 ]]
  if ((rc == 70)); then
    wait_until 3 group_dead "$pgid"
    before "$(last_beat "$hb1")" "$(($(lease_start "$events") + ttl_ms * 1000))" \
      "the holder's last heartbeat vs its lease's end"
  else
    ((rc == 0))
    (($(span_ms "$hb1") >= seconds * 1000 - 100))
  fi
}
