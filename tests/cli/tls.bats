#!/usr/bin/env bats
#
# rediss://: TLS to a redis-server started with --tls-port and certificates
# this file makes with openssl (a test CA, a server certificate for
# localhost, 127.0.0.1 and ::1, a client certificate, and a second CA that
# signed nothing). Verification is on by default; every failure is 69 with
# one line naming the address and the reason, and leaves nothing behind.

# Child scripts are single-quoted on purpose (SC2016); `run` sets stderr and
# stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup_file() {
  export REDIS_TLS_CERTS=$BATS_FILE_TMPDIR/certs
  redis_make_certs "$REDIS_TLS_CERTS"
  common_setup_file
}
setup() {
  common_setup
  CERTS=$REDIS_TLS_CERTS
  TLS_URL=rediss://127.0.0.1:$REDIS_TLS_PORT
}
teardown() {
  redis_cli config set tls-auth-clients optional >/dev/null
  common_teardown
}

# tls ARG...: rl over TLS, verified against the test CA.
tls() {
  rl --url "$TLS_URL" --tls-ca "$CERTS/ca.crt" "$@"
}

# refused ARG...: the run fails with 69, one line on stderr, nothing on
# stdout, the command never ran and no key is left. Sets $stderr.
refused() {
  run -69 --separate-stderr rl "$@" n touch ran
  [ -z "$output" ]
  [ "${#stderr_lines[@]}" -eq 1 ]
  [ ! -e ran ]
  [ "$(dbsize)" -eq 0 ]
}

@test "rediss:// with --tls-ca: the command runs under the lock, renewed over TLS" {
  run -0 --separate-stderr tls --ttl 300ms --events events.jsonl n \
    sh -c 'sleep 0.5; echo ran'
  [ "$output" = ran ]
  [ -z "$stderr" ]
  # Renewed (every TTL/3) and released over the same TLS transport.
  grep -q '"event":"renewed"' events.jsonl
  grep -q '"event":"released"' events.jsonl
  key_absent "$(lock_key 'n')"
}

@test "a certificate for the host name: rediss://localhost verifies" {
  run -0 rl --url "rediss://localhost:$REDIS_TLS_PORT" \
    --tls-ca "$CERTS/ca.crt" n true
}

@test "status, acquire, check and release over TLS" {
  run -0 --separate-stderr tls acquire --ttl 30s s
  token=$output
  run -0 tls check --token "$token" s
  run -0 --separate-stderr tls status s
  [[ $output == *s* ]]
  run -0 tls release --token "$token" s
  key_absent "$(lock_key 's')"
}

@test "a waiter over TLS is woken by the release, not by polling" {
  bg "$RLOCK" --url "$TLS_URL" --tls-ca "$CERTS/ca.crt" --ttl 30s w sleep 1
  wait_until 10 key_exists "$(lock_key 'w')"
  start=$(now_ms)
  # The holder's TTL is 30s, so the waiter's safety net would fire after 5s
  # at the earliest: only the release message wakes it sooner.
  run -0 tls -w 20s w true
  (($(now_ms) - start < 4000))
  run -0 reap "$BG_PID"
}

@test "a CA that did not sign the server's certificate: 69, certificate verify failed" {
  refused --url "$TLS_URL" --tls-ca "$CERTS/other-ca.crt"
  [[ $stderr == "rlock: TLS handshake with 127.0.0.1:$REDIS_TLS_PORT failed: certificate verify failed ("*")" ]]
}

@test "no --tls-ca: the system's CAs do not know the test CA, 69" {
  refused --url "$TLS_URL"
  [[ $stderr == *"TLS handshake with 127.0.0.1:$REDIS_TLS_PORT failed: certificate verify failed"* ]]
}

@test "--tls-server-name that the certificate does not carry: 69, hostname mismatch" {
  refused --url "$TLS_URL" --tls-ca "$CERTS/ca.crt" \
    --tls-server-name redis.example
  [[ $stderr == *"certificate verify failed (hostname mismatch)" ]]
  run -0 tls --tls-server-name localhost n true
}

@test "--tls-insecure connects without verifying, and warns" {
  run -0 --separate-stderr rl --url "$TLS_URL" --tls-insecure n echo ran
  [ "$output" = ran ]
  [[ $stderr == "rlock: warning: --tls-insecure: the server's certificate is not verified"* ]]
}

@test "client certificates: required by the server, refused without, accepted with" {
  redis_cli config set tls-auth-clients yes
  refused --url "$TLS_URL" --tls-ca "$CERTS/ca.crt"
  # The alert, or (TLS 1.3: it comes after the handshake) a reset with a hint.
  [[ $stderr == "rlock: "*"127.0.0.1:$REDIS_TLS_PORT"*"certificate"* ]]
  run -0 tls --tls-cert "$CERTS/client.crt" --tls-key "$CERTS/client.key" \
    n true
}

@test "rediss:// to a port that does not speak TLS: 69 within the connect timeout" {
  refused --url "rediss://127.0.0.1:$REDIS_PORT" --tls-ca "$CERTS/ca.crt" \
    --connect-timeout 0.5s
  [[ $stderr == "rlock: TLS handshake with 127.0.0.1:$REDIS_PORT failed: "* ]]
}

@test "redis:// to the TLS port: 69 naming the address" {
  refused --url "redis://127.0.0.1:$REDIS_TLS_PORT" --io-timeout 1s
  [[ $stderr == "rlock: "*"127.0.0.1:$REDIS_TLS_PORT"* ]]
}

@test "TLS options without a rediss:// URL, or files that are no use: 64" {
  run -64 --separate-stderr rl --tls-ca "$CERTS/ca.crt" n touch ran
  [ "$stderr" = "rlock: --tls-ca needs a rediss:// URL (RLOCK_URL is not one)" ]
  run -64 --separate-stderr rl --url "$TLS_URL" --tls-ca /nonexistent n true
  [ "$stderr" = "rlock: --tls-ca: cannot read '/nonexistent': No such file or directory" ]
  run -64 --separate-stderr rl --url "$TLS_URL" --tls-cert "$CERTS/client.crt" n true
  [ "$stderr" = "rlock: --tls-cert needs --tls-key" ]
  run -64 --separate-stderr tls --tls-cert "$CERTS/client.crt" \
    --tls-key "$CERTS/server.key" n true
  [[ $stderr == "rlock: --tls-key '$CERTS/server.key': "* ]]
  run -64 --separate-stderr rl --url "$TLS_URL" --tls-ca "$CERTS/ca.key" n true
  [[ $stderr == "rlock: --tls-ca '$CERTS/ca.key': "* ]]
  [ -z "$output" ]
  [ ! -e ran ]
  [ "$(dbsize)" -eq 0 ]
}

@test "a TLS waiter rides out a handshake that gets no answer while reconnecting" {
  local certs=$REDIS_TLS_CERTS
  start_proxy "$REDIS_TLS_PORT"
  bg "$RLOCK" --url "rediss://127.0.0.1:$REDIS_TLS_PORT" --tls-ca "$certs/ca.crt" \
    tl sleep 5
  wait_until 10 key_exists "$(lock_key 'tl')"
  bg "$RLOCK" --url "rediss://127.0.0.1:$PROXY_PORT" --tls-ca "$certs/ca.crt" \
    --connect-timeout 500ms -v -w 20s tl echo waiter-ran
  local waiter=$BG_PID waiter_out=$BG_OUT waiter_err=$BG_ERR
  sleep 0.8
  # For 3 s the waiter's connections are reset and new ones get no answer.
  proxy_control 0 1 1
  sleep 3
  proxy_control 0 0 1
  reap "$waiter" 20 || {
    cat "$waiter_err"
    false
  }
  grep -q waiter-ran "$waiter_out"
}
