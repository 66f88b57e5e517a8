#!/usr/bin/env bats
#
# rlock status: the table, --json, exit codes.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  me="$(id -un)@$(hostname)"
}

# hold NAME [RLOCK OPTION...]: NAME held by a background `rlock NAME sleep 30`
# until teardown; sets HOLDER_PID (rlock's PID).
hold() {
  local name=$1 prefix=rlock:
  shift
  [[ ${1:-} == --prefix ]] && prefix=$2
  bg "$RLOCK" "$@" "$name" sleep 30
  HOLDER_PID=$BG_PID
  wait_until 10 key_exists "$prefix{$name}"
}

header_re='^NAME +HOLDER +HELD FOR +TTL +FENCE +COMMAND *$'

# check_width: every line of $output fits 80 columns.
check_width() {
  local line
  for line in "${lines[@]}"; do
    ((${#line} <= 80)) || {
      echo "line longer than 80 columns: '$line'"
      return 1
    }
  done
}

@test "status of a held lock shows NAME, user@host:pid, FENCE and the command" {
  local fence
  hold deploy
  fence=$(redis_cli hget "$(lock_key 'deploy')" fence)
  run -0 --separate-stderr rl status deploy
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[0]} =~ $header_re ]]
  [[ ${lines[1]} =~ ^deploy\ +$me:$HOLDER_PID\ +[^\ ]+\ +[^\ ]+\ +$fence\ +sleep\ 30$ ]]
  check_width
}

@test "status of a free lock exits 1 and shows it free" {
  run -1 --separate-stderr rl status backup
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[0]} =~ $header_re ]]
  [[ ${lines[1]} =~ ^backup\ +-\ +-\ +-\ +-\ +\(free\)$ ]]
}

@test "status exits 0 when every named lock is held, 1 when any is free" {
  hold a
  hold b
  run -0 rl status a b
  run -1 rl status a free b
}

@test "status with no NAME lists every held lock, sorted, and exits 0" {
  hold zeta
  hold alpha
  hold 'mid dle'
  run -0 --separate-stderr rl status
  echo "$output"
  [ "${#lines[@]}" -eq 4 ]
  [[ ${lines[0]} =~ $header_re ]]
  [[ ${lines[1]} == "alpha "* ]]
  [[ ${lines[2]} == "mid dle "* ]]
  [[ ${lines[3]} == "zeta "* ]]
  check_width
}

@test "status with no NAME and nothing held: no output, a note on stderr, exit 0" {
  # A released lock may leave its last fence behind; that is not a lock.
  run -0 rl gone true
  run -0 --separate-stderr rl status
  [ -z "$output" ]
  [ "$stderr" = "rlock: no locks held under prefix 'rlock:'" ]
}

@test "status --prefix sees only locks under that prefix" {
  hold other --prefix p:
  run -0 --separate-stderr rl status --prefix p:
  [ "${#lines[@]}" -eq 2 ]
  [[ ${lines[1]} == "other "* ]]
  run -0 --separate-stderr rl status
  [ -z "$output" ]
  [ "$stderr" = "rlock: no locks held under prefix 'rlock:'" ]
  RLOCK_PREFIX=p: run -0 rl status other
}

@test "status long names and commands still fit 80 columns" {
  local name
  name=$(printf 'n%.0s' {1..100})
  bg "$RLOCK" "$name" sh -c 'sleep 30; : a very long command line that does not fit into eighty columns at all'
  wait_until 10 key_exists "$(lock_key "$name")"
  run -0 --separate-stderr rl status
  check_width
}

@test "status --json: fields of a held and a free lock" {
  local f=$BATS_TEST_TMPDIR/status.json i held=-1 free=-1
  hold held
  run -1 --separate-stderr rl status --json held free
  printf '%s' "$output" >"$f"
  echo "$output"
  [ "$(json_type "$f" '[]')" = array ]
  [ "$(json_len "$f" '[]')" -eq 2 ]
  for i in 0 1; do
    case $(json_get "$f" "[$i,\"name\"]") in
    '"held"') held=$i ;;
    '"free"') free=$i ;;
    esac
  done
  ((held >= 0 && free >= 0))

  [ "$(json_get "$f" "[$held,\"key\"]")" = "\"$(lock_key held)\"" ]
  [ "$(json_get "$f" "[$held,\"held\"]")" = true ]
  [ "$(json_type "$f" "[$held,\"ttl_ms\"]")" = number ]
  (($(json_get "$f" "[$held,\"ttl_ms\"]") > 0))
  (($(json_get "$f" "[$held,\"ttl_ms\"]") <= 30000))
  [ "$(json_get "$f" "[$held,\"token\"]")" = "\"$(redis_cli hget "$(lock_key 'held')" token)\"" ]
  [[ $(json_get "$f" "[$held,\"token\"]") =~ ^\"[0-9a-f]{32}\"$ ]]
  [ "$(json_get "$f" "[$held,\"fence\"]")" = "$(redis_cli hget "$(lock_key 'held')" fence)" ]
  [ "$(json_type "$f" "[$held,\"owner\"]")" = object ]
  [ "$(json_get "$f" "[$held,\"owner\",\"host\"]")" = "\"$(hostname)\"" ]
  [ "$(json_get "$f" "[$held,\"owner\",\"pid\"]")" = "$HOLDER_PID" ]
  [ "$(json_get "$f" "[$held,\"owner\",\"user\"]")" = "\"$(id -un)\"" ]
  [ "$(json_get "$f" "[$held,\"command\"]")" = '"sleep 30"' ]
  [[ $(json_get "$f" "[$held,\"acquired_at\"]") =~ ^\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\"$ ]]

  [ "$(json_get "$f" "[$free,\"held\"]")" = false ]
  local field
  for field in ttl_ms token fence owner command acquired_at; do
    [ "$(json_get "$f" "[$free,\"$field\"]")" = null ] || {
      echo "free lock: $field is not null"
      return 1
    }
  done
  # Every entry has every field (present, even when null).
  for i in 0 1; do
    for field in name key held ttl_ms token fence owner command acquired_at; do
      [ "$(json_has "$f" "$i" "$field")" = true ] || {
        echo "entry $i has no field $field"
        return 1
      }
    done
  done
}

@test "status --json with no NAME lists every held lock and exits 0" {
  local f=$BATS_TEST_TMPDIR/status.json
  hold one
  hold two
  run -0 --separate-stderr rl status --json
  printf '%s' "$output" >"$f"
  [ "$(json_len "$f" '[]')" -eq 2 ]
  [ "$(json_get "$f" '[0,"held"]')" = true ]
  [ "$(json_get "$f" '[1,"held"]')" = true ]
}

@test "status --json with nothing held prints a valid empty array" {
  local f=$BATS_TEST_TMPDIR/status.json
  run -0 --separate-stderr rl status --json
  printf '%s' "$output" >"$f"
  [ "$(json_type "$f" '[]')" = array ]
  [ "$(json_len "$f" '[]')" -eq 0 ]
}

@test "status against an unreachable server exits 69" {
  run -69 --separate-stderr rl status --url "redis://127.0.0.1:$(closed_port)/0" anything
  [ -z "$output" ]
  [[ $stderr == rlock:* ]]
  RLOCK_URL=redis://127.0.0.1:$(closed_port)/0 run -69 rl status
}

@test "status --json >/dev/full exits 74" {
  hold held
  run -74 --separate-stderr bash -c '"$1" status --json held >/dev/full' _ "$RLOCK"
  [[ $stderr == rlock:* ]]
}

@test "status >/dev/full exits 74" {
  hold held
  run -74 --separate-stderr bash -c '"$1" status >/dev/full' _ "$RLOCK"
  [[ $stderr == rlock:* ]]
}

@test "status on a key of the wrong type exits 69" {
  redis_cli set "$(lock_key 'odd')" not-a-hash >/dev/null
  run -69 --separate-stderr rl status odd
  [[ $stderr == rlock:* ]]
}

@test "status changes nothing in redis" {
  local before
  hold held
  # Once the last fence is gone (a second after the acquisition), the keys
  # change no more by themselves.
  wait_until 5 key_absent "$(fence_key 'held')"
  before=$(redis_cli --scan | sort)
  run -0 rl status held
  run -1 rl status free
  run -0 rl status --json
  [ "$(redis_cli --scan | sort)" = "$before" ]
  [ "$(redis_cli hget "$(lock_key 'held')" token)" != "" ]
}
