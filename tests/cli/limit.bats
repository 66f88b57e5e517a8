#!/usr/bin/env bats
#
# --limit N: a semaphore of N holders, each an ordinary run with its own
# token, lease, renewer, fence and loss handling, and a slot 0..N-1 of its
# own ($RLOCK_SLOT). The limit is part of the lock.

# Child scripts are single-quoted on purpose (SC2016); `run` sets status,
# output and stderr (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

# The child of the load test: under flock(1) on $dir/mutex, counts the
# holders running at once and the slots they use; a count over the limit or
# a slot in use twice or outside 0..2 is written to $dir/bad.
counting_child() {
  cat <<'EOF'
d=$1
flock "$d/mutex" sh -c '
  d=$1
  n=$(($(cat "$d/count") + 1))
  echo "$n" >"$d/count"
  [ "$n" -le 3 ] || echo "$n at once" >>"$d/bad"
  [ "$n" -le "$(cat "$d/max")" ] || echo "$n" >"$d/max"
  case $RLOCK_SLOT in 0 | 1 | 2) ;; *) echo "slot $RLOCK_SLOT" >>"$d/bad" ;; esac
  if grep -qx "$RLOCK_SLOT" "$d/slots"; then echo "slot $RLOCK_SLOT twice" >>"$d/bad"; fi
  echo "$RLOCK_SLOT" >>"$d/slots"
' sh "$d"
sleep 0.02
flock "$d/mutex" sh -c '
  d=$1
  echo $(($(cat "$d/count") - 1)) >"$d/count"
  grep -vx "$RLOCK_SLOT" "$d/slots" >"$d/slots.new" || true
  mv "$d/slots.new" "$d/slots"
' sh "$d"
echo run >>"$d/runs"
EOF
}

# load_run DIR KIND: one run of the load test (run_loads).
load_run() {
  rl --limit 3 -t 5s sem sh -c "$(counting_child)" sh "$1"
}

@test "--limit 3: 8 processes x 25 runs, never more than 3 at once, slots distinct, every run done" {
  command -v flock >/dev/null || skip "flock(1) not installed"
  local d=$BATS_TEST_TMPDIR/load
  mkdir "$d"
  echo 0 >"$d/count"
  echo 0 >"$d/max"
  : >"$d/slots"
  : >"$d/runs"
  run_loads "$d" 25 1 2 3 4 5 6 7 8
  [[ $(wc -l <"$d/runs") == 200 ]]
  # Contended: more than one held at once (a limit of 1 would pass above).
  echo "at most $(cat "$d/max") at once" >&2
  (($(cat "$d/max") >= 2))
  key_absent "$(lock_key 'sem')"
  key_absent "$(holders_key 'sem')"
}

# holder N FILE: start `rlock --limit N -t 1s sem` in the background whose
# child writes "$RLOCK_SLOT $RLOCK_TOKEN" to FILE, then runs until killed.
holder() {
  bg "$RLOCK" --limit "$1" -t 1s sem sh -c \
    'echo "$RLOCK_SLOT $RLOCK_TOKEN $RLOCK_FENCE" >"$1.tmp" && mv "$1.tmp" "$1"; while :; do sleep 0.1; done' \
    sh "$2"
  wait_until 10 file_has "$2"
}

@test "each holder gets the lowest free slot, its own token and a higher fence" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b c=$BATS_TEST_TMPDIR/c
  holder 3 "$a"
  local first=$BG_PID
  holder 3 "$b"
  local slot_a token_a fence_a slot_b token_b fence_b
  read -r slot_a token_a fence_a <"$a"
  read -r slot_b token_b fence_b <"$b"
  [[ $slot_a == 0 && $slot_b == 1 ]]
  [[ $token_a != "$token_b" ]]
  ((fence_b > fence_a))
  [[ $(redis_cli zcard "$(holders_key 'sem')") == 2 ]]
  # Slot 0 comes free (released by its token from outside, as `rlock
  # release` does); the next holder takes it, not slot 2.
  run rl release --token "$token_a" sem
  ((status == 0))
  run rl release --token "$token_a" sem
  ((status == 1))
  holder 3 "$c"
  local slot_c
  read -r slot_c _ <"$c"
  [[ $slot_c == 0 ]]
  reaped 70 "$first" 10
}

@test "one holder's lease lost stops that holder only (70); the others keep running" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b c=$BATS_TEST_TMPDIR/c
  holder 3 "$a"
  local first=$BG_PID
  holder 3 "$b"
  local second=$BG_PID second_err=$BG_ERR
  holder 3 "$c"
  local third=$BG_PID
  local token_b
  read -r _ token_b _ <"$b"
  redis_cli zrem "$(holders_key 'sem')" "$token_b" >/dev/null
  reaped 70 "$second" 10
  grep -q "lost lock 'sem'" "$second_err"
  # Well past their renewals (every 333ms): still running, still holding.
  sleep 1.5
  running "$first"
  running "$third"
  [[ $(redis_cli zcard "$(holders_key 'sem')") == 2 ]]
  kill -TERM "$first" "$third"
  reaped 143 "$first" 10
  reaped 143 "$third" 10
}

@test "a holder whose rlock is stopped past its TTL loses its permit only" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
  holder 2 "$a"
  local first=$BG_PID
  holder 2 "$b"
  local second=$BG_PID
  kill -STOP "$second"
  sleep 1.5
  # Its permit came back by itself: another holder gets in.
  run rl --limit 2 -n sem true
  ((status == 0))
  kill -CONT "$second"
  reaped 70 "$second" 10
  running "$first"
}

@test "a SIGKILLed holder's permit comes back within its TTL" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
  holder 2 "$a"
  holder 2 "$b"
  local killed=$BG_PID
  run rl --limit 2 -n sem true
  ((status == 75))
  kill -KILL "$killed"
  local waited
  waited=$(acquired_after_ms --limit 2 -w 5s sem true)
  echo "waited ${waited}ms for a 1s lease" >&2
  # Within the 1s lease plus scheduling on a loaded machine; a leaked
  # permit would keep it waiting the whole -w 5s (and exit 75).
  ((waited < 3000))
}

# acquired_after_ms ARG...: runs `rl ARG...`, which must exit 0, and prints
# how long it took, in ms.
acquired_after_ms() {
  local start
  start=$(now_ms)
  rl "$@" >/dev/null || return
  echo $(($(now_ms) - start))
}

@test "-n and -w on a full semaphore: 75, naming a holder" {
  local a=$BATS_TEST_TMPDIR/a
  holder 1 "$a"
  run --separate-stderr rl --limit 1 -n sem true
  ((status == 75))
  [[ -z $output ]]
  run --separate-stderr rl --limit 1 -w 300ms sem true
  ((status == 75))
  [[ $stderr == *"gave up waiting for 'sem'"*"held by "*"@"*":"* ]]
}

@test "a release wakes a waiter at once" {
  bg "$RLOCK" --limit 1 -t 30s sem sleep 1
  wait_until 5 key_exists "$(holders_key 'sem')"
  local waited
  waited=$(acquired_after_ms --limit 1 -w 10s sem true)
  echo "waited ${waited}ms" >&2
  # Woken by the release, not by the 10s safety net of a 30s lease.
  ((waited < 3000))
}

@test "the limit is part of the lock: another limit, or none, is 64 both ways" {
  local a=$BATS_TEST_TMPDIR/a
  holder 3 "$a"
  run --separate-stderr rl -n sem true
  ((status == 64))
  [[ -z $output ]]
  [[ $stderr == "rlock: lock 'sem' is held with --limit 3; this run asks for no --limit (a plain lock)"* ]]
  ((${#stderr_lines[@]} == 1))
  # Not waited for either: refused at once.
  run --separate-stderr rl --limit 2 sem true
  ((status == 64))
  [[ $stderr == *"held with --limit 3; this run asks for --limit 2"* ]]
  bg "$RLOCK" plain sleep 30
  wait_until 5 key_exists "$(lock_key 'plain')"
  run --separate-stderr rl --limit 2 -w 5s plain true
  ((status == 64))
  [[ $stderr == *"'plain' is held with no --limit (a plain lock); this run asks for --limit 2"* ]]
}

@test "once its holders are gone, a NAME takes any limit again" {
  run rl --limit 2 sem true
  ((status == 0))
  run rl sem true
  ((status == 0))
  run rl --limit 5 sem true
  ((status == 0))
  key_absent "$(lock_key 'sem')"
}

@test "bad --limit values: 64, one line naming the option and value, nothing on stdout" {
  local value
  for value in 0 -1 x 1.5 '' 10001; do
    run --separate-stderr rl --limit "$value" n true
    ((status == 64))
    [[ -z $output ]]
    ((${#stderr_lines[@]} == 1))
    [[ $stderr == "rlock: --limit"*"'$value'"* ]]
  done
}

@test "--limit with several --url (a quorum) is 64: N permits over a majority is unsound" {
  # Nothing is asked of the servers: two of them need not be up.
  run --separate-stderr rl --limit 2 --url "$RLOCK_URL" \
    --url "redis://127.0.0.1:$(closed_port)" \
    --url "redis://127.0.0.1:$(closed_port)" n true
  ((status == 64))
  [[ -z $output ]]
  [[ $stderr == "rlock: --limit: not with several --url"*"unsound"* ]]
}

@test "check and extend work on a holder's own token" {
  run --separate-stderr rl --limit 2 -t 5s sem sh -c '
    "$RLOCK" check sem && ! "$RLOCK" check --min-validity 20s sem &&
      "$RLOCK" extend -t 1m sem && "$RLOCK" check --min-validity 50s sem'
  echo "$stderr" >&2
  ((status == 0))
}

@test "status: HELD 2/3 and a row per holder; --json adds limit and holders, a plain lock's fields unchanged" {
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
  holder 3 "$a"
  holder 3 "$b"
  local token_a fence_a token_b
  read -r _ token_a fence_a <"$a"
  read -r _ token_b _ <"$b"
  bg "$RLOCK" plain sleep 30
  wait_until 5 key_exists "$(lock_key 'plain')"
  run --separate-stderr rl status
  ((status == 0))
  echo "$output" >&2
  [[ $output == *$'\nsem '*'HELD 2/3'*'(--limit 3)'* ]]
  [[ $output == *$'\n  0 '"${token_a:0:12}"*"$fence_a"*'sh -c'* ]]
  [[ $output == *$'\n  1 '"${token_b:0:12}"* ]]
  run --separate-stderr rl status --json sem plain
  ((status == 0))
  local json=$BATS_TEST_TMPDIR/status.json
  printf '%s\n' "$output" >"$json"
  [[ $(json_get "$json" '[0,"limit"]') == 3 ]]
  [[ $(json_len "$json" '[0,"holders"]') == 2 ]]
  [[ $(json_get "$json" '[0,"holders",0,"slot"]') == 0 ]]
  [[ $(json_get "$json" '[0,"holders",0,"token"]') == "\"$token_a\"" ]]
  [[ $(json_get "$json" '[0,"holders",0,"fence"]') == "$fence_a" ]]
  [[ $(json_type "$json" '[0,"holders",1,"ttl_ms"]') == number ]]
  [[ $(json_get "$json" '[0,"holders",1,"owner","user"]') == "\"$(id -un)\"" ]]
  [[ $(json_get "$json" '[0,"token"]') == null ]]
  # The plain lock: today's fields, and neither limit nor holders.
  [[ $(json_type "$json" '[1,"token"]') == string ]]
  local plain
  plain=$(json_get "$json" '[1]')
  [[ $plain != *'"limit"'* && $plain != *'"holders"'* ]]
}

# zcard_is KEY N: true when the sorted set KEY has N members.
zcard_is() {
  [[ $(redis_cli zcard "$1") == "$2" ]]
}

@test "permits that come free together go to as many waiters" {
  for _ in 1 2; do
    bg "$RLOCK" --limit 2 pair sh -c 'until [ -e go ]; do sleep 0.05; done'
  done
  wait_until 10 zcard_is "$(holders_key pair)" 2
  for _ in 1 2; do
    bg "$RLOCK" --limit 2 pair sleep 30
  done
  wait_until 10 blocked_waiters 2
  touch go
  # Both within a moment, not the second at its safety net (5-10 s behind
  # a 30 s lease): a release wakes one waiter, and a waiter that gets in
  # while a permit is left wakes another.
  wait_until 2 blocked_waiters 0
  wait_until 2 zcard_is "$(holders_key pair)" 2
}

@test "--fair with --limit: waiters get permits in arrival order" {
  local order=$BATS_TEST_TMPDIR/order
  : >"$order"
  bg "$RLOCK" --limit 2 sem sleep 1
  bg "$RLOCK" --limit 2 sem sleep 1
  wait_until 5 zcard_is "$(holders_key 'sem')" 2
  local waiters=() w
  for w in w1 w2 w3 w4; do
    bg "$RLOCK" --fair --limit 2 -w 20s sem sh -c \
      "echo \"\$RLOCK_FENCE $w\" >>'$order'; sleep 0.3"
    waiters+=("$BG_PID")
    wait_until 5 zcard_is "$(queue_key 'sem')" "${#waiters[@]}"
  done
  for w in "${waiters[@]}"; do
    reaped 0 "$w" 20
  done
  # By fence, the order of the acquisitions (two holders' lines may be
  # written the other way round).
  cat "$order" >&2
  [[ $(sort -n "$order" | cut -d' ' -f2 | tr '\n' ' ') == "w1 w2 w3 w4 " ]]
}

@test "acquire --limit: a permit for a script, its slot in --json and --env; the limit is part of the lock" {
  run --separate-stderr rl acquire --limit 2 --json sem
  ((status == 0))
  local json=$BATS_TEST_TMPDIR/a.json
  printf '%s\n' "$output" >"$json"
  [[ $(json_get "$json" '["slot"]') == 0 ]]
  local token
  token=$(json_get "$json" '["token"]')
  token=${token//\"/}
  run --separate-stderr rl acquire --limit 2 --env sem
  ((status == 0))
  [[ $output == *$'\nRLOCK_SLOT=1\n'* ]]
  run rl acquire --limit 2 -n sem
  ((status == 75))
  run --separate-stderr rl acquire -n sem
  ((status == 64))
  [[ $stderr == *"held with --limit 2; this acquire asks for no --limit"* ]]
  run rl release --token "$token" sem
  ((status == 0))
  run --separate-stderr rl acquire --limit 2 sem
  ((status == 0))
  run --separate-stderr rl acquire --limit 0 sem
  ((status == 64))
  [[ $stderr == "rlock: --limit: must be an integer from 1 to 10000, got '0'" ]]
}
