#!/usr/bin/env bats
#
# --shared: shared (read) holders run together; a plain (exclusive) holder
# runs alone; plain and shared runs take turns on one NAME. Writers first: a
# plain waiter holds new shared holders back. Every holder's fence comes
# from the one counter.

# Child scripts are single-quoted on purpose (SC2016); `run` sets status,
# output and stderr (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

# The child of the load test, given its kind (r or w): under flock(1) on
# $dir/mutex, counts the shared and the plain holders running at once; a
# plain holder beside anyone is written to $dir/bad. The most shared holders
# seen at once go to $dir/max.
counting_child() {
  cat <<'EOF'
d=$1 kind=$2
flock "$d/mutex" sh -c '
  d=$1 kind=$2
  r=$(cat "$d/readers") w=$(cat "$d/writers")
  if [ "$kind" = w ]; then
    [ "$r" -eq 0 ] && [ "$w" -eq 0 ] || echo "writer beside $r readers, $w writers" >>"$d/bad"
    echo $((w + 1)) >"$d/writers"
  else
    [ "$w" -eq 0 ] || echo "reader beside a writer" >>"$d/bad"
    echo $((r + 1)) >"$d/readers"
    [ $((r + 1)) -le "$(cat "$d/max")" ] || echo $((r + 1)) >"$d/max"
  fi
' sh "$d" "$kind"
sleep 0.03
flock "$d/mutex" sh -c '
  d=$1 kind=$2
  if [ "$kind" = w ]; then f=writers; else f=readers; fi
  echo $(($(cat "$d/$f") - 1)) >"$d/$f"
' sh "$d" "$kind"
echo "$kind" >>"$d/runs"
EOF
}

# load_run DIR KIND: one run of the load test (run_loads), a reader (r,
# --shared) or a writer (w).
load_run() {
  local opt=()
  [[ $2 == r ]] && opt=(--shared)
  rl "${opt[@]}" -t 5s rw sh -c "$(counting_child)" sh "$1" "$2"
}

@test "6 readers and 2 writers x 20 runs: readers overlap, a writer never overlaps anything" {
  local d=$BATS_TEST_TMPDIR/load
  mkdir "$d"
  echo 0 >"$d/readers"
  echo 0 >"$d/writers"
  echo 0 >"$d/max"
  : >"$d/runs"
  run_loads "$d" 20 r r r w r r r w
  [[ $(grep -c r "$d/runs") == 120 ]]
  [[ $(grep -c w "$d/runs") == 40 ]]
  # Readers did run together (a plain lock for all would pass the above).
  echo "at most $(cat "$d/max") readers at once" >&2
  (($(cat "$d/max") >= 2))
  key_absent "$(lock_key rw)"
  key_absent "$(holders_key rw)"
}

# stamp FILE WHAT: the child that appends "WHAT START_MS END_MS" to FILE
# after sleeping $HOLD seconds.
stamped() {
  printf 's=$(date +%%s%%3N); sleep %s; echo "%s $s $(date +%%s%%3N)" >>%q' \
    "$2" "$3" "$1"
}

# reader_stream LOG NAME COUNT HOLD [OPTION...]: in the background, COUNT
# shared runs of NAME, one every 0.4 s, each holding HOLD seconds and
# stamping LOG ("r START END").
reader_stream() {
  local log=$1 name=$2 count=$3 hold=$4
  shift 4
  (
    for _ in $(seq "$count"); do
      "$RLOCK" "$@" --shared "$name" sh -c "$(stamped "$log" "$hold" r)" &
      sleep 0.4
    done
    wait
  ) 3>&- &
  track $!
}

# writer_waited LOG NAME HOLD: runs a plain NAME holding HOLD seconds
# (stamping LOG "W START END") and prints how long it waited, in ms.
writer_waited() {
  local asked took
  asked=$(now_ms)
  rl -w 30s "$2" sh -c "$(stamped "$1" "$3" W)" || return
  took=$(awk '$1 == "W" { print $2 }' "$1")
  echo "the writer waited $((took - asked)) ms" >&2
  echo $((took - asked))
}

@test "a writer behind a continuous stream of overlapping readers gets in within one reader's hold" {
  local log=$BATS_TEST_TMPDIR/log waited took reader_hold=2
  : >"$log"
  # A reader every 0.4 s for 8 s, each holding 2 s: 5 overlap at any time,
  # and the lock is never free of readers while the stream lasts.
  reader_stream "$log" stream 20 "$reader_hold"
  sleep 1.5
  waited=$(writer_waited "$log" stream 0.5)
  took=$(awk '$1 == "W" { print $2 }' "$log")
  # The readers in when it asked end within their 2 s hold (plus slack for
  # a loaded machine); without writers first it waits out the whole stream.
  ((waited <= reader_hold * 1000 + 1500))
  wait_until 30 key_absent "$(lock_key stream)"
  # Nothing overlapped the writer; readers came in again after it.
  awk -v s="$took" -v e="$(awk '$1 == "W" { print $3 }' "$log")" \
    '$1 == "r" && $2 < e && $3 > s { bad = 1 } END { exit bad }' "$log"
  awk -v e="$(awk '$1 == "W" { print $3 }' "$log")" \
    '$1 == "r" && $2 >= e { after = 1 } END { exit !after }' "$log"
}

@test "a writer that gives up leaves the queue: readers get in at once" {
  bg "$RLOCK" --shared gate sleep 60
  wait_until 10 key_exists "$(lock_key gate)"
  run -75 --separate-stderr rl -w 0.5 gate true
  [[ $stderr == "rlock: gave up waiting for 'gate' after 500ms; held shared by $(id -un)@"* ]]
  run -0 rl -n --shared gate true
  key_absent "$(queue_key gate)"
}

@test "a waiting writer killed with SIGKILL holds readers back only until its place expires" {
  bg "$RLOCK" --shared gate sleep 60
  bg "$RLOCK" --shared gate sleep 60
  wait_until 10 holders_are gate 2
  bg "$RLOCK" gate true
  local writer=$BG_PID
  wait_until 10 key_exists "$(queue_key gate)"
  run -75 --separate-stderr rl -n -v --shared gate true
  [[ $stderr == "rlock: not acquired: 'gate' is held shared by $(id -un)@"*" and 1 more; a waiter queued earlier goes first" ]]
  kill -KILL "$writer"
  # A place lives 10 s unless refreshed.
  wait_until 15 rl -n --shared gate true
}

@test "a --fair stream of readers does not starve a plain run without --fair" {
  local log=$BATS_TEST_TMPDIR/log waited
  : >"$log"
  reader_stream "$log" fstream 12 1.5 --fair
  sleep 1
  waited=$(writer_waited "$log" fstream 0.2)
  ((waited <= 1500 + 1500))
}

@test "a --shared run nested in a --shared run of the same NAME gets in while a writer waits" {
  local out=$BATS_TEST_TMPDIR/nested
  bg "$RLOCK" -s nest sh -c 'sleep 1; "$1" -n -s nest sh -c "echo inner >$2"; echo "inner exit $?" >>"$2.status"' sh "$RLOCK" "$out"
  local outer=$BG_PID
  wait_until 10 key_exists "$(lock_key nest)"
  bg "$RLOCK" nest true
  wait_until 10 key_exists "$(queue_key nest)"
  reaped 0 "$outer" 15
  [[ $(cat "$out") == inner ]]
  [[ $(cat "$out.status") == "inner exit 0" ]]
  # Not nested (another NAME's token): held back like any newcomer.
  bg "$RLOCK" -s nest2 sleep 60
  wait_until 10 key_exists "$(lock_key nest2)"
  bg "$RLOCK" nest2 true
  wait_until 10 key_exists "$(queue_key nest2)"
  RLOCK_NAME=other RLOCK_TOKEN=x run -75 rl -n -s nest2 true
}

@test "--fair: arrival order, consecutive shared waiters admitted together" {
  local log=$BATS_TEST_TMPDIR/log
  : >"$log"
  bg "$RLOCK" fq sleep 1.5
  wait_until 10 key_exists "$(lock_key fq)"
  bg "$RLOCK" --fair --shared fq sh -c "$(stamped "$log" 1 r1)"
  wait_until 10 key_exists "$(queue_key fq)"
  sleep 0.2
  bg "$RLOCK" --fair fq sh -c "$(stamped "$log" 1 W2)"
  sleep 0.2
  bg "$RLOCK" --fair --shared fq sh -c "$(stamped "$log" 1 r3)"
  sleep 0.2
  bg "$RLOCK" --fair --shared fq sh -c "$(stamped "$log" 1 r4)"
  wait_until 30 grep -q '^r4 ' "$log"
  wait_until 30 grep -q '^r3 ' "$log"
  # r1 first; W2 after r1 ended; r3 and r4 after W2, and together.
  awk '
    { start[$1] = $2; end[$1] = $3 }
    END {
      bad = 0
      if (start["W2"] < end["r1"]) { print "W2 overlapped r1"; bad = 1 }
      if (start["r3"] < end["W2"] || start["r4"] < end["W2"]) { print "a reader passed W2"; bad = 1 }
      if (start["r4"] >= end["r3"] || start["r3"] >= end["r4"]) { print "r3 and r4 did not overlap"; bad = 1 }
      exit bad
    }' "$log"
}

@test "fences: a writer's is above every reader's admitted before it" {
  local out=$BATS_TEST_TMPDIR/fences
  bg "$RLOCK" --shared fence sh -c "echo r \$RLOCK_FENCE >>$out; sleep 1"
  bg "$RLOCK" --shared fence sh -c "echo r \$RLOCK_FENCE >>$out; sleep 1"
  wait_until 10 file_has "$out" r
  sleep 0.2
  run -0 rl fence sh -c "echo w \$RLOCK_FENCE >>$out"
  [ "$(grep -c '^r' "$out")" -eq 2 ]
  awk '$1 == "r" && $2 > max { max = $2 } $1 == "w" { w = $2 } END { exit !(w > max) }' "$out"
}

@test "-n: a shared run gets in beside readers, a plain one not (75); readers wait for a plain holder" {
  bg "$RLOCK" --shared turn sleep 60
  local reader=$BG_PID
  wait_until 10 key_exists "$(lock_key turn)"
  run -0 rl -n --shared turn true
  run -75 --separate-stderr rl -n turn true
  [ -z "$stderr" ]
  run -75 --separate-stderr rl -n -v turn true
  [[ $stderr == "rlock: not acquired: 'turn' is held shared by $(id -un)@"* ]]
  kill -TERM "$reader"
  reaped 143 "$reader" 10
  bg "$RLOCK" turn2 sleep 60
  wait_until 10 key_exists "$(lock_key turn2)"
  run -75 rl -n --shared turn2 true
  run -75 rl -w 0.3 -s turn2 true
}

@test "--shared with --limit, with several --url, or against a semaphore: 64, one line, nothing run" {
  run -64 --separate-stderr rl --shared --limit 2 x touch "$BATS_TEST_TMPDIR/ran"
  [ -z "$output" ]
  [ "$stderr" = "rlock: --shared: not with --limit '2': --shared admits any number of holders, --limit N counts them" ]
  # A bad value is named first, whatever it is combined with.
  run -64 --separate-stderr rl -s --limit abc x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: --limit: must be an integer from 1 to 10000, got 'abc'" ]
  run -64 --separate-stderr rl --shared --hold 1m x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: --hold '1m': not with --shared: other holders get in beside the run, so --hold cannot keep copies out" ]
  run -64 --separate-stderr rl -s --once-per 1h x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: --once-per '1h': not with --shared: other holders get in beside the run, so --once-per cannot keep copies out" ]
  run -64 --separate-stderr rl --limit 3 --once-per 1h x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: --once-per '1h': not with --limit 3: other holders get in beside the run, so --once-per cannot keep copies out" ]
  run -64 --separate-stderr rl -s --url redis://127.0.0.1:1 --url redis://127.0.0.1:2 --url redis://127.0.0.1:3 x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: --shared: not with several --url: a quorum of servers keeps one holder per NAME" ]
  run -64 --separate-stderr rl acquire --shared --limit 3 x
  [[ $stderr == "rlock: --shared: not with --limit '3'"* ]]
  run -64 --separate-stderr rl -s -x x touch "$BATS_TEST_TMPDIR/ran"
  [ "$stderr" = "rlock: -s/--shared and -x/-e/--exclusive exclude each other: a hold is shared or exclusive" ]
  [ ! -e "$BATS_TEST_TMPDIR/ran" ]
  [ "$(dbsize)" -eq 0 ]
  bg "$RLOCK" --limit 2 sem sleep 60
  wait_until 10 key_exists "$(lock_key sem)"
  run -64 --separate-stderr rl --shared sem true
  [ "$stderr" = "rlock: lock 'sem' is held with --limit 2; this run asks for --shared: --limit and --shared cannot share a NAME" ]
  bg "$RLOCK" --shared rd sleep 60
  wait_until 10 key_exists "$(lock_key rd)"
  run -64 --separate-stderr rl --limit 2 rd true
  [ "$stderr" = "rlock: lock 'rd' is held with --shared; this run asks for --limit 2: --limit and --shared cannot share a NAME" ]
  # A semaphore of one admits nobody beside the run.
  run -0 rl --limit 1 --hold 10ms x true
}

@test "one reader's hold lost stops that reader only (70); the others keep running" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
  bg "$RLOCK" --shared -t 1s lose sh -c 'echo "$RLOCK_TOKEN" >"$1.tmp" && mv "$1.tmp" "$1"; exec sleep 60' sh "$a"
  local first=$BG_PID
  bg "$RLOCK" --shared -t 1s lose sh -c 'echo "$RLOCK_TOKEN" >"$1.tmp" && mv "$1.tmp" "$1"; exec sleep 60' sh "$b"
  local second=$BG_PID
  wait_until 10 test -s "$a"
  wait_until 10 test -s "$b"
  redis_cli zrem "$(holders_key lose)" "$(cat "$a")" >/dev/null
  reaped 70 "$first" 10
  # Well past its renewals (every 333ms): still running, still holding.
  sleep 1.5
  running "$second"
  [[ $(redis_cli zcard "$(holders_key lose)") == 1 ]]
}

# holders_are NAME N: true when NAME has N shared holders.
holders_are() {
  [[ $(redis_cli zcard "$(holders_key "$1")") == "$2" ]]
}

@test "a plain holder's release lets every waiting reader in, not one" {
  bg "$RLOCK" chain sh -c 'until [ -e go ]; do sleep 0.05; done'
  local holder=$BG_PID
  wait_until 5 key_exists "$(lock_key chain)"
  for _ in 1 2 3; do
    bg "$RLOCK" --shared chain sleep 30
  done
  wait_until 10 blocked_waiters 3
  touch go
  reaped 0 "$holder" 10
  # A release wakes one waiter, and each reader that gets in wakes the
  # next: all are in within a moment, not each at its safety net (5-10 s
  # behind a 30 s lease).
  wait_until 2 holders_are chain 3
}

@test "the waiting event of a run behind readers says shared, and how many" {
  bg "$RLOCK" --shared evs sleep 60
  bg "$RLOCK" --shared evs sleep 60
  wait_until 10 holders_are evs 2
  local ev=$BATS_TEST_TMPDIR/events
  run -75 --separate-stderr rl --events "$ev" -w 0.3 evs true
  [ "$(jq -c 'select(.event == "waiting") | [.shared, .holders]' "$ev")" = '[true,2]' ]
}

@test "status: SHARED n and a row per holder; --json says shared and lists holders" {
  bg "$RLOCK" --shared st sleep 60
  bg "$RLOCK" --shared st sleep 60
  wait_until 10 holders_are st 2
  run -0 --separate-stderr rl status st
  echo "$output" >&2
  [[ ${lines[1]} == "st "*"SHARED 2"*"(--shared)" ]]
  [ "${#lines[@]}" -eq 4 ]
  [[ ${lines[2]} == "  "*"sleep 60" && ${lines[3]} == "  "*"sleep 60" ]]
  run -0 --separate-stderr rl status --json st
  local json=$BATS_TEST_TMPDIR/status.json
  printf '%s\n' "$output" >"$json"
  [[ $(json_get "$json" '[0,"shared"]') == true ]]
  [[ $(json_len "$json" '[0,"holders"]') == 2 ]]
  [[ $(json_type "$json" '[0,"token"]') == null ]]
  [[ $(json_type "$json" '[0,"holders",1,"fence"]') == number ]]
  [[ $(json_has "$json" 0 limit) == false ]]
  [[ $(json_get "$json" '[0,"holders",0]') != *'"slot"'* ]]
}

@test "acquire --shared: two scripts hold it together, a plain acquire waits; check, extend, release per token" {
  local t1 t2
  t1=$(rl acquire --shared -t 30s step)
  t2=$(rl acquire -s -t 30s step)
  [ "$t1" != "$t2" ]
  run -75 rl acquire -n step
  run -0 rl check --token "$t1" step
  run -0 rl extend --token "$t2" -t 60s step
  run -0 rl release --token "$t1" step
  run -75 rl acquire -n step
  run -0 rl release --token "$t2" step
  key_absent "$(lock_key step)"
  run -0 rl acquire -n step
}

@test "release --force breaks every shared hold and says how many; --token of none names them shared" {
  local pids=() p
  for _ in 1 2 3; do
    bg "$RLOCK" --shared -t 2s fx sleep 60
    pids+=("$BG_PID")
  done
  wait_until 10 holders_are fx 3
  run -1 --separate-stderr rl release --token 0123456789abcdef0123456789abcdef fx
  [[ $stderr == *"not held by this token: it is held shared by $(id -un)@"*" (sleep 60) and 2 more" ]]
  run -0 --separate-stderr rl release --force fx
  [[ $stderr == "rlock: broke lock 'fx' held shared by $(id -un)@"*" (sleep 60) and 2 more" ]]
  key_absent "$(lock_key fx)"
  for p in "${pids[@]}"; do
    reaped 70 "$p" 10
  done
}

@test "a plain run nested in a shared run of the same NAME takes no place in the queue: other shared runs still get in" {
  bg "$RLOCK" -s self sh -c '"$1" -w 3s self true; echo "inner $?" >"$2"' sh "$RLOCK" "$BATS_TEST_TMPDIR/inner"
  local outer=$BG_PID
  wait_until 10 key_exists "$(lock_key self)"
  sleep 0.5
  key_absent "$(queue_key self)"
  run -0 rl -n -s self true
  # It waits for its own parent, as with flock: -w ends it.
  reaped 0 "$outer" 15
  [[ $(cat "$BATS_TEST_TMPDIR/inner") == "inner 75" ]]
}

@test "a plain run without --fair behind a plain holder and a --fair queue keeps its turn: later shared runs do not pass it" {
  local log=$BATS_TEST_TMPDIR/log
  : >"$log"
  bg "$RLOCK" turnq sleep 1
  wait_until 10 key_exists "$(lock_key turnq)"
  bg "$RLOCK" -s --fair turnq sh -c "$(stamped "$log" 1.5 F)"
  wait_until 10 key_exists "$(queue_key turnq)"
  bg "$RLOCK" turnq sh -c "$(stamped "$log" 0.2 W)"
  sleep 1.2
  bg "$RLOCK" -s turnq sh -c "$(stamped "$log" 1 s1)"
  wait_until 30 grep -q '^s1 ' "$log"
  wait_until 30 grep -q '^W ' "$log"
  # W came before s1, so it ran first: right after F, before s1.
  awk '{ start[$1] = $2; end[$1] = $3 }
    END { exit !(start["W"] >= end["F"] && start["s1"] >= end["W"]) }' "$log"
}
