#!/usr/bin/env bats
#
# Bad invocations: exit 64, exactly one line on stderr that names the option
# and quotes the bad value, nothing on stdout, nothing run, nothing in redis.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

# usage_error NEEDLE... -- ARG...: run rlock with ARGs; expect 64, empty
# stdout, one stderr line starting with "rlock: " that contains every NEEDLE,
# the marker command not run and redis empty.
usage_error() {
  local -a needles=()
  while (($#)) && [[ $1 != -- ]]; do
    needles+=("$1")
    shift
  done
  shift
  run -64 --separate-stderr rl "$@"
  check_usage_output "${needles[@]}"
}

check_usage_output() {
  local needle
  echo "stdout: '$output'"
  echo "stderr: '$stderr'"
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr != *$'\n'* ]]
  [[ $stderr == "rlock: "* ]]
  for needle in "$@"; do
    [[ $stderr == *"$needle"* ]] || {
      echo "stderr does not contain: $needle"
      return 1
    }
  done
  [ ! -e "$BATS_TEST_TMPDIR/ran" ]
  [ "$(dbsize)" -eq 0 ]
}

ran=ran # the marker file the command would create (cwd is the test dir)

@test "-t abc" {
  usage_error --ttl "'abc'" -- -t abc name touch $ran
}

@test "-t 0" {
  usage_error --ttl "'0'" -- -t 0 name touch $ran
}

@test "-t -1s" {
  usage_error --ttl "'-1s'" -- -t -1s name touch $ran
}

@test "-t '' (empty)" {
  usage_error --ttl "''" -- -t '' name touch $ran
}

@test "-t 5x (unknown unit)" {
  usage_error --ttl "'5x'" -- -t 5x name touch $ran
}

@test "-t nan" {
  usage_error --ttl "'nan'" -- -t nan name touch $ran
}

@test "-t inf" {
  usage_error --ttl "'inf'" -- -t inf name touch $ran
}

@test "-t 1e3 (exponent)" {
  usage_error --ttl "'1e3'" -- -t 1e3 name touch $ran
}

@test "-t 99999999999h (over 2^63 ns)" {
  usage_error --ttl "'99999999999h'" -- -t 99999999999h name touch $ran
}

@test "-t +5s (leading plus)" {
  usage_error --ttl "'+5s'" -- -t +5s name touch $ran
}

@test "-t ' 5s' (whitespace)" {
  usage_error --ttl "' 5s'" -- -t ' 5s' name touch $ran
}

@test "--ttl=abc (attached value)" {
  usage_error --ttl "'abc'" -- --ttl=abc name touch $ran
}

@test "-w -1" {
  usage_error --wait "'-1'" -- -w -1 name touch $ran
}

@test "--kill-after 1y" {
  usage_error --kill-after "'1y'" -- --kill-after 1y name touch $ran
}

@test "--connect-timeout 0" {
  usage_error --connect-timeout "'0'" -- --connect-timeout 0 name touch $ran
}

@test "--io-timeout x" {
  usage_error --io-timeout "'x'" -- --io-timeout x name touch $ran
}

@test "--io-timeout 0" {
  usage_error --io-timeout "'0'" -- --io-timeout 0 name touch $ran
}

@test "-E 256" {
  usage_error --conflict-exit-code "'256'" -- -E 256 name touch $ran
}

@test "-E -1" {
  usage_error --conflict-exit-code "'-1'" -- -E -1 name touch $ran
}

@test "-E abc" {
  usage_error --conflict-exit-code "'abc'" -- -E abc name touch $ran
}

@test "--kill-signal FOO" {
  usage_error --kill-signal "'FOO'" -- --kill-signal FOO name touch $ran
}

@test "--kill-signal 0" {
  usage_error --kill-signal "'0'" -- --kill-signal 0 name touch $ran
}

@test "--kill-signal 65" {
  usage_error --kill-signal "'65'" -- --kill-signal 65 name touch $ran
}

@test "--url http://x" {
  usage_error --url "'http://x'" -- --url http://x name touch $ran
}

@test "--url redis://host:99999" {
  usage_error --url "'redis://host:99999'" -- --url redis://host:99999 name touch $ran
}

@test "--url redis://h/abc" {
  usage_error --url "'redis://h/abc'" -- --url redis://h/abc name touch $ran
}

@test "\$RLOCK_URL=http://x is checked like --url" {
  RLOCK_URL=http://x run -64 --separate-stderr rl name touch $ran
  check_usage_output "'http://x'"
}

@test "NAME with a newline" {
  # The value cannot appear verbatim on one line; its start must be quoted.
  usage_error NAME "'a" -- $'a\nb' touch $ran
}

@test "NAME with a tab" {
  usage_error NAME "'a" -- $'a\tb' touch $ran
}

@test "NAME with \\x01" {
  usage_error NAME "'a" -- $'a\x01b' touch $ran
}

@test "NAME with DEL" {
  usage_error NAME "'a" -- $'a\x7fb' touch $ran
}

@test "NAME of 1025 bytes" {
  local name
  name=$(printf 'n%.0s' {1..1025})
  usage_error NAME "'nnnnnnnnnnnnnnnn" -- "$name" touch $ran
}

@test "NAME of 1024 bytes is accepted" {
  local name
  name=$(printf 'n%.0s' {1..1024})
  run -0 rl "$name" true
}

@test "empty NAME" {
  usage_error NAME "''" -- '' touch $ran
}

@test "missing NAME" {
  usage_error "missing NAME" --
}

@test "missing NAME after options" {
  usage_error "missing NAME" -- -t 5s
}

@test "missing COMMAND" {
  usage_error "missing COMMAND" "'name'" -- name
}

@test "unknown option" {
  usage_error "unknown option" "'--bogus'" -- --bogus name touch $ran
}

@test "two unknown options: the first one named, as typed" {
  run -64 --separate-stderr rl --exclusiv --nbx name touch "$ran"
  [ "$stderr" = "rlock: unknown option '--exclusiv' (try 'rlock --help')" ]
  [ ! -e "$ran" ]
}

@test "unknown short option" {
  usage_error "'-Z'" -- -Z name touch $ran
}

@test "option missing its value" {
  usage_error --ttl -- -t
}

@test "-c with extra arguments" {
  usage_error -c "'extra'" -- name -c "touch $ran" extra
}

@test "-c before NAME with extra arguments" {
  usage_error -c "'extra'" -- -c "touch $ran" name extra
}

@test "-c with a COMMAND as well" {
  usage_error -c "'touch'" -- -c "touch $ran" name touch $ran
}

@test "--kill-after 25s -t 30s leaves no time to renew" {
  # The contract's example message quotes neither value.
  usage_error --kill-after 25s -- --kill-after 25s -t 30s name touch $ran
}

@test "status --bogus" {
  usage_error "'--bogus'" -- status --bogus
}

@test "status --url http://x" {
  usage_error --url "'http://x'" -- status --url http://x
}

@test "status with an invalid NAME" {
  usage_error NAME "'a" -- status $'a\nb'
}

@test "--help prints usage on stdout and exits 0" {
  run -0 --separate-stderr rl --help
  [[ $output == *rlock* ]]
  [[ $output == *status* ]]
  [ -z "$stderr" ]
}

@test "every --help separates its groups by one blank line, never two" {
  local command
  for command in "" status acquire extend release check wait doctor; do
    run -0 --separate-stderr rl $command --help
    [[ $output == *$'\n\n'* ]]
    [[ $output != *$'\n\n\n'* ]] || {
      echo "rlock $command --help has two blank lines in a row"
      return 1
    }
  done
}

@test "--version prints on stdout and exits 0" {
  run -0 --separate-stderr rl --version
  [[ $output == *rlock* ]]
  [ -z "$stderr" ]
}
