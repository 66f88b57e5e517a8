#!/usr/bin/env bats
#
# Locks for shell scripts: rlock acquire, extend, release, check and wait;
# --token and its default $RLOCK_TOKEN (inside `rlock NAME COMMAND` and after
# `eval "$(rlock acquire --env NAME)"`).

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  # A token in the test's own environment would hide the "no token" cases.
  unset RLOCK_TOKEN
  me="$(id -un)@$(hostname)"
}

# hold NAME: NAME held by a background `rlock -t 3s NAME sleep 30` until
# teardown (a short lease, so that it soon notices a broken lock); sets
# HOLDER_PID (rlock's PID).
hold() {
  bg "$RLOCK" -t 3s "$1" sleep 30
  HOLDER_PID=$BG_PID
  wait_until 10 key_exists "$(lock_key "$1")"
}

# take NAME [ACQUIRE OPTION...]: acquire NAME (it must be free); sets TOKEN.
take() {
  local name=$1
  shift
  TOKEN=$(rl acquire "$@" "$name")
  [[ $TOKEN =~ ^[0-9a-f]{32}$ ]] || {
    echo "acquire $name printed '$TOKEN', not a token" >&2
    return 1
  }
}

# field NAME FIELD: a field of NAME's lock hash.
field() {
  redis_cli hget "$(lock_key "$1")" "$2"
}

# hash_of NAME: NAME's lock hash as sorted "field value" lines (HGETALL's
# order is not stable for a hash stored as a hashtable).
hash_of() {
  redis_cli hgetall "$(lock_key "$1")" | paste -d ' ' - - | sort
}

# pttl NAME: PTTL of NAME's lock key.
pttl() {
  redis_cli pttl "$(lock_key "$1")"
}

# one_warning_about NAME: $stderr is one "rlock: ..." line that names NAME.
one_warning_about() {
  [ "${#stderr_lines[@]}" -eq 1 ] || {
    echo "expected one line on stderr, got: '$stderr'"
    return 1
  }
  [[ $stderr == "rlock: "*"'$1'"* ]] || {
    echo "stderr does not name '$1': '$stderr'"
    return 1
  }
}

# ---- acquire ---------------------------------------------------------------

@test "acquire prints a 32-hex token on stdout, takes the lock for 5m, exit 0" {
  local ttl
  run -0 --separate-stderr rl acquire job
  [[ $output =~ ^[0-9a-f]{32}$ ]]
  [ -z "$stderr" ]
  [ "$(field job token)" = "$output" ]
  [ "$(field job ttl_ms)" = 300000 ]
  [ "$(field job renewals)" = 0 ]
  ttl=$(pttl job)
  echo "pttl: $ttl"
  ((ttl > 240000 && ttl <= 300000))
}

@test "acquire -t sets the lease, which is not renewed: it expires by itself" {
  run -0 --separate-stderr rl acquire -t 1s short
  [ "$(field short ttl_ms)" = 1000 ]
  wait_until 10 key_absent "$(lock_key 'short')"
}

@test "acquire records the calling script as the holder (its pid and command line)" {
  printf '%s\n' '"$RLOCK_BIN" acquire "$1" >/dev/null || exit' 'echo "$$"' >caller.sh
  run -0 --separate-stderr env RLOCK_BIN="$RLOCK" timeout 30 bash ./caller.sh mine
  [[ $output =~ ^[0-9]+$ ]]
  [ "$(field mine pid)" = "$output" ]
  [ "$(field mine command)" = "bash ./caller.sh mine" ]
  [ "$(field mine host)" = "$(hostname)" ]
  [ "$(field mine user)" = "$(id -un)" ]
}

@test "acquire --json prints {name, key, token, fence, ttl_ms}" {
  local f=$BATS_TEST_TMPDIR/acquire.json first
  # The fence moves on with every acquisition.
  take js
  first=$(field js fence)
  rl release --token "$TOKEN" js
  run -0 --separate-stderr rl acquire --json -t 90s js
  [ -z "$stderr" ]
  printf '%s' "$output" >"$f"
  [ "${#lines[@]}" -eq 1 ]
  [ "$(jq -c 'keys_unsorted' "$f")" = '["name","key","token","fence","ttl_ms"]' ]
  [ "$(json_get "$f" '["name"]')" = '"js"' ]
  [ "$(json_get "$f" '["key"]')" = "\"$(lock_key js)\"" ]
  [ "$(json_get "$f" '["token"]')" = "\"$(field js token)\"" ]
  [[ $(json_get "$f" '["token"]') =~ ^\"[0-9a-f]{32}\"$ ]]
  (($(json_get "$f" '["fence"]') > first))
  [ "$(json_get "$f" '["fence"]')" = "$(field js fence)" ]
  [ "$(json_get "$f" '["ttl_ms"]')" = 90000 ]
}

@test "acquire --env prints RLOCK_* lines and an export line, ready for eval" {
  local name='it'\''s a $lock "x"'
  run -0 --separate-stderr rl acquire --env "$name"
  echo "$output"
  [ -z "$stderr" ]
  [ "${#lines[@]}" -eq 6 ]
  [[ ${lines[0]} == RLOCK_NAME=* ]]
  [[ ${lines[1]} == RLOCK_KEY=* ]]
  [[ ${lines[2]} =~ ^RLOCK_TOKEN=[0-9a-f]{32}$ ]]
  [[ ${lines[3]} =~ ^RLOCK_FENCE=[0-9]+$ ]]
  # Empty for rlock's own layout, so that one left by an eval of
  # `acquire --compat` does not stay beside this lock's name.
  [ "${lines[4]}" = "RLOCK_COMPAT=''" ]
  [ "${lines[5]}" = 'export RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE RLOCK_COMPAT' ]
  # eval in a fresh shell: the values survive quoting and reach a child.
  run -0 --separate-stderr bash -c 'eval "$1"; sh -c '\''printf "%s\n" "$RLOCK_NAME" "$RLOCK_KEY" "$RLOCK_TOKEN" "$RLOCK_FENCE"'\' _ "$output"
  [ "${lines[0]}" = "$name" ]
  [ "${lines[1]}" = "$(lock_key "$name")" ]
  [ "${lines[2]}" = "$(field "$name" token)" ]
  [ "${lines[3]}" = "$(field "$name" fence)" ]
}

@test "acquire --json --env is a usage error (64)" {
  run -64 --separate-stderr rl acquire --json --env both
  [ -z "$output" ]
  key_absent "$(lock_key 'both')"
}

@test "acquire -n of a held lock exits 75 at once, prints nothing, the holder keeps it" {
  take held
  run -75 --separate-stderr rl acquire -n held
  [ -z "$output" ]
  [ "$(field held token)" = "$TOKEN" ]
}

@test "acquire -E 9 -n of a held lock exits 9" {
  take held
  run -9 --separate-stderr rl acquire -E 9 -n held
  [ -z "$output" ]
}

@test "acquire -w 0.3 of a held lock exits 75 after waiting" {
  take held
  run -75 --separate-stderr rl acquire -w 0.3 held
  [ -z "$output" ]
  [ "$(field held token)" = "$TOKEN" ]
}

@test "acquire -w waits for a release and then takes the lock" {
  local first
  take wq
  first=$TOKEN
  bg "$RLOCK" acquire -w 20 wq
  sleep 0.3
  running "$BG_PID"
  run -0 rl release --token "$first" wq
  reaped 0 "$BG_PID" 20
  run -0 cat "$BG_OUT"
  [[ $output =~ ^[0-9a-f]{32}$ ]]
  [ "$output" != "$first" ]
  [ "$(field wq token)" = "$output" ]
}

@test "acquire --fair takes a free lock, and a --fair waiter queues and gets it" {
  take fair --fair
  bg "$RLOCK" acquire --fair -w 20 fair
  wait_until 10 eval '[[ $(redis_cli zcard "$(queue_key "fair")") == 1 ]]'
  run -0 rl release --token "$TOKEN" fair
  reaped 0 "$BG_PID" 20
  [ "$(field fair token)" = "$(cat "$BG_OUT")" ]
}

# ---- extend ----------------------------------------------------------------

@test "extend -t D: exit 0, the PTTL grows to D" {
  local ttl
  take ext -t 10s
  run -0 --separate-stderr rl extend --token "$TOKEN" -t 60s ext
  [ -z "$output" ]
  ttl=$(pttl ext)
  echo "pttl: $ttl"
  ((ttl > 10000 && ttl <= 60000))
}

@test "extend without -t renews to the TTL the lock was taken with" {
  local ttl
  take ext -t 20s
  # As if most of the lease had run out.
  [ "$(redis_cli pexpire "$(lock_key 'ext')" 1000)" = 1 ]
  run -0 --separate-stderr rl extend --token "$TOKEN" ext
  ttl=$(pttl ext)
  echo "pttl: $ttl"
  ((ttl > 10000 && ttl <= 20000))
  [ "$(field ext renewals)" = 1 ]
}

@test "extend with another token: exit 1, a warning on stderr, the lease unchanged" {
  local ttl
  take ext
  [ "$(redis_cli pexpire "$(lock_key 'ext')" 5000)" = 1 ]
  run -1 --separate-stderr rl extend --token 0123456789abcdef0123456789abcdef -t 60s ext
  [ -z "$output" ]
  one_warning_about ext
  ttl=$(pttl ext)
  ((ttl <= 5000))
  [ "$(field ext token)" = "$TOKEN" ]
  [ "$(field ext renewals)" = 0 ]
}

@test "extend of a free lock exits 1" {
  run -1 --separate-stderr rl extend --token 0123456789abcdef0123456789abcdef free
  one_warning_about free
  key_absent "$(lock_key 'free')"
}

# ---- release ---------------------------------------------------------------

@test "release --token: exit 0 and the lock is free; a second release exits 1" {
  take rel
  run -0 --separate-stderr rl release --token "$TOKEN" rel
  [ -z "$output" ]
  [ -z "$stderr" ]
  key_absent "$(lock_key 'rel')"
  run -1 --separate-stderr rl release --token "$TOKEN" rel
  one_warning_about rel
  [[ $stderr == *"is not held by this token: it is free"* ]]
}

@test "release with another token: exit 1, a warning naming who holds it, the lock stays" {
  take rel
  run -1 --separate-stderr rl release --token 0123456789abcdef0123456789abcdef rel
  [ -z "$output" ]
  one_warning_about rel
  [[ $stderr == *"is not held by this token: it is held by $me:"* ]]
  [ "$(field rel token)" = "$TOKEN" ]
}

@test "release after the lease ran out: exit 1, a warning that the lock is free" {
  take lapsed -t 200ms
  sleep 0.4
  run -1 --separate-stderr rl release --token "$TOKEN" lapsed
  one_warning_about lapsed
  [[ $stderr == *"is not held by this token: it is free (the lease ran out"* ]]
}

@test "release --force breaks anyone's lock and names the holder on stderr" {
  hold busy
  run -0 --separate-stderr rl release --force busy
  [ -z "$output" ]
  [ "$stderr" = "rlock: broke lock 'busy' held by $me:$HOLDER_PID (sleep 30)" ]
  key_absent "$(lock_key 'busy')"
  # The holder finds out at its next renewal.
  reaped 70 "$HOLDER_PID" 20
}

@test "release --force of a lock taken with acquire names the calling script" {
  printf '%s\n' '"$RLOCK_BIN" acquire "$1" >/dev/null || exit' 'echo "$$"' >caller.sh
  local pid
  pid=$(env RLOCK_BIN="$RLOCK" timeout 30 bash ./caller.sh scripted)
  [[ $pid =~ ^[0-9]+$ ]]
  run -0 --separate-stderr rl release --force scripted
  [ "$stderr" = "rlock: broke lock 'scripted' held by $me:$pid (bash ./caller.sh scripted)" ]
  key_absent "$(lock_key 'scripted')"
}

@test "release --force of a free lock exits 1" {
  run -1 --separate-stderr rl release --force free
  [ -z "$output" ]
  one_warning_about free
}

@test "release --force --token is a usage error (64)" {
  take both
  run -64 --separate-stderr rl release --force --token "$TOKEN" both
  [[ $stderr == *--force* ]]
  [ "$(field both token)" = "$TOKEN" ]
}

# ---- check -----------------------------------------------------------------

@test "check: 0 for the holder's token, 1 for another token and for a free lock" {
  take chk
  run -0 --separate-stderr rl check --token "$TOKEN" chk
  [ -z "$output" ]
  run -1 --separate-stderr rl check --token 0123456789abcdef0123456789abcdef chk
  [ -z "$output" ]
  run -1 --separate-stderr rl check --token "$TOKEN" free
  # check changes nothing.
  [ "$(field chk renewals)" = 0 ]
}

@test "check --min-validity: 0 with at least D left, 1 with less" {
  take chk -t 1h
  run -0 rl check --token "$TOKEN" --min-validity 30m chk
  run -1 rl check --token "$TOKEN" --min-validity 2h chk
}

@test "check turns to 1 after release --force" {
  take chk
  run -0 rl check --token "$TOKEN" chk
  run -0 --separate-stderr rl release --force chk
  run -1 rl check --token "$TOKEN" chk
}

@test "check turns to 1 once the lease has expired" {
  take chk -t 500ms
  wait_until 10 key_absent "$(lock_key 'chk')"
  run -1 rl check --token "$TOKEN" chk
}

# ---- $RLOCK_TOKEN ----------------------------------------------------------

@test "\$RLOCK_TOKEN: inside 'rlock NAME COMMAND' check and extend need no --token" {
  run -0 --separate-stderr rl -t 10s job sh -c '
    "$1" check job && echo checked &&
    "$1" extend -t 60s job && echo extended &&
    "$1" check --min-validity 30s job && echo long &&
    [ "$(redis-cli -s "$2" pttl "$RLOCK_KEY")" -gt 30000 ] && echo pttl' _ "$RLOCK" "$REDIS_SOCKET"
  echo "$output"
  echo "$stderr"
  [ "$output" = "$(printf '%s\n' checked extended long pttl)" ]
  key_absent "$(lock_key 'job')"
}

@test "\$RLOCK_TOKEN: after eval acquire --env, check/extend/release need no --token" {
  run -0 --separate-stderr timeout 30 bash -c '
    eval "$("$1" acquire --env -t 10s job)" || exit 9
    "$1" check job && echo checked &&
    "$1" extend -t 60s job && echo extended &&
    "$1" check --min-validity 30s job && echo long &&
    "$1" release job && echo released &&
    { "$1" check job; echo "check after release: $?"; }' _ "$RLOCK"
  echo "$output"
  echo "$stderr"
  [ "$output" = "$(printf '%s\n' checked extended long released 'check after release: 1')" ]
  key_absent "$(lock_key 'job')"
}

@test "\$RLOCK_TOKEN of someone else: release exits 1, --token wins over it" {
  take job
  RLOCK_NAME=job RLOCK_TOKEN=0123456789abcdef0123456789abcdef run -1 --separate-stderr rl release job
  [ "$(field job token)" = "$TOKEN" ]
  RLOCK_NAME=job RLOCK_TOKEN=0123456789abcdef0123456789abcdef run -0 --separate-stderr rl release --token "$TOKEN" job
  key_absent "$(lock_key 'job')"
}

@test "no --token and no \$RLOCK_TOKEN: extend, release, check exit 64 naming --token" {
  local sub
  take job
  for sub in extend release check; do
    run -64 --separate-stderr rl "$sub" job
    echo "$sub: $stderr"
    [ -z "$output" ]
    [[ $stderr == rlock:*--token* ]]
    RLOCK_TOKEN='' run -64 --separate-stderr rl "$sub" job
    [[ $stderr == rlock:*--token* ]]
  done
  [ "$(field job token)" = "$TOKEN" ]
  [ "$(field job renewals)" = 0 ]
}

# ---- wait ------------------------------------------------------------------

@test "wait of a free lock exits 0 at once and writes nothing to redis" {
  run -0 --separate-stderr rl wait -w 5 free
  [ -z "$output" ]
  [ "$(dbsize)" = 0 ]
}

@test "wait blocks until the lock is released, exits 0, and does not take it" {
  local before
  take busy
  before=$(hash_of busy)
  bg "$RLOCK" wait -w 20 busy
  sleep 0.5
  running "$BG_PID"
  # Waiting touched nothing: same hash, no queue.
  [ "$(hash_of busy)" = "$before" ]
  key_absent "$(queue_key 'busy')"
  run -0 rl release --token "$TOKEN" busy
  reaped 0 "$BG_PID" 20
  key_absent "$(lock_key 'busy')"
  # At most the last fence, kept for a second after the acquisition.
  [ "$(redis_cli --scan | grep -cvxF "$(fence_key 'busy')")" = 0 ]
}

@test "wait returns 0 when the holder's lease expires" {
  take busy -t 1s
  run -0 --separate-stderr rl wait -w 20 busy
  key_absent "$(lock_key 'busy')"
}

@test "wait -w 0.5 of a held lock exits 75; the lock is untouched" {
  local before
  take busy
  before=$(hash_of busy)
  run -75 --separate-stderr rl wait -w 0.5 busy
  [ -z "$output" ]
  [ "$(hash_of busy)" = "$before" ]
}

@test "wait -w 0 of a held lock exits 75; -E 9 makes it 9" {
  take busy
  run -75 rl wait -w 0 busy
  run -9 rl wait -E 9 -w 0.2 busy
}
