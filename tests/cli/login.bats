#!/usr/bin/env bats
#
# Logging in: the password from --password-file, the URL, $RLOCK_PASSWORD or
# $REDISCLI_AUTH (in that order), ACL users, and the messages for a refused
# or missing password, which never show the password itself.

# `run` sets stderr and stderr_lines (SC2154); each test exports
# REDISCLI_AUTH for its own redis_cli calls (SC2030, SC2031).
# shellcheck disable=SC2154,SC2030,SC2031

bats_require_minimum_version 1.5.0

load helpers

SECRET='s3cret-Pw:@%'

setup() {
  common_setup
  unset RLOCK_PASSWORD REDISCLI_AUTH
  redis_cli acl setuser ci on ">$SECRET" '~*' '&*' +@all >/dev/null
  printf '%s\n' "$SECRET" >password
  # "ci:" is the user; with no colon, "ci" would be the password (as in
  # redis-cli), and the password comes from the options or the environment.
  CI_URL=redis://ci:@127.0.0.1:$REDIS_PORT
}
teardown() {
  redis_cli acl deluser ci >/dev/null
  redis_cli acl setuser default on nopass >/dev/null
  common_teardown
}

# no_secret FILE...: none of the files holds the password.
no_secret() {
  ! grep -qF -- "$SECRET" "$@"
}

@test "--password-file: the first line is the ACL user's password" {
  run -0 --separate-stderr rl --url "$CI_URL" --password-file password \
    n sh -c 'echo ran'
  [ "$output" = ran ]
  [ -z "$stderr" ]
  [ "$(redis_cli acl log | grep -c ci)" -eq 0 ]
}

@test "a CRLF line end and a second line in --password-file are not part of it" {
  printf '%s\r\nnot this\n' "$SECRET" >password
  run -0 rl --url "$CI_URL" --password-file password n true
}

@test "\$RLOCK_PASSWORD, then \$REDISCLI_AUTH" {
  RLOCK_PASSWORD=$SECRET run -0 rl --url "$CI_URL" n true
  REDISCLI_AUTH=$SECRET run -0 rl --url "$CI_URL" n true
  # RLOCK_PASSWORD comes first.
  RLOCK_PASSWORD=$SECRET REDISCLI_AUTH=wrong run -0 rl --url "$CI_URL" n true
}

@test "the order: --password-file, the URL, \$RLOCK_PASSWORD, \$REDISCLI_AUTH" {
  local encoded
  encoded=$(printf '%s' "$SECRET" | sed 's/%/%25/g; s/:/%3A/g; s/@/%40/g')
  RLOCK_PASSWORD=wrong run -0 rl --url "$CI_URL" --password-file password n true
  RLOCK_PASSWORD=wrong run -0 rl \
    --url "redis://ci:$encoded@127.0.0.1:$REDIS_PORT" n true
  printf 'wrong\n' >password
  run -69 rl --url "redis://ci:$encoded@127.0.0.1:$REDIS_PORT" \
    --password-file password n true
}

@test "redis://ci@host with a password given another way logs in as user ci; alone, ci is the password" {
  local url=redis://ci@127.0.0.1:$REDIS_PORT
  # Only user ci logs in with $SECRET; the default user's password is "ci".
  redis_cli acl setuser default on resetpass '>ci' >/dev/null
  export REDISCLI_AUTH=ci # for redis_cli from here on (teardown)
  run -0 env -u REDISCLI_AUTH "$RLOCK" --url "$url" --password-file password n true
  run -0 env -u REDISCLI_AUTH RLOCK_PASSWORD="$SECRET" "$RLOCK" --url "$url" n true
  run -0 env REDISCLI_AUTH="$SECRET" "$RLOCK" --url "$url" n true
  # Alone, "ci" is the password, as redis-cli reads it: the default user's.
  run -0 env -u REDISCLI_AUTH "$RLOCK" --url "$url" n true
}

@test "the default user's password, without a user in the URL" {
  redis_cli acl setuser default on ">$SECRET" >/dev/null
  export REDISCLI_AUTH=$SECRET # for redis_cli from here on, and for rlock
  run -0 rl n true
  run -0 env -u REDISCLI_AUTH "$RLOCK" --password-file password n true
}

@test "a refused password: 69, one line naming the user, never the password" {
  printf 'wrong-%s\n' "$SECRET" >password
  run -69 --separate-stderr rl -v --events events.jsonl \
    --url "$CI_URL" --password-file password n touch ran
  [ "$stderr" = "rlock: Redis at 127.0.0.1:$REDIS_PORT refused the password for user 'ci': WRONGPASS invalid username-password pair or user is disabled." ]
  [ -z "$output" ]
  [ ! -e ran ]
  [ "$(dbsize)" -eq 0 ]
  echo "$stderr" >stderr.txt
  no_secret stderr.txt
  [ ! -s events.jsonl ] || no_secret events.jsonl
}

@test "a password in the URL never appears in messages, -v lines or events" {
  run -69 --separate-stderr rl -v --events events.jsonl \
    --url "redis://ci:wrong-password-123@127.0.0.1:$REDIS_PORT" n true
  [[ $stderr != *wrong-password-123* ]]
  [ ! -s events.jsonl ] || ! grep -q wrong-password-123 events.jsonl
  # A bad URL quotes the URL with the password hidden.
  run -64 --separate-stderr rl --url 'redis://ci:wrong-password-123@h:0' n true
  [[ $stderr == *"redis://ci:***@h:0"* ]]
  [[ $stderr != *wrong-password-123* ]]
}

@test "a server that wants a password and got none: 69 saying how to give one" {
  redis_cli acl setuser default on ">$SECRET" >/dev/null
  export REDISCLI_AUTH=$SECRET # for redis_cli only
  run -69 --separate-stderr env -u REDISCLI_AUTH "$RLOCK" n touch ran
  [[ $stderr == "rlock: cannot acquire lock 'n': the server wants a password (give it with --password-file, \$RLOCK_PASSWORD or the URL): "* ]]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ ! -e ran ]
}

@test "--password-file that cannot be read, or is empty: 64" {
  run -64 --separate-stderr rl --password-file /nonexistent n touch ran
  [ "$stderr" = "rlock: --password-file: cannot read '/nonexistent': No such file or directory" ]
  : >empty
  run -64 --separate-stderr rl --password-file empty n touch ran
  [ "$stderr" = "rlock: --password-file: 'empty' is empty (the password is its first line)" ]
  [ -z "$output" ]
  [ ! -e ran ]
}

@test "status and the script steps take the same login options" {
  run -0 rl status --url "$CI_URL" --password-file password
  run -0 --separate-stderr rl acquire --url "$CI_URL" --password-file password s
  RLOCK_PASSWORD=$SECRET run -0 rl release --url "$CI_URL" --token "$output" s
  key_absent "$(lock_key 's')"
}
