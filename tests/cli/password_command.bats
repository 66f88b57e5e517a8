#!/usr/bin/env bats
#
# Short-lived credentials: --password-command / $RLOCK_PASSWORD_COMMAND, run
# through /bin/sh for a password (its first line of output), again every
# --password-refresh while a lock is held, the renewer's live connection
# logging in again with each new one. The rotation test emulates a service
# whose tokens expire: an ACL password rotated every 2 s, and every
# connection that did not log in again since a rotation cut 1.7 s after it.

# `run` sets stderr and stderr_lines (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  unset RLOCK_PASSWORD REDISCLI_AUTH RLOCK_PASSWORD_COMMAND
  TOKENS=$BATS_TEST_TMPDIR/tokens
  TOKEN_FILE=$BATS_TEST_TMPDIR/token
  new_token
  # The token goes to redis-cli on its stdin: never in an argv.
  printf 'ACL SETUSER u reset on >%s ~* &* +@all\n' "$TOKEN" | redis_cli >/dev/null
  printf '%s\n' "$TOKEN" >"$TOKEN_FILE"
  # "u:" is the user, with no password in the URL.
  U_URL=redis://u:@127.0.0.1:$REDIS_PORT
  GET_TOKEN="cat '$TOKEN_FILE'"
}
teardown() {
  redis_cli acl deluser u >/dev/null
  common_teardown
}

# new_token: a fresh token in TOKEN, noted in $TOKENS.
new_token() {
  TOKEN=tok-$RANDOM$RANDOM-$RANDOM$RANDOM
  printf '%s\n' "$TOKEN" >>"$TOKENS"
}

# no_token FILE...: none of the tokens used is in any of the files.
no_token() {
  local token
  while read -r token; do
    if grep -qF -- "$token" "$@"; then
      echo "token $token found in: $(grep -lF -- "$token" "$@")" >&2
      return 1
    fi
  done <"$TOKENS"
}

# rotate_and_cut: every 2 s until ./stop exists: a new password for u (added,
# published in $TOKEN_FILE, the old one removed), a marker in the monitor
# log, and 1.7 s later every connection of u that has not sent AUTH since
# the marker is cut. Samples `ps` meanwhile.
rotate_and_cut() {
  local n=0 old=$TOKEN mark addr authed
  while [[ ! -e stop && ! -e finished ]]; do
    n=$((n + 1))
    new_token
    printf 'ACL SETUSER u >%s\n' "$TOKEN" | redis_cli >/dev/null
    mark=$(wc -l <monitor.log)
    redis_cli echo "rotation-$n" >/dev/null
    printf '%s\n' "$TOKEN" >"$TOKEN_FILE.new"
    mv "$TOKEN_FILE.new" "$TOKEN_FILE"
    printf 'ACL SETUSER u <%s\n' "$old" | redis_cli >/dev/null
    old=$TOKEN
    for _ in 1 2 3 4 5 6 7 8; do
      ps -eww -o args= >>ps.txt
      sleep 0.2
    done
    sleep 0.1
    authed=$(tail -n +"$((mark + 1))" monitor.log | grep '"AUTH"' |
      sed -E 's/^[0-9.]+ \[[0-9]+ ([^]]+)\].*/\1/' | sort -u)
    while read -r addr; do
      [[ -z $addr ]] && continue
      if ! grep -qxF -- "$addr" <<<"$authed"; then
        redis_cli client kill addr "$addr" >/dev/null
        echo "$addr" >>cuts
      fi
    done < <(redis_cli client list | grep ' user=u ' | sed -nE 's/.* addr=([^ ]+) .*/\1/p')
    echo "$n" >rotations
    sleep 0.2
  done
}

# monitor_on: true once the monitor log shows a command sent now.
monitor_on() {
  redis_cli echo monitor-on >/dev/null
  grep -q '"echo" "monitor-on"' monitor.log
}

# evalsha_clients_since MARKER: the clients that sent EVALSHA or EVAL after
# the ECHO MARKER in the monitor log, one per line in order of first use.
evalsha_clients_since() {
  sed -n "/\"echo\" \"$1\"/,\$p" monitor.log | grep -E '\] "(EVALSHA|EVAL)" ' |
    sed -E 's/^[0-9.]+ \[[0-9]+ ([^]]+)\].*/\1/' | awk '!seen[$0]++'
}

@test "a hold outlives password rotations: the renewer's connection logs in again with each new token" {
  redis-cli -s "$REDIS_SOCKET" monitor >monitor.log 2>/dev/null &
  track $!
  wait_until 5 monitor_on
  bg "$RLOCK" -v --url "$U_URL" --password-command "$GET_TOKEN" \
    --password-refresh 1s --ttl 6s --events "$PWD/events.jsonl" n \
    sh -c 'env >child.env; touch started; sleep 10; echo ran >finished'
  local rlock_pid=$BG_PID
  wait_until 5 test -e started
  rotate_and_cut &
  local rotator=$!
  track "$rotator"
  local rc=0
  reap "$rlock_pid" 30 || rc=$?
  touch stop
  wait "$rotator"
  cat "$BG_ERR" >&2
  # The hold survived, and the command ran to its end.
  [ "$rc" -eq 0 ]
  [ "$(cat finished)" = ran ]
  # The rotations took place, and cut what did not log in again (the main
  # thread's idle connection): the emulation bites.
  [ "$(cat rotations)" -ge 4 ]
  [ -s cuts ]
  # The renewals after the first rotation came from one connection (the
  # last EVALSHA is the release, on a connection of its own): the
  # renewer's, never cut, which logged in again after every rotation.
  evalsha_clients_since rotation-1 >clients
  sed '$d' clients >renewer
  [ "$(wc -l <renewer)" -eq 1 ]
  local n renewer_addr
  renewer_addr=$(cat renewer)
  for n in $(seq 1 "$(($(cat rotations) - 1))"); do
    sed -n "/\"echo\" \"rotation-$n\"/,/\"echo\" \"rotation-$((n + 1))\"/p" monitor.log |
      grep -qF "[0 $renewer_addr] \"AUTH\""
  done
  not grep -qxF -- "$renewer_addr" cuts
  # Nothing refused, and no token anywhere: argv and process titles, the
  # messages (-v), the events, the command's environment.
  not grep -q lost "$BG_ERR"
  grep -q '"renewed"' events.jsonl
  no_token ps.txt "$BG_ERR" "$BG_OUT" events.jsonl child.env
}

@test "the password command's first line is the password; CRLF and later lines are dropped" {
  run -0 --separate-stderr rl --url "$U_URL" \
    --password-command "printf '%s\r\nnot this\n' \"\$(cat '$TOKEN_FILE')\"" \
    n sh -c 'echo ran'
  [ "$output" = ran ]
  [ -z "$stderr" ]
}

@test "\$RLOCK_PASSWORD_COMMAND, through /bin/sh" {
  RLOCK_PASSWORD_COMMAND="tr -d x <'$TOKEN_FILE' | cat" run -0 rl --url "$U_URL" n true
}

@test "a failing password command: exit 69, one line with its status and stderr" {
  run -69 --separate-stderr rl --url "$U_URL" \
    --password-command 'echo no credentials >&2; exit 3' n true
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ "$stderr" = "rlock: --password-command: exited with status 3 (its stderr: 'no credentials')" ]
  RLOCK_PASSWORD_COMMAND='kill -9 $$' run -69 --separate-stderr rl --url "$U_URL" n true
  [ "$stderr" = "rlock: RLOCK_PASSWORD_COMMAND: was killed by SIGKILL" ]
}

@test "a password command that prints nothing: exit 69" {
  run -69 --separate-stderr rl --url "$U_URL" --password-command 'true' n true
  [ "$stderr" = "rlock: --password-command: printed nothing" ]
  run -69 --separate-stderr rl --url "$U_URL" --password-command 'echo; echo second' n true
  [ "$stderr" = "rlock: --password-command: printed an empty first line" ]
}

@test "a password command that hangs is killed after 10s: exit 69" {
  local start
  start=$SECONDS
  run -69 --separate-stderr rl --url "$U_URL" \
    --password-command "echo \$\$ >'$PWD/cmd.pid'; echo waiting >&2; sleep 60; :" n true
  [ "$stderr" = "rlock: --password-command: did not finish within 10.0s (it was killed) (its stderr: 'waiting')" ]
  ((SECONDS - start < 20))
  # Killed, with its process group.
  not running "$(cat cmd.pid)"
  wait_until 2 not pgrep -g "$(cat cmd.pid)"
}

@test "a wrong token from the password command: exit 69, the token not shown" {
  run -69 --separate-stderr rl --url "$U_URL" --password-command 'echo tok-wrong-42' n true
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == "rlock: Redis at 127.0.0.1:$REDIS_PORT refused the password for user 'u': WRONGPASS "* ]]
  [[ $stderr != *tok-wrong-42* ]]
}

@test "--password-refresh: a duration of 1s or more, with a password command" {
  local value
  for value in abc 0 500ms -1s; do
    run -64 --separate-stderr rl --url "$U_URL" --password-command "$GET_TOKEN" \
      --password-refresh "$value" n true
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == "rlock: --password-refresh: "*"'$value'"* ]]
  done
  run -64 --separate-stderr rl --url "$U_URL" --password-refresh 1m n true
  [ "$stderr" = "rlock: --password-refresh needs --password-command (or \$RLOCK_PASSWORD_COMMAND)" ]
  run -0 rl --url "$U_URL" --password-command "$GET_TOKEN" --password-refresh 1m n true
}

@test "the password given two ways: refused, or the rank decides" {
  printf '%s\n' "$TOKEN" >password
  # Two on the command line: refused, before the command runs.
  run -64 --separate-stderr rl --url "$U_URL" --password-command 'touch ran; echo x' \
    --password-file password n true
  [ "$stderr" = "rlock: --password-command and --password-file: give the password one way" ]
  run -64 --separate-stderr rl --url "redis://u:$TOKEN@127.0.0.1:$REDIS_PORT" \
    --password-command 'touch ran; echo x' n true
  [ "$stderr" = "rlock: --password-command: not with a password in the URL (--url); give the password one way" ]
  [[ $stderr != *$TOKEN* ]]
  RLOCK_URL="redis://u:$TOKEN@127.0.0.1:$REDIS_PORT" run -64 --separate-stderr \
    rl --password-command 'touch ran; echo x' n true
  [ "$stderr" = "rlock: --password-command: not with a password in the URL (RLOCK_URL); give the password one way" ]
  # Two in the environment: refused.
  RLOCK_PASSWORD_COMMAND='touch ran; echo x' RLOCK_PASSWORD=$TOKEN run -64 --separate-stderr \
    rl --url "$U_URL" n true
  [ "$stderr" = "rlock: RLOCK_PASSWORD_COMMAND and RLOCK_PASSWORD are both set: give the password one way" ]
  [ ! -e ran ]
  # The command line beats the environment; the URL's password beats
  # $RLOCK_PASSWORD_COMMAND, which beats $REDISCLI_AUTH.
  RLOCK_PASSWORD_COMMAND='touch ran; echo x' run -0 rl --url "$U_URL" --password-file password n true
  RLOCK_PASSWORD_COMMAND='touch ran; echo x' run -0 \
    rl --url "redis://u:$TOKEN@127.0.0.1:$REDIS_PORT" n true
  [ ! -e ran ]
  RLOCK_PASSWORD=wrong run -0 rl --url "$U_URL" --password-command "$GET_TOKEN" n true
  REDISCLI_AUTH=wrong RLOCK_PASSWORD_COMMAND=$GET_TOKEN run -0 rl --url "$U_URL" n true
  # redis://u@host: u is the user when a command gives the password.
  run -0 rl --url "redis://u@127.0.0.1:$REDIS_PORT" --password-command "$GET_TOKEN" n true
}

@test "a refresh that fails during a hold is said once; the hold goes on" {
  run -0 --separate-stderr rl --url "$U_URL" --password-command "$GET_TOKEN" \
    --password-refresh 1s n sh -c "sleep 0.5; rm '$TOKEN_FILE'; sleep 4; echo ran"
  [ "$output" = ran ]
  [ "$(grep -c 'password-command' <<<"$stderr")" -eq 1 ]
  [[ $stderr == *"rlock: warning: --password-command: exited with status 1 (its stderr: 'cat: $TOKEN_FILE: No such file or directory'); the password fetched before stays in use"* ]]
}
