#!/usr/bin/env bats
#
# Watching locks: --events JSON lines, the -v "waiting for" line, and
# rlock status (table, --wide, --match, --json against planted locks and
# golden files; --watch under tmux).

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  me="$(id -un)@$(hostname)"
  GOLDEN=$BATS_TEST_DIRNAME/golden
}
teardown() {
  if [[ -n ${TMUX_SOCK:-} ]]; then
    tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
  fi
  common_teardown
}

# The command of `hold`'s child, as rlock records it.
HOLD_COMMAND="sh -c 'until [ -e go ]; do sleep 0.02; done'"

# hold NAME [RLOCK OPTION...]: NAME held by a background rlock whose child
# runs until the file "go" appears in the test's directory (`touch go`);
# sets HOLDER_PID (rlock's PID).
hold() {
  local name=$1
  shift
  bg "$RLOCK" "$@" "$name" sh -c 'until [ -e go ]; do sleep 0.02; done'
  HOLDER_PID=$BG_PID
  wait_until 10 key_exists "$(lock_key "$name")"
}

# valid_events FILE NAME: every line of FILE is a JSON object with the
# fields event, name (NAME), mono_ms and time; mono_ms never goes back.
valid_events() {
  local file=$1 name=$2 line n=0 last=0 mono
  [[ -s $file ]] || {
    echo "no events in $file" >&2
    return 1
  }
  while IFS= read -r line; do
    n=$((n + 1))
    jq -e --arg name "$name" '
      type == "object"
      and (.event | type) == "string"
      and .name == $name
      and (.mono_ms | type) == "number"
      and (.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))
    ' <<<"$line" >/dev/null || {
      echo "line $n is not a valid event: '$line'" >&2
      return 1
    }
    mono=$(jq '.mono_ms' <<<"$line")
    ((mono >= last)) || {
      echo "line $n: mono_ms went back ($last -> $mono)" >&2
      return 1
    }
    last=$mono
  done <"$file"
}

# events_of FILE: the event names in FILE, one per line.
events_of() {
  jq -r '.event' "$1"
}

# plant NAME FENCE HOST PID USER RENEWALS COMMAND: a lock hash as rlock writes
# it, acquired 2001-09-09T01:46:40Z, with no expiry (TTL "none").
plant() {
  local token
  token=$(printf '%s' "$1" | md5sum | cut -c1-32)
  redis_cli hset "$(lock_key "$1")" token "$token" fence "$2" host "$3" pid "$4" \
    user "$5" command "$7" acquired_ms 1000000000000 ttl_ms 30000 \
    renewals "$6" >/dev/null
}

# plant_all: the fixed set of locks the golden files show, planted out of
# order, with keys around them that are not locks.
plant_all() {
  plant deploy-web 7 web1 4242 alice 3 \
    './deploy.sh --env prod --service web --verbose --timeout 600 --notify ops@example.com'
  plant backup 1 db1 1 root 41 'pg_dump -Fc -f /backup/db.dump db'
  plant 'cache warm' 19 cache-03.example.com 31337 www-data 0 'curl -s http://localhost/warm'
  plant deploy-api 12 api2 99 bob 0 './deploy.sh api'
  redis_cli set "$(fence_key 'backup')" 1 >/dev/null
  redis_cli set "$(once_key 'deploy-web')" 5 >/dev/null
  redis_cli hset 'other:{elsewhere}' token x >/dev/null
}

# normalized: $output with the HELD FOR values (hours since 2001) fixed.
# They have 6-digit hours (until 2115), so the column's width never changes.
normalized() {
  sed -E 's/ [0-9]{6}h[0-9]{2}m / NNNNNNhNNm /' <<<"$output"
}

# golden FILE: normalized $output equals the golden FILE (shows a diff).
golden() {
  diff -u "$GOLDEN/$1" <(normalized)
}

# fits COLUMNS: every line of $output is at most COLUMNS wide.
fits() {
  local line
  for line in "${lines[@]}"; do
    ((${#line} <= $1)) || {
      echo "line longer than $1 columns: '$line'"
      return 1
    }
  done
}

# ---- --events --------------------------------------------------------------

@test "--events FILE: acquired, renewed, released, one JSON object per line" {
  local ev=$BATS_TEST_TMPDIR/events event
  run -0 --separate-stderr rl --events "$ev" -t 300ms evlock sleep 0.5
  cat "$ev"
  valid_events "$ev" evlock
  run -0 events_of "$ev"
  [ "${lines[0]}" = acquired ]
  [ "${lines[-1]}" = released ]
  [ "${lines[1]}" = renewed ]
  # Nothing but renewals in between.
  for event in "${lines[@]:1:${#lines[@]}-2}"; do
    [ "$event" = renewed ]
  done
  [ "$(jq -c 'select(.event == "acquired") | [.fence > 1, .waited_ms >= 0]' "$ev")" = '[true,true]' ]
  [ "$(jq -c 'select(.event == "renewed") | .ttl_ms' "$ev" | sort -u)" = 300 ]
  [ "$(jq -c 'select(.event == "released") | .held_ms >= 500' "$ev")" = true ]
}

@test "--events - writes the JSON lines to stderr; stdout is the child's" {
  run -0 --separate-stderr rl --events - evlock echo out
  [ "$output" = out ]
  printf '%s\n' "$stderr" >events
  valid_events events evlock
  [ "$(events_of events | tr '\n' ' ')" = 'acquired released ' ]
}

@test "--events: lost when the key is deleted from outside" {
  local ev=$BATS_TEST_TMPDIR/events ready=$BATS_TEST_TMPDIR/ready
  (
    wait_until 10 file_has "$ready" && redis_cli del "$(lock_key 'evlock')" >/dev/null
  ) 3>&- &
  track $!
  run -70 --separate-stderr rl --events "$ev" -t 1s evlock sh -c \
    "trap 'exit 0' TERM; $(ready_cmd "$ready"); while :; do sleep 0.1; done"
  cat "$ev"
  valid_events "$ev" evlock
  [ "$(events_of "$ev" | head -n 1)" = acquired ]
  [ "$(events_of "$ev" | grep -c '^lost$')" -eq 1 ]
  [ "$(events_of "$ev" | grep -c '^released$')" -eq 0 ]
  [ "$(jq -r 'select(.event == "lost") | .reason | type' "$ev")" = string ]
}

@test "--events: waiting when it had to wait, then acquired and released" {
  local ev=$BATS_TEST_TMPDIR/events
  hold evlock
  bg "$RLOCK" --events "$ev" -w 20 evlock true
  wait_until 10 file_has "$ev"
  touch go
  reaped 0 "$HOLDER_PID" 20
  reaped 0 "$BG_PID" 20
  cat "$ev"
  valid_events "$ev" evlock
  [ "$(events_of "$ev" | tr '\n' ' ')" = 'waiting acquired released ' ]
  [ "$(jq -r 'select(.event == "waiting") | .holder' "$ev")" = "$me:$HOLDER_PID" ]
  [ "$(jq -r 'select(.event == "waiting") | .command' "$ev")" = "$HOLD_COMMAND" ]
  [ "$(jq -c 'select(.event == "waiting") | [.shared, .holders]' "$ev")" = '[false,1]' ]
  [ "$(jq -r 'select(.event == "acquired") | .waited_ms > 0' "$ev")" = true ]
}

@test "--events to a file that cannot be opened is a usage error (64); nothing runs" {
  run -64 --separate-stderr rl --events "$BATS_TEST_TMPDIR/no/such/dir/ev" evlock touch ran
  [[ $stderr == rlock:*--events* ]]
  [ ! -e ran ]
  key_absent "$(lock_key 'evlock')"
}

# ---- -v --------------------------------------------------------------------

@test "-v while waiting says whom it waits for, once (not once per retry)" {
  local err
  # A 300 ms lease: the waiter looks again at least every ~100 ms.
  hold busy -t 300ms
  bg "$RLOCK" -v -w 20 busy true
  err=$BG_ERR
  wait_until 10 grep -q 'waiting for' "$err"
  # Let it retry many times.
  sleep 1
  touch go
  reaped 0 "$HOLDER_PID" 20
  reaped 0 "$BG_PID" 20
  cat "$err"
  [ "$(grep -c 'waiting for' "$err")" -eq 1 ]
  run -0 grep 'waiting for' "$err"
  [[ $output == "rlock: waiting for 'busy' held by $me:$HOLDER_PID ($HOLD_COMMAND), "* ]]
  [[ ${output##*, } =~ ^([0-9]+ms|[0-9]+\.[0-9]s|[0-9]+m[0-9]{2}s)$ ]]
}

# ---- status ----------------------------------------------------------------

@test "status: the table of planted locks, sorted, cut to 80 columns (golden)" {
  plant_all
  run -0 --separate-stderr rl status
  echo "$output"
  [ -z "$stderr" ]
  golden status.txt
  fits 80
  # The long command was cut, not wrapped.
  [ "${#lines[@]}" -eq 5 ]
  [[ ${lines[4]} == deploy-web*... ]]
}

@test "status --wide: full COMMAND column (golden)" {
  plant_all
  run -0 --separate-stderr rl status --wide
  echo "$output"
  golden status-wide.txt
  # Nothing is cut: neither HOLDER nor COMMAND.
  [[ ${lines[2]} == *' www-data@cache-03.example.com:31337 '* ]]
  [[ ${lines[4]} == *' ./deploy.sh --env prod --service web --verbose --timeout 600 --notify ops@example.com' ]]
}

@test "status --match 'deploy-*' filters the listing by glob (golden)" {
  plant_all
  run -0 --separate-stderr rl status --match 'deploy-*'
  echo "$output"
  golden status-match.txt
}

@test "status NAME of a planted lock: TTL none, and a free one" {
  plant_all
  run -1 --separate-stderr rl status backup gone
  echo "$output"
  golden status-names.txt
}

@test "status --json: renewals and waiters, sorted (golden, valid JSON)" {
  local f=$BATS_TEST_TMPDIR/status.json
  plant_all
  # One live waiter in deploy-api's --fair queue.
  redis_cli zadd "$(alive_key 'deploy-api')" 9999999999999 0123456789abcdef0123456789abcdef >/dev/null
  run -0 --separate-stderr rl status --json
  printf '%s\n' "$output" >"$f"
  jq -e 'type == "array" and length == 4' "$f" >/dev/null
  [ "$(jq -c '[.[].name]' "$f")" = '["backup","cache warm","deploy-api","deploy-web"]' ]
  [ "$(jq -c '[.[].renewals]' "$f")" = '[41,0,0,3]' ]
  [ "$(jq -c '[.[].waiters]' "$f")" = '[0,0,1,0]' ]
  diff -u "$GOLDEN/status.json" "$f"
}

@test "status --json --match 'deploy-*' lists only the matching locks" {
  local f=$BATS_TEST_TMPDIR/status.json
  plant_all
  run -0 --separate-stderr rl status --json --match 'deploy-*'
  printf '%s\n' "$output" >"$f"
  [ "$(jq -c '[.[].name]' "$f")" = '["deploy-api","deploy-web"]' ]
}

@test "status with nothing held: a clear line on stderr, nothing on stdout, exit 0" {
  redis_cli hset 'other:{elsewhere}' token x >/dev/null
  run -0 --separate-stderr rl status
  [ -z "$output" ]
  [ "$stderr" = "rlock: no locks held under prefix 'rlock:'" ]
  plant_all
  run -0 --separate-stderr rl status --match 'nothing-*'
  [ -z "$output" ]
  [ "$stderr" = "rlock: no locks held under prefix 'rlock:' matching 'nothing-*'" ]
}

@test "status --json with --wide or --watch, and --match with a NAME, are usage errors (64)" {
  plant_all
  run -64 --separate-stderr rl status --json --wide
  [ -z "$output" ]
  [[ $stderr == rlock:*--json*--wide* ]]
  run -64 --separate-stderr rl status --json --watch
  [ -z "$output" ]
  [[ $stderr == rlock:*--json*--watch* ]]
  run -64 --separate-stderr rl status --match 'deploy-*' backup
  [ -z "$output" ]
  [[ $stderr == rlock:*--match* ]]
}

# ---- status --watch --------------------------------------------------------

# screen: the tmux pane's text.
screen() {
  tmux -S "$TMUX_SOCK" capture-pane -p -t watch
}

# screen_has TEXT...: the pane shows every TEXT.
screen_has() {
  local text content
  content=$(screen) || return 1
  for text in "$@"; do
    [[ $content == *"$text"* ]] || return 1
  done
}

@test "status --watch redraws in a terminal until C-c, then exits 0" {
  local cmd rc=$BATS_TEST_TMPDIR/watch.rc
  need_file /usr/bin/tmux tmux
  TMUX_SOCK=$BATS_TEST_TMPDIR/tmux.sock
  plant backup 1 db1 1 root 41 'pg_dump -Fc db'
  # bash writes rlock's exit status to a file. (Not remain-on-exit and
  # #{pane_dead_status}: tmux 3.3a can leave the exited pane process
  # unreaped, with no status, for good.) On C-c bash waits for rlock and
  # goes on when rlock exits normally.
  printf -v cmd 'exec env RLOCK_URL=%q bash -c %q _ %q %q' "$RLOCK_URL" \
    '"$1" status --watch -i 1s; echo "$?" >"$2.tmp" && mv "$2.tmp" "$2"' \
    "$RLOCK" "$rc"
  # The tmux server must not keep bats' fd 3 open.
  TERM=xterm tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s watch -x 100 -y 30 "$cmd" 3>&-
  track "$(tmux -S "$TMUX_SOCK" display -p -t watch '#{pid}')"
  wait_until 10 screen_has 'Every 1.0s: rlock status' 'NAME' 'HOLDER' 'backup' 'root@db1:1' 'pg_dump -Fc db'
  screen
  run -0 screen
  [[ ${lines[0]} =~ ^Every\ 1\.0s:\ rlock\ status\ +[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}:[0-9]{2}$ ]]
  # A new lock shows up at a later redraw.
  plant zz-new 2 web9 77 carol 0 'make release'
  wait_until 10 screen_has 'zz-new' 'carol@web9:77' 'make release' 'backup'
  screen
  [ ! -e "$rc" ]
  tmux -S "$TMUX_SOCK" send-keys -t watch C-c
  wait_until 10 file_has "$rc"
  [ "$(cat "$rc")" = 0 ]
}
