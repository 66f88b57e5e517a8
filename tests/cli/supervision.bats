#!/usr/bin/env bats
#
# Supervision of the command: what the watchdog reaches, when the command may
# start, the exit status after the watchdog's kill, and rlock's own signal
# handling (issue #10: item 1, F1, F3, F7, F8, F17, F18).
#
# Heartbeats are `date +%s%N` lines (the children are sh scripts); "A's
# heartbeats while B held the lock" are those strictly between B's start and
# end stamps, and any of them means two holders' commands ran at once.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr
# (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers
load heartbeat

setup() {
  common_setup
  FROZEN_FILE=$BATS_TEST_TMPDIR/frozen
  GROUPS_FILE=$BATS_TEST_TMPDIR/groups
  : >"$FROZEN_FILE"
  : >"$GROUPS_FILE"
}
teardown() {
  local target pid
  while read -r target; do
    [[ -n $target ]] && kill -CONT -- "$target" 2>/dev/null
  done <"$FROZEN_FILE"
  common_teardown
  kill_child_groups
  # Whatever a test's command left behind outside its group.
  for pid in $(pgrep -f "$BATS_TEST_TMPDIR"); do
    kill -KILL "$pid" 2>/dev/null
  done
  return 0
}

# freeze PID: SIGSTOP it; teardown continues it.
freeze() {
  echo "$1" >>"$FROZEN_FILE"
  kill -STOP -- "$1"
}

# A TCP proxy between rlock and Redis that freezes rlock (SIGSTOP to the pid
# in ./rlock.pid, once) at a chosen moment, writes ./stopped, and continues
# it HOLD seconds later:
#   renew    a renewal's reply (a successful reply on a connection that
#            never carried the command line, so not the acquire's) comes
#            0.3 s late (a slow link), and rlock is frozen with it in flight
#   acquire  just before forwarding the reply that grants the lock
# Writes its port to PORTFILE once it listens.
PROXY='
import asyncio, os, signal, sys
mode, hold, target, portfile = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def freeze_rlock():
    if os.path.exists("stopped"):
        return
    pid = int(open("rlock.pid").read())
    os.kill(pid, signal.SIGSTOP)
    open("stopped", "w").write("1")
    asyncio.get_running_loop().call_later(hold, os.kill, pid, signal.SIGCONT)
async def pipe(r, w, down, conn):
    try:
        while data := await r.read(65536):
            if not down and b"sleep" in data:
                conn["acquires"] = True
            granted = data == b":1\r\n" or data.startswith(b"*2\r\n:1\r\n")
            if down and mode == "renew" and granted and "acquires" not in conn:
                await asyncio.sleep(0.3)
                freeze_rlock()
            if down and mode == "acquire" and data.startswith(b"*2\r\n:1\r\n"):
                freeze_rlock()
            w.write(data)
            await w.drain()
    except Exception:
        pass
    w.close()
async def handle(cr, cw):
    sr, sw = await asyncio.open_connection("127.0.0.1", target)
    conn = {}
    await asyncio.gather(pipe(cr, sw, False, conn), pipe(sr, cw, True, conn))
async def main():
    s = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.sockets[0].getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    async with s:
        await s.serve_forever()
asyncio.run(main())
'

# proxy MODE HOLD: start the proxy in the test's directory; sets PROXY_URL.
proxy() {
  local portfile=$BATS_TEST_TMPDIR/proxy.port
  bg python3 -c "$PROXY" "$1" "$2" "$REDIS_PORT" "$portfile"
  wait_until 10 file_has "$portfile"
  PROXY_URL=redis://127.0.0.1:$(<"$portfile")/0
}

# no_event_after_lost EVENTS: the --events file has a `lost` event, and
# nothing follows it but `released`.
no_event_after_lost() {
  has_event "$1" lost
  awk '/"event":"lost"/ { lost = 1; next }
       lost && !/"event":"released"/ { print "after lost: " $0; bad = 1 }
       END { exit bad }' "$1"
}

# beats_between FILE START END: lines of FILE (nanoseconds) strictly between
# the stamps in files START and END.
beats_between() {
  awk -v s="$(<"$2")" -v e="$(<"$3")" '$1 > s && $1 < e' "$1" | wc -l
}

# --- item 1: the exit status after the watchdog's kill --------------------

# late_renewal N: one run frozen with its first renewal's reply in flight.
# The reply is due 0.3 s after the renewal (sent at 1/3 of the TTL); rlock
# is continued 0.45 s later, past the deadline it gave the watchdog (0.985 s
# after the acquire) but before the one the late renewal would give (1.15 s).
late_renewal() {
  local ev=$BATS_TEST_TMPDIR/ev$1 r1
  rm -f stopped
  bg "$RLOCK" --url "$PROXY_URL" -t 1s --events "$ev" "late$1" sleep 30
  r1=$BG_PID
  echo "$r1" >>"$FROZEN_FILE"
  echo "$r1" >rlock.pid
  exits_with 70 "$r1"
  file_has stopped
  grep -q "rlock: lost lock 'late$1': " "$BG_ERR"
  no_event_after_lost "$ev"
}

@test "rlock frozen with a renewal's reply in flight past the watchdog's kill: 70, the line, no 'renewed' after 'lost'" {
  local i
  proxy renew 0.45
  # Which thread runs first after SIGCONT varies: a few runs.
  for i in 1 2 3 4; do
    late_renewal "$i"
  done
}

# --- F1: the watchdog reaches every descendant ------------------------------

# run_a_then_b SIG INNER: A runs `INNER sh -c LOOP` (LOOP writes heartbeats
# to A.beats; `timeout 4` ends it) under a 1 s lease; A's rlock gets SIG; B then takes the
# lock and holds it 1 s. Prints A's heartbeats inside B's hold.
run_a_then_b() {
  local sig=$1 inner=$2 a
  bg "$RLOCK" -t 1s grp sh -c \
    "$inner sh -c 'while :; do date +%s%N >>$BATS_TEST_TMPDIR/A.beats; sleep 0.05; done'"
  a=$BG_PID
  echo "$a" >>"$FROZEN_FILE"
  wait_until 10 file_has A.beats
  sleep 0.2
  kill "-$sig" "$a"
  rl -w 10s grp sh -c 'date +%s%N >B.start; sleep 1; date +%s%N >B.end' \
    >/dev/null 2>&1 || return 1
  kill -CONT "$a" 2>/dev/null || true
  beats_between A.beats B.start B.end
}

@test "rlock SIGKILLed, timeout(1) inside the command: no heartbeat of A inside B's hold" {
  run -0 run_a_then_b KILL 'timeout 4'
  [ "${lines[-1]}" -eq 0 ]
}

@test "rlock SIGKILLed, setsid inside the command: no heartbeat of A inside B's hold" {
  run -0 run_a_then_b KILL 'setsid -w'
  [ "${lines[-1]}" -eq 0 ]
}

@test "rlock SIGSTOPped, timeout(1) inside the command: no heartbeat of A inside B's hold" {
  run -0 run_a_then_b STOP 'timeout 4'
  [ "${lines[-1]}" -eq 0 ]
}

@test "rlock SIGSTOPped, setsid and a cleared environment inside the command: no heartbeat of A inside B's hold" {
  run -0 run_a_then_b STOP 'setsid -w env -i'
  [ "${lines[-1]}" -eq 0 ]
}

@test "rlock SIGKILLed, a nested rlock run with setsid inside the command: no heartbeat of A inside B's hold" {
  run -0 run_a_then_b KILL "$RLOCK inner setsid -w"
  [ "${lines[-1]}" -eq 0 ]
}

# --- F3: the command never starts after its lease ran out -------------------

@test "rlock frozen between the acquire and the exec past the lease: the command never runs; 70 saying so; the lock is free" {
  local r1 r1_err
  proxy acquire 1.5
  bg "$RLOCK" --url "$PROXY_URL" -t 1s ranout touch "$BATS_TEST_TMPDIR/A-ran"
  r1=$BG_PID
  r1_err=$BG_ERR
  echo "$r1" >>"$FROZEN_FILE"
  echo "$r1" >rlock.pid
  exits_with 70 "$r1"
  file_has stopped
  [ ! -e "$BATS_TEST_TMPDIR/A-ran" ]
  grep -q "rlock: lost lock 'ranout': the lease ran out before the command started" "$r1_err"
  run -0 rl -n ranout true
}

# --- F7, F8, F17, F18: rlock's own signals and its watchdog -----------------

@test "started with SIGCHLD ignored: rlock still sees its command end, exits 0 and releases" {
  run -0 timeout -s KILL 5 python3 -c \
    'import os,signal,sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execvp(sys.argv[1], sys.argv[1:])' \
    "$RLOCK" -t 1s chld true
  key_absent "$(lock_key 'chld')"
}

@test "a waiter under nohup survives SIGHUP and runs its command" {
  local h w
  bg "$RLOCK" hup sleep 1.5
  h=$BG_PID
  wait_until 10 key_exists "$(lock_key 'hup')"
  bg nohup "$RLOCK" -w 10s hup sh -c 'echo ran >waiter.out'
  w=$BG_PID
  sleep 0.3
  kill -HUP "$w"
  exits_with 0 "$w"
  [ "$(<waiter.out)" = ran ]
  exits_with 0 "$h"
}

@test "a forwarded signal does not continue a job someone paused" {
  local a pgid n1 n2
  bg "$RLOCK" sc sh -c \
    "$(ready_cmd "$BATS_TEST_TMPDIR/ready"); trap '' USR1; while :; do date +%s%N >>beats; sleep 0.05; done"
  a=$BG_PID
  wait_until 10 file_has "$BATS_TEST_TMPDIR/ready"
  wait_until 10 file_has beats
  pgid=$(pgrep -P "$a" -x sh)
  echo "$pgid" >>"$GROUPS_FILE"
  echo "-$pgid" >>"$FROZEN_FILE"
  kill -STOP -- "-$pgid"
  sleep 0.3
  n1=$(wc -l <beats)
  kill -USR1 "$a"
  sleep 0.5
  n2=$(wc -l <beats)
  [ "$n1" -eq "$n2" ]
  # SIGTERM is forwarded all the same: it acts once the job is continued.
  kill -TERM "$a"
  sleep 0.3
  kill -CONT -- "-$pgid"
  exits_with 143 "$a"
}

@test "rlock exits at once after its command although its watchdog is stopped" {
  local a wd
  bg "$RLOCK" wd sleep 1
  a=$BG_PID
  wait_until 10 pgrep -P "$a" -x rlock-watchdog
  wd=$(pgrep -P "$a" -x rlock-watchdog)
  echo "$wd" >>"$FROZEN_FILE"
  kill -STOP "$wd"
  exits_with 0 "$a"
  key_absent "$(lock_key 'wd')"
}

# --- a watchdog that dies or stops (issue #23, G8) -----------------------------

# watchdog_of PID: the pid of rlock PID's watchdog, once it has one.
watchdog_of() {
  wait_until 10 pgrep -P "$1" -x rlock-watchdog >/dev/null || return 1
  pgrep -P "$1" -x rlock-watchdog
}

@test "the watchdog killed during a hold: the command is stopped, rlock says why and exits 70, no lock left" {
  local ev=$BATS_TEST_TMPDIR/ev a wd
  bg "$RLOCK" -t 30s --events "$ev" guarded bash -c \
    "trap 'touch term; exit 0' TERM; touch started; while :; do sleep 0.05; done"
  a=$BG_PID
  wait_until 10 test -e started
  wd=$(watchdog_of "$a")
  kill -KILL "$wd"
  exits_with 70 "$a"
  [ -e term ]
  grep -q "^rlock: gave up lock 'guarded': its watchdog (pid $wd) died: nothing would stop the command at the lease's end should rlock be stopped or killed; sent SIGTERM to the command$" "$BG_ERR"
  grep -q '"event":"lost","name":"guarded",.*"reason":"its watchdog (pid [0-9]*) died' "$ev"
  key_absent "$(lock_key 'guarded')"
}

@test "the watchdog stopped while rlock renews (-t 1s): renewals go on; continued, it does not fire on a deadline long past; stopped for long, the kill path still works" {
  local ev=$BATS_TEST_TMPDIR/ev hb=$BATS_TEST_TMPDIR/hb a wd before after
  bg "$RLOCK" -t 1s --events "$ev" stopped bash -c "$(heartbeat_script "$hb")"
  a=$BG_PID
  wait_until 10 beating "$hb"
  wd=$(watchdog_of "$a")
  # Stopped past the deadline it last read, then continued: the lease was
  # renewed all along, so the command runs on.
  freeze "$wd"
  sleep 1.5
  kill -CONT "$wd"
  sleep 0.5
  running "$a"
  running "$(<"$hb.pid")"
  # Stopped for about 9 renewals, each a new deadline for it: more than its
  # socket holds (rlock's send buffer takes 6 wake-ups).
  freeze "$wd"
  before=$(event_count "$ev" renewed)
  sleep 3
  after=$(event_count "$ev" renewed)
  echo "renewals while the watchdog was stopped: $((after - before))"
  ((after - before >= 7))
  # Still stopped, the lock is taken away: rlock still stops the command.
  redis_cli del "$(lock_key 'stopped')" >/dev/null
  exits_with 70 "$a"
  grep -q "rlock: lost lock 'stopped'" "$BG_ERR"
  key_absent "$(lock_key 'stopped')"
}

@test "a waiter's watchdog killed while it waits is replaced: the command runs under a new one and exits 0" {
  local a w wd
  bg "$RLOCK" queued sleep 30
  a=$BG_PID
  wait_until 10 key_exists "$(lock_key 'queued')"
  bg "$RLOCK" -w 30s queued bash -c 'pgrep -P "$PPID" -x rlock-watchdog >watchdogs'
  w=$BG_PID
  # A waiter forks its watchdog before its first sleep.
  wd=$(watchdog_of "$w")
  kill -KILL "$wd"
  # Dead, not dying: a process being killed closes its end of the socket
  # only after its memory is torn down (slow for an ASan build), and one
  # that dies after the acquire's look is a loss of its own (70), tested
  # above. A zombie has closed its files.
  wait_until 10 eval '[[ ! -e /proc/$wd ]] || grep -q "^State:.*Z" "/proc/$wd/status"'
  kill -TERM "$a"
  exits_with 143 "$a"
  exits_with 0 "$w"
  [ -z "$(<"$BG_ERR")" ]
  # The command saw one watchdog, not the dead one.
  [ "$(wc -l <watchdogs)" = 1 ]
  [ "$(<watchdogs)" != "$wd" ]
}
