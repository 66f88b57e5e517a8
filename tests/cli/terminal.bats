#!/usr/bin/env bats
#
# rlock at a terminal (a pty made by script(1)), and what the child inherits.

# Child scripts are single-quoted on purpose (SC2016); `run` sets output.
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  need_file /usr/bin/script bsdutils
}

# in_pty CMD: runs the shell command CMD with a pty as its terminal.
in_pty() {
  timeout 20 script -qec "$1" /dev/null </dev/null
}

@test "at a terminal the child's group is the foreground group" {
  run -0 in_pty "'$RLOCK' tty-lock sh -c 'test -t 0 && echo tty; ps -o pgid=,tpgid= -p \$\$'"
  [[ $output == *tty* ]]
  read -r pgid tpgid < <(printf '%s\n' "$output" | grep -E '^ *[0-9]+ +[0-9]+' | tr -d '\r')
  [ "$pgid" -eq "$tpgid" ]
}

@test "at a terminal the exit status still passes through" {
  run -0 in_pty "'$RLOCK' tty-lock sh -c 'exit 7'; echo status=\$?"
  [[ $output == *status=7* ]]
  key_absent "$(lock_key 'tty-lock')"
}

@test "the child inherits no Redis socket (TCP)" {
  run -0 --separate-stderr rl fd-lock sh -c 'ls -l /proc/$$/fd/'
  [[ $output != *socket:* ]]
}

@test "the child inherits no Redis socket (unix socket URL)" {
  run -0 --separate-stderr rl --url "unix://$REDIS_SOCKET" fd-lock sh -c 'ls -l /proc/$$/fd/'
  [[ $output != *socket:* ]]
}
