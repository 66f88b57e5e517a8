#!/usr/bin/env bats
#
# The servers users really have: managed services and locked-down ACLs,
# emulated with a real redis-server whose ACL refuses what each service
# refuses (../shared/reviews/field-notes.md section 2 has the sources):
#   ElastiCache, Azure Cache   no CONFIG, DEBUG (and MIGRATE, REPLICAOF, SAVE,
#                              SHUTDOWN)
#   Memorystore for Redis      no CLUSTER, COMMAND, OBJECT, CONFIG, MONITOR
#   Aiven                      no ROLE, CLUSTER, COMMAND, CONFIG, ACL
#   Upstash-like               no INFO, WAIT, CLIENT (nor CLUSTER, ROLE, CONFIG)
#   an operator's +@all -@dangerous
#   scripts blocked after the Lua CVEs: no EVAL, EVALSHA, FCALL, SCRIPT
# For each, run mode, -n, -w, the script steps, status and doctor either work,
# or fail at once with 69 and one line naming the refused command and what to
# do: never a hang, a crash, a 70, or a lock left behind. doctor reports what
# it could not check as unknown, not as the server's failure.

# `run` sets stderr (SC2154).
# shellcheck disable=SC2154

bats_require_minimum_version 1.5.0

load helpers

# as_profile USER DENIED...: a user allowed everything but DENIED (ACL
# words: -cmd, -@category); points RLOCK_URL at it.
as_profile() {
  local user=$1
  shift
  [[ $(redis_cli acl setuser "$user" reset on '>pw' '~*' '&*' +@all "$@") == OK ]]
  export RLOCK_URL=redis://$user:pw@127.0.0.1:$REDIS_PORT/0
}

# no_lock_left: no key but the fence counters (kept on purpose: fences only
# grow).
no_lock_left() {
  run -0 redis_cli --scan
  ! grep -v -e ':fence$' -e '^$' <<<"$output"
}

# works_fully: run mode, -n, -w, acquire/release and status all succeed and
# leave no lock behind.
works_fully() {
  run -0 --separate-stderr rl job echo ran
  [ "$output" = ran ]
  run -0 --separate-stderr rl -n job echo ran
  [ "$output" = ran ]
  run -0 --separate-stderr rl -w 5s job echo ran
  [ "$output" = ran ]
  run -0 --separate-stderr rl acquire step
  local token=$output
  run -0 --separate-stderr rl status step
  [[ $output == *step* ]]
  run -0 --separate-stderr rl release --token "$token" step
  run -1 --separate-stderr rl status step
  no_lock_left
}

# doctor_says_unknown WHAT: doctor ran (no crash, no usage error), named the
# refused command, and reported no check as failed for it.
doctor_says_unknown() {
  run --separate-stderr rl doctor
  ((status == 0 || status == 1))
  [[ $output == *"$1"* ]]
  ! grep -E '^ *fail ' <<<"$output"
}

@test "ElastiCache profile (no CONFIG, DEBUG): everything works; doctor reads INFO instead" {
  as_profile elasticache -config -debug -migrate -replicaof -save -shutdown
  works_fully
  doctor_says_unknown 'CONFIG GET refused'
}

@test "Memorystore profile (no CLUSTER, COMMAND, OBJECT, CONFIG, MONITOR): everything works" {
  as_profile memorystore -cluster -command -object -config -monitor
  works_fully
  doctor_says_unknown 'CONFIG GET refused'
}

@test "Aiven profile (no ROLE, CLUSTER, COMMAND, CONFIG, ACL): everything works" {
  as_profile aiven -role -cluster -command -config -acl
  works_fully
  doctor_says_unknown 'CONFIG GET refused'
}

@test "Upstash-like profile (no INFO, WAIT, CLIENT): works with --restart-grace 0; doctor says unknown" {
  as_profile upstash -info -wait -client -cluster -role -config
  works_fully
  doctor_says_unknown 'INFO refused'
  [[ $output == *unknown* ]]
}

@test "INFO refused with the restart grace on: 69 at once naming INFO and what to do, nothing taken" {
  as_profile upstash -info -wait -client -cluster -role -config
  export RLOCK_RESTART_GRACE=30s
  local started=$SECONDS
  for mode in '' -n '-w 30s'; do
    # shellcheck disable=SC2086 # the mode is one or two words
    run -69 --separate-stderr rl $mode job touch ran
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == *"INFO refused"*"allow INFO or set --restart-grace 0"* ]]
  done
  run -69 --separate-stderr rl acquire --restart-grace 30s step
  [[ $stderr == *"INFO refused"* ]]
  # At once: the -w 30s run did not wait for its deadline.
  ((SECONDS - started < 20))
  [ ! -e ran ]
  no_lock_left
}

@test "+@all -@dangerous: works with --restart-grace 0; doctor says unknown for INFO and CONFIG" {
  as_profile dangerous -@dangerous
  works_fully
  doctor_says_unknown 'INFO refused'
}

@test "EVAL and EVALSHA refused: 69 at once, one line naming the command and the ACL, no lock; doctor fails the script check" {
  as_profile noeval -eval -evalsha -fcall -script
  local started=$SECONDS
  for mode in '' -n '-w 30s'; do
    # shellcheck disable=SC2086 # the mode is one or two words
    run -69 --separate-stderr rl $mode job touch ran
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == *"'evalsha'"*"the server's ACL refuses a command rlock needs"*"rlock(1), ACL"* ]]
  done
  run -69 --separate-stderr rl acquire step
  [[ $stderr == *"'evalsha'"* ]]
  ((SECONDS - started < 20))
  [ ! -e ran ]
  no_lock_left
  run --separate-stderr rl doctor
  [ "$status" -eq 1 ]
  grep -E '^ *fail +version .*refuses a test script' <<<"$output"
}

@test "a command refused inside a script (no HSET): 69, the ACL named, nothing left" {
  as_profile nohset -hset
  run -69 --separate-stderr rl job touch ran
  [ "${#stderr_lines[@]}" -eq 1 ]
  [[ $stderr == *"the server's ACL refuses a command rlock needs"* ]]
  [ ! -e ran ]
  key_absent "$(lock_key job)"
}

@test "the least-privilege rule (acl.bash) allows every command the scripts call" {
  # shellcheck source=tests/cli/acl.bash disable=SC1091
  source "$BATS_TEST_DIRNAME/acl.bash"
  local command missing=()
  while read -r command; do
    # SPUBLISH: only --compat redisson's release on a Redis 7 Cluster, through
    # pcall (refused, the plain PUBLISH still goes out; docs/sharing.md says
    # what such a user needs); +spublish would make Redis 6 refuse the rule.
    [[ $command == spublish ]] && continue
    [[ " $RLOCK_ACL_RULE " == *" +$command "* ]] || missing+=("$command")
  done < <(grep -ohE "redis\.p?call\(\s*['\"][A-Za-z]+" \
    "$BATS_TEST_DIRNAME"/../../src/rlock/redis/scripts/*.lua |
    sed -E "s/.*['\"]//" | tr '[:upper:]' '[:lower:]' | sort -u)
  [ "${#missing[@]}" -eq 0 ] || {
    echo "not in RLOCK_ACL_RULE: ${missing[*]}"
    false
  }
}
