#!/usr/bin/env bats
#
# Waiting for a held lock: push-based wake-ups (the release publishes), a
# lease that ends without a release, the --fair FIFO queue (order, dead and
# departing waiters, nobody jumping the line), the QUEUE column of status and
# the "Nth in line" message of -v, and handoff between plain waiters.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  me="$(id -un)@$(hostname)"
}

# hold NAME [RLOCK OPTION...]: NAME held by a background rlock whose child
# runs until the file "$BATS_TEST_TMPDIR/go.NAME" appears (see `let_go`);
# sets HOLDER_PID (rlock's PID).
hold() {
  local name=$1
  shift
  bg "$RLOCK" "$@" "$name" sh -c \
    'while [ ! -e "$1" ]; do sleep 0.02; done' _ "$BATS_TEST_TMPDIR/go.$name"
  HOLDER_PID=$BG_PID
  wait_until 10 key_exists "$(lock_key "$name")"
}

# let_go NAME: end the child of `hold NAME`; its rlock releases the lock.
let_go() {
  touch "$BATS_TEST_TMPDIR/go.$1"
}

# queue_len NAME: number of entries in NAME's --fair queue (0 if none).
queue_len() {
  redis_cli zcard "$(queue_key "$1")"
}

# queue_is N NAME: true when NAME's queue has exactly N entries.
queue_is() {
  [[ $(queue_len "$2") == "$1" ]]
}

# queue_gone NAME: true when neither queue key of NAME exists.
queue_gone() {
  key_absent "$(queue_key "$1")" && key_absent "$(alive_key "$1")"
}

# server_time: set SERVER_US and SERVER_MS to the redis server's clock (the
# clock the lock scripts use for queue entries).
server_time() {
  local sec usec
  read -r sec usec <<<"$(redis_cli time | tr '\n' ' ')"
  SERVER_US=$((sec * 1000000 + usec))
  SERVER_MS=$((SERVER_US / 1000))
}

# kill9_tree PID: SIGKILL PID and every descendant of it, found by parent PID
# (never by name); each process's children are listed before it is killed.
kill9_tree() {
  local pid=$1 child children
  children=$(ps -o pid= --ppid "$pid" 2>/dev/null || true)
  kill -KILL "$pid" 2>/dev/null || true
  for child in $children; do
    kill9_tree "$child"
  done
}

# is_rlock PID: true when PID runs the rlock binary.
is_rlock() {
  [[ $(readlink "/proc/$1/exe") == "$(readlink -f "$RLOCK")" ]]
}

@test "no lost wake-up when a release races the waiter's first attempt and subscription (50 rounds)" {
  local d=$BATS_TEST_TMPDIR/race round offset rc ms waited=0
  mkdir "$d"
  : >"$d/failures"
  # The waiter: -w 3 against a holder with a 60 s lease, so that neither the
  # holder's PTTL nor the safety net (5..10 s) can rescue a lost wake-up. A
  # waiter that missed the release's message sleeps until its deadline; it
  # then makes one last attempt, which finds the lock free: so a lost wake-up
  # shows as a wait of 3 s (BASE.ms), not as 75. It reports its PID through
  # BASE.fifo and its status in BASE.rc.
  cat >"$d/waiter.sh" <<'EOF'
#!/bin/sh
base=$1 rlock=$2
echo $$ >"$base.fifo"
rc=0
start=$(date +%s%N)
timeout -k 5 20 "$rlock" -v -t 60s -w 3 race true 2>"$base.err" || rc=$?
echo $((($(date +%s%N) - start) / 1000000)) >"$base.ms"
echo "$rc" >"$base.rc.tmp" && mv "$base.rc.tmp" "$base.rc"
EOF
  # The holder's child: starts the waiter in a session of its own (the holder
  # kills whatever its child leaves in its process group), waits until the
  # waiter runs there (it says so through a FIFO), then exits OFFSET later.
  cat >"$d/holder.sh" <<'EOF'
#!/bin/sh
base=$1 rlock=$2 offset=$3
mkfifo "$base.fifo"
setsid "${0%/*}/waiter.sh" "$base" "$rlock" </dev/null >/dev/null 2>&1 3>&- &
read -r pid <"$base.fifo"
echo "$pid" >"$base.pid"
sleep "$offset"
EOF
  chmod +x "$d/waiter.sh" "$d/holder.sh"
  # Where the race window lies depends on how fast this rlock starts (a
  # sanitizer build is many times slower): time one uncontended run, and
  # spread the releases over twice that, at least 10 ms, in 50 steps.
  local started run_ms step_us
  started=$(date +%s%N)
  run -0 rl -n race-calibration true
  run_ms=$((($(date +%s%N) - started) / 1000000))
  step_us=$((run_ms * 2 * 1000 / 50))
  ((step_us >= 200)) || step_us=200
  # (Not `i`: bats 1.8.2's `run` overwrites a variable named i.)
  for ((round = 0; round < 50; round++)); do
    # From 0 to about two uncontended runs after the waiter started (plus
    # the jitter of starting `sleep`): its first attempt and its
    # subscription fall in that span.
    offset=$(printf '%d.%06d' $((round * step_us / 1000000)) $((round * step_us % 1000000)))
    run -0 rl -t 60s race "$d/holder.sh" "$d/w$round" "$RLOCK" "$offset"
    track "$(<"$d/w$round.pid")"
    wait_until 15 file_has "$d/w$round.rc"
    rc=$(<"$d/w$round.rc")
    ms=$(<"$d/w$round.ms")
    # The holder lets go within about two uncontended runs of the waiter's
    # start and the message wakes it at once; 2 s is generous, and still
    # short of the 3 s that a waiter woken only by its deadline takes.
    if [[ $rc != 0 ]] || ((ms >= 2000)); then
      echo "round $round (offset ${offset}s): waiter exited $rc after ${ms}ms: $(cat "$d/w$round.err")" >>"$d/failures"
    fi
    grep -q 'waiting for' "$d/w$round.err" && waited=$((waited + 1))
  done
  echo "rounds in which the waiter reported waiting: $waited"
  echo "failures:"
  cat "$d/failures"
  [ ! -s "$d/failures" ]
  # The rounds did stage contention: some waiters found the lock held.
  ((waited > 0))
  key_absent "$(lock_key 'race')"
}

@test "a waiter behind a lease that ends without a release acquires once it has expired" {
  local start elapsed
  # A dead holder: the lock hash and the fence counter as rlock writes them,
  # but nobody will ever release or renew it.
  redis_cli hset "$(lock_key 'X')" token t fence 1 host h pid 1 user u command c ttl_ms 60000 >/dev/null
  redis_cli set "$(fence_key 'X')" 1 >/dev/null
  [ "$(redis_cli pexpire "$(lock_key 'X')" 1500)" = 1 ]
  start=$(now_ms)
  run -0 --separate-stderr rl -w 10 X sh -c '
    echo "fence=$RLOCK_FENCE"
    echo "owner=$(redis-cli -s "$REDIS_SOCKET" hget "$RLOCK_KEY" token)"
    [ "$(redis-cli -s "$REDIS_SOCKET" hget "$RLOCK_KEY" token)" = "$RLOCK_TOKEN" ] && echo mine'
  elapsed=$(($(now_ms) - start))
  echo "$output"
  echo "elapsed: ${elapsed}ms"
  # The child ran only after the planted lease was gone: the lock was its own
  # and the fence moved past the planted one.
  (("${lines[0]#fence=}" > 1))
  [ "${lines[2]}" = mine ]
  # It cannot have run before the 1.5 s lease ended.
  ((elapsed >= 1400))
  key_absent "$(lock_key 'X')"
}

@test "--fair: 10 waiters get the lock in the order they queued" {
  local i pid pids=()
  hold fifo
  for i in 1 2 3 4 5 6 7 8 9 10; do
    bg "$RLOCK" --fair -w 30 fifo sh -c 'echo "$1" >>"$2"' _ "$i" "$BATS_TEST_TMPDIR/order"
    pids+=("$BG_PID")
    # The next one starts only once this one has its place in the queue.
    wait_until 10 queue_is "$i" fifo
  done
  let_go fifo
  reaped 0 "$HOLDER_PID"
  for pid in "${pids[@]}"; do
    reaped 0 "$pid" 30
  done
  run -0 cat "$BATS_TEST_TMPDIR/order"
  echo "$output"
  [ "$output" = "$(seq 1 10)" ]
  queue_gone fifo
  key_absent "$(lock_key 'fifo')"
}

@test "--fair: a SIGKILLed waiter leaves the queue and the one behind it gets the lock" {
  local a b
  hold dead
  bg "$RLOCK" --fair -w 25 dead touch "$BATS_TEST_TMPDIR/ran.a"
  a=$BG_PID
  wait_until 10 queue_is 1 dead
  bg "$RLOCK" --fair -w 25 dead touch "$BATS_TEST_TMPDIR/ran.b"
  b=$BG_PID
  wait_until 10 queue_is 2 dead
  # A is rlock itself (bg execs it), not a wrapper; kill it and anything it
  # started. It is in the test's process group, so the group is left alone.
  is_rlock "$a"
  kill9_tree "$a"
  reaped 137 "$a"
  # A never refreshes its entry again; the release wakes A (the head) only,
  # so B must notice by itself that A's entry expired (within 10 s).
  let_go dead
  reaped 0 "$HOLDER_PID"
  reaped 0 "$b" 30
  [ ! -e "$BATS_TEST_TMPDIR/ran.a" ]
  [ -e "$BATS_TEST_TMPDIR/ran.b" ]
  queue_gone dead
  key_absent "$(lock_key 'dead')"
}

@test "-w running out on a held lock gives 75, without and with --fair; --fair leaves the queue" {
  hold busy
  run -75 --separate-stderr rl -w 0.5 busy touch ran
  [ ! -e ran ]
  queue_gone busy
  run -75 --separate-stderr rl --fair -w 0.5 busy touch ran
  [ ! -e ran ]
  queue_gone busy
  # The holder is untouched.
  [ "$(redis_cli hget "$(lock_key 'busy')" pid)" = "$HOLDER_PID" ]
}

@test "-w running out behind another --fair waiter removes only the leaver's entry" {
  local first
  hold busy
  bg "$RLOCK" --fair busy touch "$BATS_TEST_TMPDIR/ran.first"
  wait_until 10 queue_is 1 busy
  first=$(redis_cli zrange "$(queue_key 'busy')" 0 0)
  run -75 rl --fair -w 0.5 busy touch ran
  [ ! -e ran ]
  [ "$(redis_cli zrange "$(queue_key 'busy')" 0 -1)" = "$first" ]
  [ "$(redis_cli zrange "$(alive_key 'busy')" 0 -1)" = "$first" ]
}

@test "SIGTERM to a waiting --fair rlock gives 143 and removes its queue entry" {
  local a b token_a
  hold busy
  bg "$RLOCK" --fair busy touch "$BATS_TEST_TMPDIR/ran.a"
  a=$BG_PID
  wait_until 10 queue_is 1 busy
  token_a=$(redis_cli zrange "$(queue_key 'busy')" 0 0)
  bg "$RLOCK" --fair -w 20 busy touch "$BATS_TEST_TMPDIR/ran.b"
  b=$BG_PID
  wait_until 10 queue_is 2 busy
  kill -TERM "$a"
  reaped 143 "$a"
  [ ! -e "$BATS_TEST_TMPDIR/ran.a" ]
  # Only A's entry is gone, from both keys.
  queue_is 1 busy
  [ -z "$(redis_cli zscore "$(queue_key 'busy')" "$token_a")" ]
  [ -z "$(redis_cli zscore "$(alive_key 'busy')" "$token_a")" ]
  [ "$(redis_cli zcard "$(alive_key 'busy')")" = 1 ]
  # B is now the head and gets the lock on release.
  let_go busy
  reaped 0 "$b" 15
  [ -e "$BATS_TEST_TMPDIR/ran.b" ]
  queue_gone busy
}

@test "a live queue entry keeps -n and plain waiters off a free lock" {
  server_time
  # A --fair waiter that is first in line (alive for another 60 s) and has not
  # taken the free lock yet.
  redis_cli zadd "$(queue_key 'line')" "$SERVER_US" tok >/dev/null
  redis_cli zadd "$(alive_key 'line')" $((SERVER_MS + 60000)) tok >/dev/null
  key_absent "$(lock_key 'line')"
  run -75 --separate-stderr rl -n line touch ran
  [ ! -e ran ]
  run -75 --separate-stderr rl -w 0.5 line touch ran
  [ ! -e ran ]
  key_absent "$(lock_key 'line')"
  # The entry is untouched.
  [ "$(redis_cli zrange "$(queue_key 'line')" 0 -1)" = tok ]
  [ "$(redis_cli zrange "$(alive_key 'line')" 0 -1)" = tok ]
}

@test "a plain waiter gets a free lock once the queue entry ahead of it expires" {
  local start elapsed
  # Timed from before the server's clock is read: the entry's expiry counts
  # from that reading, however long planting it then takes.
  start=$(now_ms)
  server_time
  # A --fair waiter that died right after joining: its entry expires in 1.5 s.
  redis_cli zadd "$(queue_key 'line')" "$SERVER_US" tok >/dev/null
  redis_cli zadd "$(alive_key 'line')" $((SERVER_MS + 1500)) tok >/dev/null
  run -0 rl -w 10 line touch ran
  elapsed=$(($(now_ms) - start))
  echo "elapsed: ${elapsed}ms"
  [ -e ran ]
  # Not before the entry had expired.
  ((elapsed >= 1400))
  queue_gone line
}

@test "a queued --fair waiter is not overtaken while the lock is free" {
  local f
  hold gap
  bg "$RLOCK" --fair -w 30 gap touch "$BATS_TEST_TMPDIR/ran.f"
  f=$BG_PID
  wait_until 10 queue_is 1 gap
  # Freeze the head of the queue, then free the lock: its entry stays alive
  # (10 s), so the lock is free with a live waiter first in line.
  kill -STOP "$f"
  let_go gap
  reaped 0 "$HOLDER_PID"
  key_absent "$(lock_key 'gap')"
  queue_is 1 gap
  run -75 rl -n gap touch ran
  run -75 rl -w 0.3 gap touch ran
  [ ! -e ran ]
  key_absent "$(lock_key 'gap')"
  # The head, once running again, takes its turn.
  kill -CONT "$f"
  reaped 0 "$f" 15
  [ -e "$BATS_TEST_TMPDIR/ran.f" ]
  queue_gone gap
}

@test "status shows a QUEUE column and --json 'waiters' with the number of --fair waiters" {
  hold q
  run -0 --separate-stderr rl status q
  echo "$output"
  [[ ${lines[0]} != *QUEUE* ]]
  run -0 --separate-stderr rl status --json q
  [ "$(json_get <(echo "$output") '[0,"waiters"]')" = 0 ]

  bg "$RLOCK" --fair q true
  wait_until 10 queue_is 1 q
  bg "$RLOCK" --fair q true
  wait_until 10 queue_is 2 q
  run -0 --separate-stderr rl status q
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[0]} =~ ^NAME\ +HOLDER\ +HELD\ FOR\ +TTL\ +FENCE\ +QUEUE\ +COMMAND$ ]]
  [[ ${lines[1]} =~ ^q\ +$me:$HOLDER_PID\ +[^\ ]+\ +[^\ ]+\ +[0-9]+\ +2\ +sh ]]
  run -0 --separate-stderr rl status --json q
  [ "$(json_get <(echo "$output") '[0,"waiters"]')" = 2 ]
  # A lock without waiters shows 0 in the column once another lock has some.
  hold other
  run -0 --separate-stderr rl status
  echo "$output"
  [[ ${lines[0]} == *QUEUE* ]]
  [[ ${lines[1]} =~ ^other\ +$me:[0-9]+\ +[^\ ]+\ +[^\ ]+\ +[0-9]+\ +0\ +sh ]]
  [[ ${lines[2]} =~ ^q\ +$me:[0-9]+\ +[^\ ]+\ +[^\ ]+\ +[0-9]+\ +2\ +sh ]]
}

@test "status counts only live queue entries" {
  server_time
  redis_cli zadd "$(queue_key 'stale')" "$SERVER_US" live "$SERVER_US" dead >/dev/null
  redis_cli zadd "$(alive_key 'stale')" $((SERVER_MS + 60000)) live $((SERVER_MS - 1000)) dead >/dev/null
  run -1 --separate-stderr rl status --json stale
  [ "$(json_get <(echo "$output") '[0,"waiters"]')" = 1 ]
  [ "$(json_get <(echo "$output") '[0,"held"]')" = false ]
}

@test "-v tells a --fair waiter whom it waits for and its place, once, and again when it changes" {
  local a b
  hold vq -t 60s
  bg "$RLOCK" -v --fair vq true
  a=$BG_PID
  local a_err=$BG_ERR
  wait_until 10 queue_is 1 vq
  bg "$RLOCK" -v --fair -w 30 vq true
  b=$BG_PID
  local b_err=$BG_ERR
  wait_until 10 queue_is 2 vq
  wait_until 10 grep -q 'in line' "$a_err"
  wait_until 10 grep -q 'in line' "$b_err"
  local held_by="rlock: waiting for 'vq' held by $me:$HOLDER_PID (sh -c"
  run -0 cat "$a_err"
  echo "$output"
  [[ ${lines[0]} == "$held_by "*"; 1st in line" ]]
  # A leaves; within a refresh (5 s) B learns that it moved up.
  kill -TERM "$a"
  reaped 143 "$a"
  wait_until 10 grep -q '1st in line' "$b_err"
  run -0 cat "$b_err"
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[0]} == "$held_by "*"; 2nd in line" ]]
  [[ ${lines[1]} == "$held_by "*"; 1st in line" ]]
  let_go vq
  reaped 0 "$b" 15
}

@test "5 plain waiters behind a holder all run, one at a time" {
  local d=$BATS_TEST_TMPDIR/cs i pid pids=()
  mkdir "$d"
  echo 0 >"$d/counter"
  : >"$d/overlaps"
  : >"$d/fences"
  # The critical section of tests/lib/contention.bash.
  cat >"$d/cs.sh" <<'EOF'
#!/bin/sh
d=$1
mkdir "$d/inside" 2>/dev/null || echo "enter $RLOCK_FENCE" >>"$d/overlaps"
echo "$RLOCK_FENCE" >>"$d/fences"
n=$(cat "$d/counter")
sleep 0.05
echo $((n + 1)) >"$d/counter"
rmdir "$d/inside" 2>/dev/null || echo "leave $RLOCK_FENCE" >>"$d/overlaps"
EOF
  chmod +x "$d/cs.sh"
  hold plain -t 60s
  for i in 1 2 3 4 5; do
    bg "$RLOCK" -v -t 60s -w 30 plain "$d/cs.sh" "$d"
    pids+=("$BG_PID")
    # Each one is waiting (a 60 s lease: the holder's PTTL and the safety net
    # are far off, so the handoffs below are wake-ups).
    wait_until 10 grep -q "waiting for 'plain'" "$BG_ERR"
  done
  [ "$(cat "$d/counter")" -eq 0 ]
  let_go plain
  reaped 0 "$HOLDER_PID"
  for pid in "${pids[@]}"; do
    reaped 0 "$pid" 30
  done
  echo "overlaps:"
  cat "$d/overlaps"
  [ ! -s "$d/overlaps" ]
  [ "$(cat "$d/counter")" -eq 5 ]
  [ "$(wc -l <"$d/fences")" -eq 5 ]
  awk 'NR > 1 && $1 <= prev { print "fence " $1 " after " prev; bad = 1 }
       { prev = $1 } END { exit bad }' "$d/fences"
  key_absent "$(lock_key 'plain')"
}
