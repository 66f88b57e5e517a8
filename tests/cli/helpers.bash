# shellcheck shell=bash
#
# Shared helpers for the rlock CLI tests. Load with `load helpers`.
#
# The setup every .bats file shares is defined here: one redis-server per file
# (in $BATS_FILE_TMPDIR), FLUSHALL before each test, and every background
# process started with bg killed afterwards. A file that needs more defines
# its own setup_file/setup/teardown after `load helpers` and calls the
# common_* function from it.
#
# Tests name the Redis keys of a lock only through lock_key and its kin
# below, so that a change of the key layout touches this file alone (and
# child.bats's one test of the layout that RLOCK_KEY shows).

# shellcheck source-path=SCRIPTDIR source=../lib/redis.bash disable=SC1091
source "$BATS_TEST_DIRNAME/../lib/redis.bash"

RLOCK=${RLOCK:-$BATS_TEST_DIRNAME/../../build/rlock}
# Tests run in $BATS_TEST_TMPDIR, so a relative $RLOCK is made absolute.
[[ $RLOCK == /* ]] || RLOCK=$PWD/$RLOCK
# Upper bound for any single rlock invocation; a hang fails, it never blocks.
RL_LIMIT=${RL_LIMIT:-30}

setup_file() { common_setup_file; }
teardown_file() { common_teardown_file; }
setup() { common_setup; }
teardown() { common_teardown; }

# lock_key NAME [PREFIX]: the key of lock NAME (prefix rlock: by default);
# fence_key, queue_key, alive_key, once_key, holders_key: its other keys;
# released_channel: the channel a release is published on; wake_list: the
# list a release pushes a waiter's wake-up onto.
lock_key() { printf '%s{%s}' "${2:-rlock:}" "$1"; }
fence_key() { printf '%s:fence' "$(lock_key "$@")"; }
queue_key() { printf '%s:queue' "$(lock_key "$@")"; }
alive_key() { printf '%s:alive' "$(lock_key "$@")"; }
once_key() { printf '%s:once' "$(lock_key "$@")"; }
holders_key() { printf '%s:holders' "$(lock_key "$@")"; }
released_channel() { printf '%s:released' "$(lock_key "$@")"; }
wake_list() { printf '%s:wake' "$(lock_key "$@")"; }

# run_loads DIR RUNS KIND...: a load test's processes: one loop per KIND in
# the background, each calling `load_run DIR KIND` (the test file defines
# it) RUNS times; a run that fails is noted in DIR/bad. Waits for every loop,
# then fails, with DIR/bad's lines counted on stderr, if any run failed.
run_loads() {
  local dir=$1 runs=$2 kind pids=() pid
  shift 2
  for kind; do
    (
      for _ in $(seq "$runs"); do
        load_run "$dir" "$kind" || echo "a run exited $?" >>"$dir/bad"
      done
    ) 3>&- &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid"
  done
  if [[ -s $dir/bad ]]; then
    sort "$dir/bad" | uniq -c >&2
    return 1
  fi
}

# blocked_waiters N: true when N connections block waiting for a wake-up.
blocked_waiters() {
  [[ $(redis_cli client list | grep -c 'cmd=blpop') == "$1" ]]
}

common_setup_file() {
  local rc=0
  redis_start "$BATS_FILE_TMPDIR/redis" || rc=$?
  if ((rc == 125)); then
    export RLOCK_TEST_SKIP_REDIS=1
  elif ((rc != 0)); then
    return "$rc"
  fi
}

common_teardown_file() {
  redis_stop "$BATS_FILE_TMPDIR/redis"
}

common_setup() {
  if [[ -n ${RLOCK_TEST_SKIP_REDIS:-} ]]; then
    skip "redis-server not found (set CI=true or RLOCK_REQUIRE_REDIS=1 to fail instead)"
  fi
  if [[ ! -x $RLOCK ]]; then
    echo "rlock binary not found or not executable: '$RLOCK' (set RLOCK=/abs/path)" >&2
    return 1
  fi
  # The environment must not point rlock elsewhere.
  unset REDIS_URL RLOCK_PREFIX
  export RLOCK_URL=redis://127.0.0.1:$REDIS_PORT/0
  if [[ -n ${RLOCK_TEST_ACL:-} ]]; then
    # rlock runs as a user with exactly that rule (tests/cli/acl.bash); the
    # tests' own redis_cli stays the default user. The rule's key and channel
    # patterns follow the prefix: tests that use --prefix p: get p:'s too.
    local -a rule
    read -ra rule <<<"$RLOCK_TEST_ACL ~p:* &p:*"
    [[ $(redis_cli acl setuser rlock-acl reset on '>acl-pw' "${rule[@]}") == OK ]] || return 1
    export RLOCK_URL=redis://rlock-acl:acl-pw@127.0.0.1:$REDIS_PORT/0
  fi
  # The servers here have just started: with the default --restart-grace
  # they would grant no lock for 30 s. Tests about the grace set it again.
  export RLOCK_RESTART_GRACE=0
  [[ $(redis_cli flushall) == OK ]] || {
    echo "FLUSHALL failed on $REDIS_SOCKET" >&2
    return 1
  }
  BG_PIDS_FILE=$BATS_TEST_TMPDIR/bg.pids
  : >"$BG_PIDS_FILE"
  cd "$BATS_TEST_TMPDIR" || return 1
}

common_teardown() {
  [[ -n ${BG_PIDS_FILE:-} && -f $BG_PIDS_FILE ]] || return 0
  local pid
  while read -r pid; do
    [[ -n $pid ]] && stop_pid "$pid"
  done <"$BG_PIDS_FILE"
  return 0
}

# rl ARG...: rlock with default signal dispositions and a generous bound.
# `timeout` reports 124 if rlock hangs; otherwise its status passes through.
rl() {
  timeout -k 5 "$RL_LIMIT" env --default-signal "$RLOCK" "$@"
}

# bg CMD [ARG...]: start CMD in the background with default signal
# dispositions (non-interactive shells start background jobs with SIGINT
# and SIGQUIT ignored), stdin from /dev/null and fd 3 closed. Sets BG_PID,
# BG_OUT and BG_ERR (files with its stdout and stderr); teardown kills it.
bg() {
  BG_N=$((${BG_N:-0} + 1))
  BG_OUT=$BATS_TEST_TMPDIR/bg.$BG_N.out
  BG_ERR=$BATS_TEST_TMPDIR/bg.$BG_N.err
  env --default-signal "$@" >"$BG_OUT" 2>"$BG_ERR" </dev/null 3>&- &
  BG_PID=$!
  echo "$BG_PID" >>"$BG_PIDS_FILE"
}

# track PID: have teardown kill PID too (processes we did not start with bg).
track() {
  echo "$1" >>"$BG_PIDS_FILE"
}

# running PID: true while PID exists and is not a zombie.
running() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && ${state:0:1} != Z ]]
}

# stop_pid PID: TERM, then KILL after 5 s, then reap it if it is our child.
stop_pid() {
  local pid=$1 deadline
  if running "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    deadline=$((SECONDS + 5))
    while running "$pid" && ((SECONDS < deadline)); do
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# wait_until SECONDS CMD [ARG...]: poll CMD every 50 ms until it succeeds;
# fails (with a message) when SECONDS pass first.
wait_until() {
  local limit=$1 deadline
  shift
  deadline=$(($(now_ms) + limit * 1000))
  until "$@"; do
    if (($(now_ms) >= deadline)); then
      echo "wait_until: '$*' still false after ${limit}s" >&2
      return 1
    fi
    sleep 0.05
  done
}

# reap PID [SECONDS]: wait (bounded, default 10 s) until background child PID
# exits; returns its exit status, or 255 with a message if it is still running.
reap() {
  local pid=$1 limit=${2:-10}
  if ! wait_until "$limit" not running "$pid"; then
    echo "reap: pid $pid still running after ${limit}s" >&2
    return 255
  fi
  wait "$pid"
}

not() {
  ! "$@"
}

# need_file PATH PACKAGE: skip the test when PATH is missing, except in CI
# (CI=true or RLOCK_REQUIRE_REDIS=1), where `make test` installs PACKAGE
# and a skip would count as a pass: fail there.
need_file() {
  [[ -e $1 ]] && return 0
  if redis_skip_allowed; then
    skip "$1 not found (packaging/install-deps $2)"
  fi
  echo "$1 not found, and CI requires it (packaging/install-deps $2)" >&2
  return 1
}

now_ms() {
  local t
  t=$(date +%s%N)
  echo $((t / 1000000))
}

# key_exists KEY: true when KEY exists in redis.
key_exists() {
  [[ $(redis_cli exists "$1") == 1 ]]
}

# key_absent KEY: true when KEY does not exist in redis. (Use this, not
# `! key_exists`: bats does not fail a test on a negated command.)
key_absent() {
  [[ $(redis_cli exists "$1") == 0 ]]
}

# dbsize: number of keys in db 0.
dbsize() {
  redis_cli dbsize
}

# file_has FILE: true when FILE exists and is not empty.
file_has() {
  [[ -s $1 ]]
}

# closed_port: print a loopback port nobody listens on.
closed_port() {
  local port
  while :; do
    redis_pick_port
    port=$REDIS_RANDOM_PORT
    redis_port_in_use "$port" || break
  done
  echo "$port"
}

# signal_when_ready FILE SIG: in the background, wait (up to 10 s) until FILE
# holds a PID, then send SIG to that PID. The child scripts below write
# their $PPID (rlock) to FILE once their traps are in place.
signal_when_ready() {
  local file=$1 sig=$2
  (
    wait_until 10 file_has "$file" || exit 1
    kill -s "$sig" "$(<"$file")"
  ) >/dev/null 2>"$BATS_TEST_TMPDIR/signaller.err" </dev/null 3>&- &
  track $!
}

# ready_cmd FILE: shell snippet that atomically writes $PPID to FILE.
ready_cmd() {
  # shellcheck disable=SC2016 # $PPID is for the child's shell to expand
  printf 'echo $PPID >"%s.tmp" && mv "%s.tmp" "%s"' "$1" "$1" "$1"
}

# json_get FILE PATH: print the value at PATH (a JSON array such as
# '[0,"owner","pid"]') of the JSON document in FILE, compactly. Uses jq when
# installed, else python3's json module. Fails if FILE is not valid JSON.
json_get() {
  local file=$1 path=$2
  if command -v jq >/dev/null 2>&1; then
    jq -c --argjson p "$path" 'getpath($p)' <"$file"
  else
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for step in json.loads(sys.argv[2]):
    doc = None if doc is None else doc[step]
print(json.dumps(doc, separators=(",", ":")))
' "$file" "$path"
  fi
}

# json_len FILE PATH: length of the array or object at PATH.
json_len() {
  local file=$1 path=$2
  if command -v jq >/dev/null 2>&1; then
    jq --argjson p "$path" 'getpath($p) | length' <"$file"
  else
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for step in json.loads(sys.argv[2]):
    doc = doc[step]
print(len(doc))
' "$file" "$path"
  fi
}

# json_type FILE PATH: null, boolean, number, string, array or object.
json_type() {
  local file=$1 path=$2
  if command -v jq >/dev/null 2>&1; then
    jq -r --argjson p "$path" 'getpath($p) | type' <"$file"
  else
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for step in json.loads(sys.argv[2]):
    doc = None if doc is None else doc[step]
names = {type(None): "null", bool: "boolean", int: "number", float: "number",
         str: "string", list: "array", dict: "object"}
print(names[type(doc)])
' "$file" "$path"
  fi
}

# json_has FILE INDEX FIELD: "true" when element INDEX of the array in FILE
# has FIELD (even if its value is null), else "false".
json_has() {
  local file=$1 index=$2 field=$3
  if command -v jq >/dev/null 2>&1; then
    jq --argjson i "$index" --arg f "$field" '.[$i] | has($f)' <"$file"
  else
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print("true" if sys.argv[3] in doc[int(sys.argv[2])] else "false")
' "$file" "$index" "$field"
  fi
}

# reaped N PID [SECONDS]: reap PID (bounded, see `reap`) and check that it
# exited N. (Not under `run`: a subshell cannot wait for our children.)
reaped() {
  local want=$1 rc=0
  shift
  reap "$@" || rc=$?
  if ((rc != want)); then
    echo "pid $1 exited $rc, expected $want" >&2
    return 1
  fi
}

# own_redis: a redis-server for this test alone, which it may freeze, kill
# and restart; exports REDIS_PORT, REDIS_SOCKET, REDIS_PIDFILE, REDIS_DIR and
# RLOCK_URL (so rl, bg and redis_cli use it). The test's teardown stops it
# (redis_stop "$BATS_TEST_TMPDIR/r").
own_redis() {
  redis_start "$BATS_TEST_TMPDIR/r"
}

# stop_redis: SIGKILL this test's redis-server; the port stays closed.
stop_redis() {
  local pid
  pid=$(<"$REDIS_PIDFILE")
  kill -KILL "$pid"
  wait_until 5 not redis_pid_alive "$pid" || return 1
  rm -f "$REDIS_PIDFILE" "$REDIS_SOCKET"
}

# crash_and_restart_redis: SIGKILL this test's redis-server and start a new
# one on the same port with the same configuration. The new one starts empty
# unless a SAVE wrote dump.rdb into the server's directory.
crash_and_restart_redis() {
  stop_redis || return 1
  redis-server "$REDIS_DIR/redis.conf" >/dev/null 2>&1 || return 1
  redis_await "$REDIS_DIR" "$REDIS_PORT"
}

# start_proxy [PORT]: a relay (tests/lib/proxy.py) on a port the kernel
# picks, to PORT (default: the test's redis-server); sets PROXY_PORT.
# proxy_control DELAY FROZEN RESETS steers it.
start_proxy() {
  echo 0 0 0 >"$BATS_TEST_TMPDIR/proxy.control"
  bg python3 "$BATS_TEST_DIRNAME/../lib/proxy.py" 127.0.0.1 0 \
    "tcp:127.0.0.1:${1:-$REDIS_PORT}" "$BATS_TEST_TMPDIR/proxy.control"
  wait_until 20 grep -q ready "$BG_OUT" || {
    cat "$BG_ERR" >&2
    false
  }
  export PROXY_PORT
  PROXY_PORT=$(awk '/^ready/ { print $2 }' "$BG_OUT")
}
# proxy_control DELAY FROZEN GEN: sets the proxy's control and waits until
# the proxy has it in force (it copies it to proxy.control.applied), so that
# what the test does next already meets it.
proxy_control() {
  echo "$*" >"$BATS_TEST_TMPDIR/proxy.control.tmp"
  mv "$BATS_TEST_TMPDIR/proxy.control.tmp" "$BATS_TEST_TMPDIR/proxy.control"
  wait_until 10 cmp -s "$BATS_TEST_TMPDIR/proxy.control" \
    "$BATS_TEST_TMPDIR/proxy.control.applied"
}
