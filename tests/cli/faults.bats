#!/usr/bin/env bats
#
# Fault injection: a frozen, crashed or restarted redis-server, a stopped or
# SIGKILLed rlock, and servers that answer with errors, garbage or nothing.
#
# The safety property checked throughout: the child of a holder whose lease
# may have expired is dead, and two holders' children never run at once.
# Children record that they are alive as heartbeats ($EPOCHREALTIME lines,
# every 50 ms); lease times come from --events (the `time` of the last
# "acquired" or "renewed" event, which is after the request was sent, so
# "that + TTL" is never earlier than the server's expiry).
#
# Tests that freeze, kill or restart redis-server get a server of their own
# (own_redis); everything that was frozen is continued in teardown.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
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
  local target
  # A test may have taken rights away from the default user.
  redis_cli acl setuser default on nopass '~*' '&*' +@all >/dev/null 2>&1 || true
  # Continue whatever this test stopped (processes and process groups)...
  while read -r target; do
    [[ -n $target ]] && kill -CONT -- "$target" 2>/dev/null
  done <"$FROZEN_FILE"
  # ...stop this test's own redis-server, if any...
  if [[ -d $BATS_TEST_TMPDIR/r ]]; then
    redis_stop "$BATS_TEST_TMPDIR/r"
  fi
  # ...and end the rlocks and fake servers started with bg, then what is
  # left of the children's process groups (only processes whose command
  # line names this test's directory: a process group ID can be reused).
  common_teardown
  kill_child_groups
}

# freeze TARGET: SIGSTOP TARGET (a PID, or -PGID for a process group);
# teardown continues it.
freeze() {
  echo "$1" >>"$FROZEN_FILE"
  kill -STOP -- "$1"
}

# thaw TARGET: SIGCONT TARGET.
thaw() {
  kill -CONT -- "$1"
}

# A fake Redis server on a free loopback port: writes the port to PORTFILE
# once it listens, then for each connection, by MODE:
#   partial  reads the request, sends the start of a reply ("*2\r\n:1"), closes
#   http     reads the request, answers like an HTTP server, closes
#   silent   accepts and never answers (keeps the connection open)
FAKE_SERVER='
import os, socket, sys
mode, portfile = sys.argv[1], sys.argv[2]
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
kept = []
while True:
    conn, _ = server.accept()
    if mode == "silent":
        kept.append(conn)
        continue
    conn.recv(65536)
    if mode == "partial":
        conn.sendall(b"*2\r\n:1")
    elif mode == "http":
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    conn.close()
'

# fake_server MODE: start the fake server; sets FAKE_PORT.
fake_server() {
  local portfile=$BATS_TEST_TMPDIR/fake.$1.port
  bg python3 -c "$FAKE_SERVER" "$1" "$portfile"
  wait_until 10 file_has "$portfile"
  FAKE_PORT=$(<"$portfile")
}

# --- redis-server frozen, crashed, restarted ---------------------------------

@test "redis-server frozen past the TTL: the child is dead before the lease can expire; 70; the next holder never overlaps" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2
  local ev=$BATS_TEST_TMPDIR/ev redis_pid r1 pgid frozen_at
  own_redis
  redis_pid=$(<"$REDIS_PIDFILE")
  bg "$RLOCK" -t 2s --events "$ev" frozen bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  # Freeze after a renewal, so that the lease being guarded is a renewed one.
  wait_until 5 has_event "$ev" renewed
  freeze "$redis_pid"
  frozen_at=$SECONDS
  exits_with 70 "$r1"
  grep -q "rlock: lost lock 'frozen': " "$BG_ERR"
  wait_until 3 group_dead "$pgid"
  # The safety property: no sign of life at or after (lease start + TTL).
  before "$(last_beat "$hb1")" "$(($(lease_start "$ev") + 2000000))" \
    "first child's last heartbeat vs its lease's end"
  # Keep the server frozen for longer than the TTL in all, then continue it.
  while ((SECONDS - frozen_at < 3)); do sleep 0.1; done
  thaw "$redis_pid"
  run -0 --separate-stderr rl -n -t 2s frozen bash -c \
    "$(printf 'echo "$EPOCHREALTIME" >>"%s"; sleep 0.2; echo "$EPOCHREALTIME" >>"%s"' "$hb2" "$hb2")"
  before "$(last_beat "$hb1")" "$(first_beat "$hb2")" \
    "first child's last heartbeat vs second child's first"
}

@test "redis-server crashed and restarted empty: the renewal finds the lock gone, TERM, 70" {
  local ready=$BATS_TEST_TMPDIR/ready r1
  own_redis
  bg "$RLOCK" -t 4s restarted sh -c \
    "trap 'echo got-TERM; exit 0' TERM; $(ready_cmd "$ready"); while :; do sleep 0.05; done"
  r1=$BG_PID
  wait_until 10 file_has "$ready"
  key_exists "$(lock_key 'restarted')"
  crash_and_restart_redis
  key_absent "$(lock_key 'restarted')"
  exits_with 70 "$r1"
  [ "$(<"$BG_OUT")" = got-TERM ]
  grep -q "rlock: lost lock 'restarted': it was deleted or taken over" "$BG_ERR"
  # Nobody holds it now: the next run takes it at once.
  run -0 rl -n restarted true
}

@test "redis-server crashed and restarted with the key (SAVE before): the run goes on and exits 0" {
  local ev=$BATS_TEST_TMPDIR/ev finish=$BATS_TEST_TMPDIR/finish r1 token renewed
  own_redis
  bg "$RLOCK" -t 6s --events "$ev" saved sh -c \
    'echo "$RLOCK_TOKEN" >"$1/token.tmp" && mv "$1/token.tmp" "$1/token"
     while [ ! -e "$1/finish" ]; do sleep 0.05; done; echo done' _ "$BATS_TEST_TMPDIR"
  r1=$BG_PID
  wait_until 10 file_has "$BATS_TEST_TMPDIR/token"
  token=$(<"$BATS_TEST_TMPDIR/token")
  [ "$(redis_cli save)" = OK ]
  crash_and_restart_redis
  # The restarted server loaded the lease from dump.rdb.
  [ "$(redis_cli hget "$(lock_key 'saved')" token)" = "$token" ]
  # Renewals before the crash went to the old server; wait for one that the
  # restarted server accepted.
  renewed=$(event_count "$ev" renewed)
  wait_until 8 more_than "$renewed" event_count "$ev" renewed
  running "$r1"
  touch "$finish"
  exits_with 0 "$r1"
  [ "$(<"$BG_OUT")" = "done" ]
  run ! grep -q 'lost lock' "$BG_ERR"
  key_absent "$(lock_key 'saved')"
}

# --- Redis failing while a waiter waits -------------------------------------

# start_redis_again: a new redis-server on the same port and configuration.
start_redis_again() {
  redis-server "$REDIS_DIR/redis.conf" >/dev/null 2>&1 || return 1
  redis_await "$REDIS_DIR" "$REDIS_PORT"
}

@test "redis-server down and back while a waiter waits (-w 20s): it reconnects and takes the lock" {
  local holder waiter
  own_redis
  bg "$RLOCK" -t 3s held sleep 60
  holder=$BG_PID
  wait_until 10 key_exists "$(lock_key 'held')"
  bg "$RLOCK" -v -w 20s held sh -c 'echo ran'
  waiter=$BG_PID
  wait_until 10 file_has "$BG_ERR" # "waiting for 'held' held by ..."
  stop_redis
  # The holder's renewals fail; it must stop its child and exit 70 within
  # the lease, whatever the waiter does.
  sleep 1
  running "$waiter"
  start_redis_again
  # The restarted server is empty: the waiter reconnects and acquires.
  exits_with 0 "$waiter"
  [ "$(<"$BG_OUT")" = ran ]
  grep -q "still waiting, reconnecting" "$BG_ERR"
  grep -q "reconnected to Redis" "$BG_ERR"
  exits_with 70 "$holder"
}

@test "redis-server down past a waiter's -w: 69 naming the address, within the bound" {
  local waiter start
  own_redis
  bg "$RLOCK" -t 30s held sleep 60
  wait_until 10 key_exists "$(lock_key 'held')"
  start=$(now_ms)
  bg "$RLOCK" -w 2s --connect-timeout 0.3s held touch ran
  waiter=$BG_PID
  sleep 0.3
  stop_redis
  exits_with 69 "$waiter"
  (($(now_ms) - start < 6000))
  [ ! -e ran ]
  grep -q "^rlock: .*still waiting, reconnecting" "$BG_ERR"
  [[ $(tail -n 1 "$BG_ERR") == "rlock: cannot connect to 127.0.0.1:$REDIS_PORT: Connection refused" ]]
}

@test "Redis unreachable at the start is not waited for: 69 at once, even with -w" {
  local port
  port=$(closed_port)
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$port" -w 30s n touch ran
  [ "$stderr" = "rlock: cannot connect to 127.0.0.1:$port: Connection refused" ]
  [ ! -e ran ]
}

# --- rlock stopped or killed --------------------------------------------------

# Only rlock is stopped (kill -STOP from elsewhere, a debugger); its child is
# not. At the time of writing this fails: nothing stops the child while rlock
# is stopped (the watchdog only acts when rlock dies), so the child runs past
# the lease and beside the next holder until rlock is continued.
@test "rlock SIGSTOPped past the TTL: its child never runs past the lease nor beside the next holder; SIGKILL on SIGCONT; 70" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2
  local ev=$BATS_TEST_TMPDIR/ev r1 r1_err pgid resumed
  bg "$RLOCK" -t 1s --events "$ev" stopped bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  r1_err=$BG_ERR
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev" renewed
  freeze "$r1"
  # The lease runs out; a second holder takes the lock and runs ~0.5 s.
  run -0 --separate-stderr rl -w 10s -t 1s stopped bash -c \
    "$(printf 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "$EPOCHREALTIME" >>"%s"; sleep 0.05; done' "$hb2")"
  resumed=$(usec "$EPOCHREALTIME")
  thaw "$r1"
  exits_with 70 "$r1"
  grep -q "rlock: lost lock 'stopped': " "$r1_err"
  wait_until 3 group_dead "$pgid"
  # Killed at once when rlock runs again ("a few ms"; 100 ms for a busy box).
  before "$(last_beat "$hb1")" "$((resumed + 100000))" \
    "first child's last heartbeat vs rlock's SIGCONT + 100 ms"
  # The safety property: no heartbeat after the lease could have expired...
  before "$(last_beat "$hb1")" "$(($(lease_start "$ev") + 1000000))" \
    "first child's last heartbeat vs its lease's end"
  # ...and none while the second holder ran.
  before "$(last_beat "$hb1")" "$(first_beat "$hb2")" \
    "first child's last heartbeat vs second child's first"
}

@test "rlock and its child frozen together past the TTL (as a frozen VM): SIGKILL before the child runs again; 70" {
  local hb1=$BATS_TEST_TMPDIR/hb1 hb2=$BATS_TEST_TMPDIR/hb2
  local ev=$BATS_TEST_TMPDIR/ev r1 r1_err pgid resumed
  bg "$RLOCK" -t 1s --events "$ev" vm bash -c "$(heartbeat_script "$hb1")"
  r1=$BG_PID
  r1_err=$BG_ERR
  wait_until 10 beating "$hb1"
  pgid=$(child_group "$hb1")
  wait_until 5 has_event "$ev" renewed
  freeze "$r1"
  freeze "-$pgid"
  run -0 --separate-stderr rl -w 10s -t 1s vm bash -c \
    "$(printf 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "$EPOCHREALTIME" >>"%s"; sleep 0.05; done' "$hb2")"
  # Only rlock is continued: it must kill the stopped group, not resume it.
  resumed=$(usec "$EPOCHREALTIME")
  thaw "$r1"
  exits_with 70 "$r1"
  grep -q "rlock: lost lock 'vm': .*sent SIGKILL" "$r1_err"
  wait_until 3 group_dead "$pgid"
  [ "$(beats_after "$hb1" "$resumed")" -eq 0 ]
  before "$(last_beat "$hb1")" "$(($(lease_start "$ev") + 1000000))" \
    "first child's last heartbeat vs its lease's end"
  before "$(last_beat "$hb1")" "$(first_beat "$hb2")" \
    "first child's last heartbeat vs second child's first"
}

@test "kill -9 of rlock whose child ignores SIGTERM: the watchdog SIGKILLs the group; the lease is left to expire" {
  local hb=$BATS_TEST_TMPDIR/hb r1 pgid token killed
  # The heartbeats come from a subshell in the child's group: the child
  # itself dies with rlock (PR_SET_PDEATHSIG); the rest is the watchdog's.
  bg "$RLOCK" -t 3s k9 bash -c \
    "trap '' TERM; echo \"\$RLOCK_TOKEN\" >'$BATS_TEST_TMPDIR/token'; ($(heartbeat_script "$hb")) & wait"
  r1=$BG_PID
  wait_until 10 beating "$hb"
  pgid=$(child_group "$hb")
  token=$(<"$BATS_TEST_TMPDIR/token")
  killed=$(usec "$EPOCHREALTIME")
  kill -KILL "$r1"
  exits_with 137 "$r1"
  # "within about 1s": poll for up to 3 s, then check the heartbeats.
  wait_until 3 group_dead "$pgid"
  before "$(last_beat "$hb")" "$((killed + 1000000))" \
    "child's last heartbeat vs rlock's SIGKILL + 1 s"
  # Nothing released the lease: it is still this run's, and still excludes.
  [ "$(redis_cli hget "$(lock_key 'k9')" token)" = "$token" ]
  (($(redis_cli pttl "$(lock_key 'k9')") > 0))
  run -75 rl -n k9 true
  # It expires by itself within the TTL.
  wait_until 5 key_absent "$(lock_key 'k9')"
  run -0 rl -n k9 true
}

# --- servers that answer badly or not at all ---------------------------------

@test "a key of the wrong type at the lock key: 69 naming WRONGTYPE; the key is left alone" {
  [ "$(redis_cli set "$(lock_key 'wt')" x)" = OK ]
  run -69 --separate-stderr rl wt touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: "*WRONGTYPE* ]]
  [ ! -e ran ]
  [ "$(redis_cli type "$(lock_key 'wt')")" = string ]
  [ "$(redis_cli get "$(lock_key 'wt')")" = x ]
  [ "$(redis_cli pttl "$(lock_key 'wt')")" = -1 ]
}

@test "a server that closes the connection mid-reply: 69, one line naming the address" {
  fake_server partial
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$FAKE_PORT/0" mid touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: "*"127.0.0.1:$FAKE_PORT"*closed* ]]
  [ ! -e ran ]
}

@test "a port that does not speak Redis (HTTP): 69, one line saying so" {
  fake_server http
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$FAKE_PORT/0" http touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: 127.0.0.1:$FAKE_PORT does not speak the Redis protocol"* ]]
  [ ! -e ran ]
}

@test "a server that never answers, --io-timeout 0.5s: 69 within a bounded time, one line naming the address" {
  local start elapsed
  fake_server silent
  start=$(now_ms)
  run -69 --separate-stderr rl --url "redis://127.0.0.1:$FAKE_PORT/0" \
    --io-timeout 0.5s silent touch ran
  elapsed=$(($(now_ms) - start))
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: "*"127.0.0.1:$FAKE_PORT"* ]]
  [[ $stderr == *"no reply"* ]]
  [ ! -e ran ]
  # Bounded, not timed.
  ((elapsed < 10000))
}

@test "renewals that Redis refuses: each renew-failed event names the error; then 70" {
  local ev=$BATS_TEST_TMPDIR/ev failed=$BATS_TEST_TMPDIR/failed r1
  bg "$RLOCK" -t 1s --events "$ev" refused sleep 30
  r1=$BG_PID
  wait_until 10 has_event "$ev" renewed
  # Existing connections lose the right to run scripts at once.
  redis_cli acl setuser default -evalsha -eval >/dev/null
  exits_with 70 "$r1"
  redis_cli acl setuser default +@all >/dev/null
  grep '"event":"renew-failed"' "$ev" >"$failed"
  [ -s "$failed" ]
  # Every one of them carries Redis's answer, the first one included.
  run -1 grep -v NOPERM "$failed"
}
