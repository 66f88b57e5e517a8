#!/usr/bin/env bats
#
# Waiters that must not leave anything behind or load the server, and that
# ride out what passes: -n --fair takes no place in the queue, the safety net
# follows each holder's TTL, a lost acquire reply is undone when the wait
# ends otherwise, and reconnecting rides out maxclients (and, in tls.bats, a
# TLS handshake that gets no answer).

# `run` sets status and stderr (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

load helpers

setup_file() {
  common_setup_file
}
teardown() {
  redis_cli config set maxclients 10000 >/dev/null
  common_teardown
}

# calls COMMAND: how many times the server ran COMMAND since the last
# CONFIG RESETSTAT.
calls() {
  local line
  line=$(redis_cli info commandstats | grep "^cmdstat_$1:" || true)
  line=${line#*calls=}
  line=${line%%,*}
  echo "${line:-0}"
}

@test "-n --fair on a held lock leaves no queue entry behind" {
  bg "$RLOCK" ph sleep 1
  wait_until 5 key_exists "$(lock_key 'ph')"
  run rl -n --fair ph true
  ((status == 75))
  run rl -w 0 --fair ph true
  ((status == 75))
  [[ $(redis_cli zcard "$(queue_key 'ph')") == 0 ]]
  reaped 0 "$BG_PID" 10
  # The free lock is free for everyone at once, not after the entry's 10s.
  run rl -n ph true
  ((status == 0))
}

@test "the safety net follows the current holder's TTL, not the first one's" {
  # The waiter first meets a 150ms holder (a 50ms safety net), then waits
  # behind a 1h holder: its safety net must grow to 10s.
  bg "$RLOCK" -t 150ms poll sleep 1.5
  local first=$BG_PID
  wait_until 5 key_exists "$(lock_key 'poll')"
  bg "$RLOCK" --fair -t 1h poll sleep 5
  local second=$BG_PID
  bg "$RLOCK" -v --fair poll true
  local waiter=$BG_PID
  # The waiter has met the 150ms holder.
  wait_until 5 grep -q 'held by .*(sleep 1.5)' "$BG_ERR"
  reaped 0 "$first" 10
  wait_until 10 held_for_ms poll 3600000
  sleep 0.3
  redis_cli config resetstat >/dev/null
  sleep 2
  local looks=$(($(calls pttl) + $(calls evalsha) + $(calls eval)))
  echo "the waiter looked $looks times in 2s behind a 1h holder" >&2
  # A refresh of its --fair place (every 4-5s) and a safety net of 5-10s:
  # at most one or two looks, never dozens.
  ((looks <= 3))
  reaped 0 "$second" 10
  reaped 0 "$waiter" 10
}

# held_for_ms NAME TTL_MS: true when NAME is held with a lease of TTL_MS.
held_for_ms() {
  [[ $(redis_cli hget "$(lock_key "$1")" ttl_ms) == "$2" ]]
}

# held_by PID: true when the lock lr is held by a run whose pid is PID.
held_by() {
  [[ $(redis_cli hget "$(lock_key 'lr')" pid) == "$1" ]]
}

# lock_scripts_run: how many lock scripts the server ran since the last
# CONFIG RESETSTAT. An EVALSHA that failed (NOSCRIPT: a script's first use
# since the server started) is run again with EVAL: one script.
lock_scripts_run() {
  local failed
  failed=$(redis_cli info commandstats | grep '^cmdstat_evalsha:' |
    sed -n 's/.*failed_calls=\([0-9]*\).*/\1/p')
  echo $(($(calls evalsha) + $(calls eval) - ${failed:-0}))
}

# settled PID: true once rlock PID runs its renewal thread (100 ms into its
# command) and that thread's first look at the lease is surely done.
settled() {
  local tasks=(/proc/"$1"/task/*)
  ((${#tasks[@]} >= 2)) && sleep 0.3
}

# more_scripts_than N: true once the server ran more than N lock scripts.
more_scripts_than() {
  (($(lock_scripts_run) > $1))
}

@test "a release wakes one waiter outside --fair, not every one" {
  bg "$RLOCK" herd sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 5 key_exists "$(lock_key herd)"
  # Its renewal thread's first look (a check) done before the count starts.
  wait_until 10 settled "$holder"
  for _ in 1 2 3 4 5 6; do
    bg "$RLOCK" herd sleep 30
  done
  wait_until 10 blocked_waiters 6
  redis_cli config resetstat >/dev/null
  touch go
  reaped 0 "$holder" 10
  wait_until 5 blocked_waiters 5
  # The release, the one woken waiter's acquire, and its renewal thread's
  # first look at the lease (a check, 100 ms into its command); then time
  # for any other waiter to have woken and tried (each would run one more).
  wait_until 5 more_scripts_than 2
  sleep 0.5
  (($(lock_scripts_run) == 3))
  [[ $(redis_cli llen "$(wake_list herd)") == 0 ]]
}

@test "a waiter killed while it waits takes no wake-up with it" {
  bg "$RLOCK" gone sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 5 key_exists "$(lock_key gone)"
  # The first to block would be handed the wake-up.
  bg "$RLOCK" gone true
  local first=$BG_PID
  wait_until 10 blocked_waiters 1
  bg "$RLOCK" gone echo second-ran
  local second=$BG_PID
  wait_until 10 blocked_waiters 2
  kill -KILL "$first"
  wait_until 5 blocked_waiters 1
  touch go
  reaped 0 "$holder" 10
  # Woken by the release, not by its safety net (5-10 s behind a 30 s lease).
  reaped 0 "$second" 2
  grep -q second-ran "$BG_OUT"
}

# blocked_now N: N clients are blocked (in BLPOP) now.
blocked_now() {
  [[ $(redis_cli client list | grep -c ' flags=[A-Za-z]*b[A-Za-z]* ') == "$1" ]]
}

@test "a waiter that gives up holding a wake-up passes it on" {
  bg "$RLOCK" handed sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 5 key_exists "$(lock_key handed)"
  # The first to block is handed the release's wake-up.
  bg "$RLOCK" handed true
  local first=$BG_PID
  wait_until 10 blocked_waiters 1
  bg "$RLOCK" handed echo second-ran
  local second=$BG_PID
  wait_until 10 blocked_waiters 2
  # Stopped, the first waiter is handed the wake-up and has not read it: the
  # release lands between its last look and its giving up.
  kill -STOP "$first"
  touch go
  reaped 0 "$holder" 10
  # (CLIENT LIST's cmd stays blpop once the BLPOP is served: its flags say
  # who still blocks.)
  wait_until 5 blocked_now 1
  [[ $(redis_cli llen "$(wake_list handed)") == 0 ]]
  # It gives up (a signal, which it reads before the wake-up).
  kill -TERM "$first"
  kill -CONT "$first"
  reaped 143 "$first" 10
  # Woken when the first gave up, not by its safety net (5-10 s behind a
  # 30 s lease).
  reaped 0 "$second" 2
  grep -q second-ran "$BG_OUT"
}

@test "a waiter the holder's command left in its group is gone before the release" {
  # The nested waiter blocks first, so the server would hand it the wake-up
  # if its connection were still open when the release came.
  local i
  for i in 1 2 3 4 5; do
    rm -f go
    bg "$RLOCK" grp sh -c "\"$RLOCK\" grp true & until [ -e go ]; do sleep 0.01; done"
    local holder=$BG_PID
    wait_until 10 blocked_waiters 1
    bg "$RLOCK" grp echo "next-ran-$i"
    local next=$BG_PID
    wait_until 10 blocked_waiters 2
    touch go
    reaped 0 "$holder" 10
    # Woken by the release, not by its safety net (5-10 s behind a 30 s
    # lease).
    reaped 0 "$next" 2
    grep -q "next-ran-$i" "$BG_OUT"
  done
}

@test "a waiter whose winning acquire lost its reply, then interrupted, leaves no lock" {
  start_proxy
  bg "$RLOCK" lr sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 10 key_exists "$(lock_key 'lr')"
  bg "$RLOCK" --url "redis://127.0.0.1:$PROXY_PORT/0" --io-timeout 300ms \
    lr echo waiter-ran
  local waiter=$BG_PID waiter_err=$BG_ERR
  wait_until 15 blocked_waiters 1
  # From now on the waiter's requests arrive 0.35s late and its replies 0.7s
  # late, past its 300ms: the acquire after the release runs on the server,
  # its reply is lost, and the waiter reconnects.
  proxy_control 0.35 0 0
  touch go
  reaped 0 "$holder" 10
  wait_until 10 grep -q reconnecting "$waiter_err"
  wait_until 5 held_by "$waiter"
  kill -INT "$waiter"
  reaped 130 "$waiter" 10
  # Its token is released, not left to the 30s lease.
  wait_until 5 key_absent "$(lock_key 'lr')"
  not grep -q waiter-ran "$BG_OUT"
}

@test "a waiter rides out 'max number of clients reached' while reconnecting" {
  bg "$RLOCK" mc sleep 3
  wait_until 10 key_exists "$(lock_key 'mc')"
  bg "$RLOCK" -v -w 20s mc echo waiter-ran
  local waiter=$BG_PID waiter_out=$BG_OUT waiter_err=$BG_ERR
  wait_until 10 blocked_waiters 1
  # One connection drops the waiter's own connection (the latest that ran an
  # acquire) and, in the same step, lets no new client in for 4 s.
  python3 - "$REDIS_SOCKET" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rb')
def call(*args):
    s.sendall(b'*%d\r\n' % len(args)
              + b''.join(b'$%d\r\n%s\r\n' % (len(a), a.encode()) for a in args))
    line = f.readline()
    return f.read(int(line[1:]) + 2) if line.startswith(b'$') else line
clients = call('CLIENT', 'LIST').decode().splitlines()
waiter = [c.split()[0][3:] for c in clients if 'cmd=evalsha' in c][-1]
# Two: this connection and the waiter's wake-up connection, which stay; the
# holder's connections, gone when it exits, free no slot.
assert call('CONFIG', 'SET', 'maxclients', '2') == b'+OK\r\n'
call('CLIENT', 'KILL', 'ID', waiter)
time.sleep(4)
call('CONFIG', 'SET', 'maxclients', '10000')
PY
  reap "$waiter" 20 || {
    cat "$waiter_err"
    false
  }
  grep -q waiter-ran "$waiter_out"
}
