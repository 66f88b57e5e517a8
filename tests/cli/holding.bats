#!/usr/bin/env bats
#
# The end of a hold and the output during it: a lock found gone when the
# command ends is a lost lock (70), --hold keeps exactly what it says, and a
# reader that stops reading stderr or --events delays neither the renewals
# nor the signal to a command whose lock was lost.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr
# (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers
load heartbeat

setup() {
  common_setup
  GROUPS_FILE=$BATS_TEST_TMPDIR/groups
  : >"$GROUPS_FILE"
}
teardown() {
  common_teardown
  kill_child_groups
}

# stalled_stderr SECONDS RLOCK_ARG...: runs rlock with its stderr on a pipe
# that is filled up and then not read for SECONDS (a paused terminal, a
# stuck log reader), then drained. Writes rlock's PID to ./rlock.pid at the
# start, "stalled" to ./stall once the pipe is full, "drained" there when
# reading resumes; rlock's exit status to ./rlock.rc.
stalled_stderr() {
  local seconds=$1
  shift
  python3 - "$seconds" "$RLOCK" "$@" <<'PY'
import os, subprocess, sys, time
seconds = float(sys.argv[1])
r, w = os.pipe()
p = subprocess.Popen(sys.argv[2:], stderr=w, stdin=subprocess.DEVNULL)
with open("rlock.pid", "w") as f:
    f.write(str(p.pid))
time.sleep(0.3)
filler = os.open("/proc/self/fd/%d" % w, os.O_WRONLY | os.O_NONBLOCK)
try:
    while True:
        os.write(filler, b"x" * 4096)
except BlockingIOError:
    pass
with open("stall", "w") as f:
    f.write("stalled\n")
time.sleep(seconds)
os.close(filler)
os.close(w)
with open("stall", "a") as f:
    f.write("drained\n")
while os.read(r, 65536):
    pass
with open("rlock.rc", "w") as f:
    f.write(str(p.wait()))
PY
}

@test "a lock force-released while the command runs: exit 70 and a lost event" {
  bg "$RLOCK" --events ev.jsonl forced sh -c 'sleep 1; exit 0'
  wait_until 5 key_exists "$(lock_key 'forced')"
  rl release --force forced
  exits_with 70 "$BG_PID"
  # Found by the renewal thread's first look (when the release comes before
  # it) or at the command's end.
  grep -qE "lost lock 'forced': it was (no longer held when the command ended|deleted or taken over)" "$BG_ERR"
  has_event ev.jsonl lost
  [[ $(event_count ev.jsonl released) == 0 ]]
}

@test "--hold: a lock found gone at the end is lost (70), not kept" {
  bg "$RLOCK" --hold 5s --events ev.jsonl gone sh -c 'sleep 1'
  wait_until 5 key_exists "$(lock_key 'gone')"
  rl release --force gone
  exits_with 70 "$BG_PID"
  [[ $(event_count ev.jsonl released) == 0 ]]
  key_absent "$(lock_key 'gone')"
}

@test "--hold: a renewal racing the end never replaces the hold" {
  # TTL 100ms renews every 33ms, so the renewer is often mid-renewal when
  # the command ends; the hold must still be the whole 5s.
  # A run that lost its 100ms lease to a busy machine says nothing here:
  # before the end (70), or between the end and the hold's extension (0 with
  # a warning that the release went unconfirmed: the lease ran out first).
  local i rc ran=0 short=0
  for i in $(seq 120); do
    rc=0
    rl -t 100ms --hold 5s "h$i" sleep "0.0$((i % 10))" 2>err || rc=$?
    ((rc == 0)) || continue
    ! grep -q 'could not confirm releasing' err || continue
    ran=$((ran + 1))
    (($(redis_cli pttl "$(lock_key "h$i")") < 3000)) && short=$((short + 1))
  done
  echo "hold cut short in $short of $ran runs" >&2
  ((ran >= 60 && short == 0))
}

@test "an error reply at release is not retried as a lost lock" {
  # A foreign string where the queue belongs: the release script deletes the
  # lock, then fails on the queue. The release ran; a retry would find the
  # token gone and call the lock lost.
  run --separate-stderr rl fq sh -c \
    'redis-cli -p "$1" set "$2" x >/dev/null' sh "$REDIS_PORT" "$(queue_key fq)"
  ((status == 0))
  [[ $stderr == *WRONGTYPE* ]]
  [[ $stderr != *"lost lock"* ]]
}

@test "renewals go on while stderr is not read" {
  # -v writes a line per renewal; with TTL 1s the lease lapses unless the
  # renewals go on while the reader is stalled for 3s.
  stalled_stderr 3 -v -t 1s stall sh -c 'sleep 4; echo ok >finished'
  [[ $(<rlock.rc) == 0 ]]
  [[ -f finished ]]
}

@test "a lost lock is signalled while stderr is not read" {
  # The command left the process group (setsid), so only rlock's signal
  # reaches it, not the watchdog's kill of the group; the lease is long, so
  # the watchdog's own deadline stays far off.
  local beats=$BATS_TEST_TMPDIR/beats
  stalled_stderr 8 -t 6s stalled setsid -w sh -c "$(heartbeat_script "$beats")" &
  local driver=$!
  track "$driver"
  wait_until 5 beating "$beats"
  wait_until 5 file_has stall
  child_group "$beats" >/dev/null
  rl release --force stalled
  # Noticed at the next renewal (within 2s), signalled at once: the
  # heartbeats stop while the reader is still stalled.
  wait_until 5 group_dead "$(<"$beats.pid")"
  not grep -q drained stall
  reap "$driver" 15
  [[ $(<rlock.rc) == 70 ]]
}
