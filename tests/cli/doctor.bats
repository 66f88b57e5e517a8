#!/usr/bin/env bats
#
# rlock doctor: one aligned line per check, --json, exit codes (0 all ok, 1
# any other, 69 unreachable, 64 usage). Each warning comes from a real
# configuration change on this file's redis-server, which teardown restores;
# slow round trips and a skewed clock come from a proxy in front of it; a
# replica is a second redis-server of the test's own.

# The proxy's Python and a child's script are single-quoted on purpose
# (SC2016); `run` sets stderr and stderr_lines (SC2154).
# shellcheck disable=SC2016,SC2154

bats_require_minimum_version 1.5.0

load helpers

setup() {
  common_setup
  MAIN_PORT=$REDIS_PORT
  MAIN_SOCKET=$REDIS_SOCKET
}
teardown() {
  local replica=$BATS_TEST_TMPDIR/replica
  if [[ -d $replica ]]; then
    redis_stop "$replica"
    REDIS_SOCKET=$MAIN_SOCKET wait_until 10 no_replicas
  fi
  export REDIS_SOCKET=$MAIN_SOCKET REDIS_PORT=$MAIN_PORT
  # The configuration every test starts from (tests/lib/redis.bash's).
  redis_cli config set maxmemory 0 >/dev/null
  redis_cli config set maxmemory-policy noeviction >/dev/null
  redis_cli config set appendonly no >/dev/null
  redis_cli config set appendfsync everysec >/dev/null
  redis_cli config set save '' >/dev/null
  redis_cli acl deluser doctor-noconfig doctor-blind >/dev/null
  common_teardown
}

CHECKS=(version eviction persistence replication latency clock)

# check_lines: $output is one line per check, in order, aligned: STATUS in 8
# columns, NAME in 13, then the message.
check_lines() {
  local i line
  echo "$output"
  [ "${#lines[@]}" -eq "${#CHECKS[@]}" ]
  for i in "${!CHECKS[@]}"; do
    line=${lines[i]}
    [[ $line =~ ^(ok|warn|fail|unknown)\ +${CHECKS[i]}\ +[^\ ] ]] || {
      echo "line $i is not '<status> ${CHECKS[i]} <message>': $line"
      return 1
    }
    [[ ${line:7:1} == ' ' && ${line:20:1} == ' ' && ${line:21:1} != ' ' ]] || {
      echo "line $i is not aligned: $line"
      return 1
    }
  done
}

# status_of NAME: the status word of check NAME in $output.
status_of() {
  awk -v name="$1" '$2 == name { print $1 }' <<<"$output"
}

# line_of NAME: the line of check NAME in $output.
line_of() {
  awk -v name="$1" '$2 == name' <<<"$output"
}

# only_warning NAME: check NAME warns, every other check is ok.
only_warning() {
  local name
  for name in "${CHECKS[@]}"; do
    if [[ $name == "$1" ]]; then
      [ "$(status_of "$name")" = warn ]
    else
      [ "$(status_of "$name")" = ok ] || {
        echo "$name is not ok: $(line_of "$name")"
        return 1
      }
    fi
  done
}

# has LINE TEXT...: LINE contains every TEXT.
has() {
  local line=$1 text
  shift
  for text; do
    [[ $line == *"$text"* ]] || {
      echo "'$text' not in: $line"
      return 1
    }
  done
}

# safe_config: what doctor wants; only the test server's lack of
# persistence stands in the way.
safe_config() {
  redis_cli config set appendonly yes >/dev/null
}

no_replicas() {
  redis_cli info replication | grep -q '^connected_slaves:0'
}

# A TCP proxy to the test server on a free loopback port: writes its port to
# PORTFILE once it listens. It holds every request DELAY_MS before passing it
# on, and answers TIME itself, OFFSET_S seconds off the real time.
PROXY='
import os, socket, sys, threading, time
target, delay, offset, portfile = (int(sys.argv[1]), float(sys.argv[2]) / 1000,
                                   float(sys.argv[3]), sys.argv[4])
TIME = b"*1\r\n$4\r\nTIME\r\n"

def pump(source, sink):
    while data := source.recv(65536):
        sink.sendall(data)

def serve(client):
    upstream = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
    while data := client.recv(65536):
        time.sleep(delay)
        if data == TIME and offset:
            now = time.time() + offset
            s, us = str(int(now)).encode(), str(int(now % 1 * 1e6)).encode()
            client.sendall(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                           % (len(s), s, len(us), us))
        else:
            upstream.sendall(data)
    upstream.close()

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
'

# proxy DELAY_MS OFFSET_S: start a proxy; sets PROXY_URL.
proxy() {
  local portfile=$BATS_TEST_TMPDIR/proxy.$((++PROXIES)).port
  bg python3 -c "$PROXY" "$REDIS_PORT" "$1" "$2" "$portfile"
  wait_until 10 file_has "$portfile"
  PROXY_URL=redis://127.0.0.1:$(<"$portfile")/0
}

# start_replica: a second redis-server, a replica of the test server; sets
# REPLICA_URL and waits until its link is up. Teardown stops it.
start_replica() {
  local socket
  redis_start "$BATS_TEST_TMPDIR/replica" || return 1
  REPLICA_URL=$RLOCK_URL
  socket=$REDIS_SOCKET
  export REDIS_SOCKET=$MAIN_SOCKET REDIS_PORT=$MAIN_PORT
  export RLOCK_URL=redis://127.0.0.1:$MAIN_PORT/0
  [ "$(redis-cli -s "$socket" replicaof 127.0.0.1 "$MAIN_PORT")" = OK ]
  wait_until 20 link_up "$socket"
}

link_up() {
  redis-cli -s "$1" info replication | grep -q '^master_link_status:up'
}

# --- the plain text ----------------------------------------------------------

@test "doctor on a server set up for locks: six ok lines, exit 0, nothing on stderr" {
  safe_config
  run -0 --separate-stderr rl doctor
  check_lines
  [ -z "$stderr" ]
  [ "$(grep -c '^ok ' <<<"$output")" -eq 6 ]
  has "$(line_of version)" "Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')" \
    "127.0.0.1:$REDIS_PORT" "4.0 or later"
  has "$(line_of eviction)" "maxmemory-policy noeviction"
  has "$(line_of persistence)" "appendonly yes, appendfsync everysec"
  has "$(line_of replication)" "master with no replicas"
  has "$(line_of latency)" "over 5 PINGs" "305ms margin of a 30s TTL"
}

@test "doctor with appendfsync always: still ok" {
  safe_config
  redis_cli config set appendfsync always
  run -0 --separate-stderr rl doctor
  has "$(line_of persistence)" "appendonly yes, appendfsync always"
}

# --- each warning, from a configuration change ------------------------------

@test "no persistence (appendonly no, save \"\"): persistence warns, exit 1" {
  run -1 --separate-stderr rl doctor
  check_lines
  only_warning persistence
  has "$(line_of persistence)" 'appendonly no, save ""' \
    "a restart empties Redis" "every held lock vanishes"
  [ -z "$stderr" ]
}

@test "RDB snapshots only: persistence warns about what a restart loses" {
  redis_cli config set save '3600 1'
  run -1 --separate-stderr rl doctor
  only_warning persistence
  has "$(line_of persistence)" 'appendonly no, save "3600 1": RDB snapshots only' \
    "locks taken since vanish"
}

@test "appendfsync no: persistence warns about a machine crash" {
  safe_config
  redis_cli config set appendfsync no
  run -1 --separate-stderr rl doctor
  only_warning persistence
  has "$(line_of persistence)" "appendfsync no" "crash of the machine"
}

@test "volatile-lru with maxmemory set: eviction warns, lock keys all have a TTL" {
  safe_config
  redis_cli config set maxmemory 100mb
  redis_cli config set maxmemory-policy volatile-lru
  run -1 --separate-stderr rl doctor
  check_lines
  only_warning eviction
  has "$(line_of eviction)" "maxmemory-policy volatile-lru with maxmemory 100mb" \
    "every lock key has one" "set maxmemory-policy noeviction"
}

@test "allkeys-lru with maxmemory set: eviction warns, any key goes" {
  safe_config
  redis_cli config set maxmemory 100mb
  redis_cli config set maxmemory-policy allkeys-lru
  run -1 --separate-stderr rl doctor
  only_warning eviction
  has "$(line_of eviction)" "allkeys-lru with maxmemory 100mb" "any key"
}

@test "allkeys-lru without maxmemory: ok, with a note that it would evict if set" {
  safe_config
  redis_cli config set maxmemory-policy allkeys-lru
  run -0 --separate-stderr rl doctor
  has "$(line_of eviction)" "maxmemory-policy allkeys-lru" "maxmemory is 0" \
    "prefer noeviction"
}

@test "slow round trips (a proxy holds each request 60ms): latency warns against --ttl 3s" {
  safe_config
  proxy 60 0
  run -1 --separate-stderr rl doctor --ttl 3s --url "$PROXY_URL"
  check_lines
  only_warning latency
  has "$(line_of latency)" "more than the 35ms margin of a 3s TTL" "--ttl"
  # The same round trips are fine for the default 30s lease.
  run -0 --separate-stderr rl doctor --url "$PROXY_URL"
}

@test "round trips of a third of the TTL: latency fails" {
  safe_config
  proxy 60 0
  run -1 --separate-stderr rl doctor --ttl 150ms --url "$PROXY_URL"
  [ "$(status_of latency)" = fail ]
  has "$(line_of latency)" "TTL/3"
}

@test "the server's clock 5s behind (a proxy answers TIME): clock warns" {
  safe_config
  proxy 0 -5
  run -1 --separate-stderr rl doctor --url "$PROXY_URL"
  check_lines
  only_warning clock
  # 5s, give or take the proxy's timing: 4.9s or 5.0s.
  [[ $(line_of clock) =~ clock\ is\ (4\.9|5\.0)s\ behind\ this\ host\'s ]]
  has "$(line_of clock)" "--once-per" "expires leases by its wall clock" "cut short"
  proxy 0 3
  run -1 --separate-stderr rl doctor --url "$PROXY_URL"
  [[ $(line_of clock) =~ clock\ is\ (2\.9|3\.0)s\ ahead\ of\ this\ host\'s ]]
}

@test "--ttl sets the lease the round trip is judged by" {
  safe_config
  run -0 --separate-stderr rl doctor --ttl 5s
  has "$(line_of latency)" "55ms margin of a 5s TTL"
  run -0 --separate-stderr rl doctor -t 2m
  has "$(line_of latency)" "1.205s margin of a 120s TTL"
}

@test "doctor NAME: one more line, the lock's key and server" {
  safe_config
  run -0 --separate-stderr rl doctor 'deploy me'
  [ "${#lines[@]}" -eq $((${#CHECKS[@]} + 1)) ]
  [ "${lines[-1]}" = "ok      name         lock 'deploy me' is key '$(lock_key 'deploy me')' on 127.0.0.1:$REDIS_PORT" ]
  local f=$BATS_TEST_TMPDIR/doctor.json
  run -0 --separate-stderr rl doctor --json deploy
  printf '%s' "$output" >"$f"
  [ "$(json_get "$f" '["checks","name","values","key"]')" = "\"$(lock_key deploy)\"" ]
  [ "$(json_get "$f" '["checks","name","values","slot"]')" = null ]
  run -64 --separate-stderr rl doctor ''
}

# --- --json -----------------------------------------------------------------

@test "doctor --json: server, worst status and one entry per check" {
  local f=$BATS_TEST_TMPDIR/doctor.json name status
  run -1 --separate-stderr rl doctor --json
  printf '%s' "$output" >"$f"
  echo "$output"
  [ -z "$stderr" ]
  [ "$(json_type "$f" '[]')" = object ]
  [ "$(json_get "$f" '["server"]')" = "\"127.0.0.1:$REDIS_PORT\"" ]
  [ "$(json_get "$f" '["status"]')" = '"warn"' ]
  [ "$(json_len "$f" '["checks"]')" -eq 6 ]
  for name in "${CHECKS[@]}"; do
    [ "$(json_len "$f" "[\"checks\",\"$name\"]")" -eq 3 ]
    status=$(json_get "$f" "[\"checks\",\"$name\",\"status\"]")
    [[ $status =~ ^\"(ok|warn|fail|unknown)\"$ ]]
    [ "$(json_type "$f" "[\"checks\",\"$name\",\"message\"]")" = string ]
    [ "$(json_type "$f" "[\"checks\",\"$name\",\"values\"]")" = object ]
  done
  [ "$(json_get "$f" '["checks","persistence","status"]')" = '"warn"' ]
  [ "$(json_get "$f" '["checks","persistence","values","appendonly"]')" = '"no"' ]
  [ "$(json_get "$f" '["checks","persistence","values","save"]')" = '""' ]
  [ "$(json_get "$f" '["checks","eviction","values","maxmemory_policy"]')" = '"noeviction"' ]
  [ "$(json_get "$f" '["checks","eviction","values","maxmemory"]')" = 0 ]
  [ "$(json_get "$f" '["checks","replication","values","role"]')" = '"master"' ]
  [ "$(json_get "$f" '["checks","latency","values","pings"]')" = 5 ]
  [ "$(json_get "$f" '["checks","latency","values","ttl_ms"]')" = 30000 ]
  [ "$(json_type "$f" '["checks","latency","values","rtt_max_ms"]')" = number ]
  [ "$(json_type "$f" '["checks","clock","values","offset_ms"]')" = number ]
  [ "$(json_get "$f" '["checks","version","values","redis_version"]')" = \
    "\"$(redis_cli info server | sed -n 's/^redis_version:\([^\r]*\).*/\1/p')\"" ]
}

@test "doctor --json agrees with the text, and exits 0 when all is ok" {
  local f=$BATS_TEST_TMPDIR/doctor.json name text
  safe_config
  redis_cli config set maxmemory 100mb
  redis_cli config set maxmemory-policy volatile-ttl
  run -1 rl doctor
  text=$output
  run -1 --separate-stderr rl doctor --json
  printf '%s' "$output" >"$f"
  for name in "${CHECKS[@]}"; do
    output=$text
    [ "$(json_get "$f" "[\"checks\",\"$name\",\"status\"]")" = "\"$(status_of "$name")\"" ]
  done
  [ "$(json_get "$f" '["checks","eviction","values","maxmemory"]')" = 104857600 ]
  redis_cli config set maxmemory-policy noeviction
  run -0 --separate-stderr rl doctor --json
  printf '%s' "$output" >"$f"
  [ "$(json_get "$f" '["status"]')" = '"ok"' ]
}

# --- CONFIG refused ---------------------------------------------------------

@test "CONFIG refused by an ACL: eviction and persistence come from INFO" {
  local url=redis://doctor-noconfig:pw@127.0.0.1:$REDIS_PORT/0
  redis_cli acl setuser doctor-noconfig on '>pw' '~*' '&*' +@all -config
  run -1 --separate-stderr rl doctor --url "$url"
  check_lines
  [ -z "$stderr" ]
  has "$(line_of eviction)" "maxmemory-policy noeviction (from INFO: CONFIG GET refused)"
  [ "$(status_of eviction)" = ok ]
  has "$(line_of persistence)" "appendonly no (from INFO" "save unknown"
  [ "$(status_of persistence)" = warn ]
  # What INFO says is the server's real configuration.
  safe_config
  redis_cli config set maxmemory 100mb
  redis_cli config set maxmemory-policy volatile-lru
  run -1 --separate-stderr rl doctor --url "$url"
  has "$(line_of eviction)" "volatile-lru with maxmemory 100mb" "(from INFO"
  [ "$(status_of eviction)" = warn ]
  has "$(line_of persistence)" "appendonly yes (from INFO" "appendfsync unknown"
  [ "$(status_of persistence)" = ok ]
  run -1 --separate-stderr rl doctor --json --url "$url"
  printf '%s' "$output" >doctor.json
  [ "$(json_get doctor.json '["checks","eviction","values","source"]')" = '"INFO"' ]
}

@test "CONFIG, INFO, ROLE and TIME all refused: unknown, never a crash" {
  redis_cli acl setuser doctor-blind on '>pw' '~*' '&*' +@all -config -info -role -time
  run -1 --separate-stderr rl doctor --url "redis://doctor-blind:pw@127.0.0.1:$REDIS_PORT/0"
  check_lines
  [ -z "$stderr" ]
  for name in eviction persistence replication clock; do
    [ "$(status_of "$name")" = unknown ]
  done
  has "$(line_of eviction)" "CONFIG GET refused (NOPERM" "INFO refused (NOPERM"
  has "$(line_of clock)" "TIME refused (NOPERM"
  # HELLO still tells the version.
  [ "$(status_of version)" = ok ]
  [ "$(status_of latency)" = ok ]
}

# --- errors -----------------------------------------------------------------

@test "doctor against a closed port: 69, one line on stderr, nothing on stdout" {
  local port json
  port=$(closed_port)
  for json in '' --json; do
    run -69 --separate-stderr rl doctor $json --url "redis://127.0.0.1:$port/0"
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == "rlock: "*"127.0.0.1:$port"* ]]
  done
}

@test "doctor usage errors: 64, one line on stderr, nothing on stdout" {
  local args
  for args in '--bogus' 'one two' '--ttl 50ms' '--ttl abc' '--ttl' '--wide'; do
    # shellcheck disable=SC2086 # split on purpose
    run -64 --separate-stderr rl doctor $args
    echo "doctor $args: $stderr"
    [ -z "$output" ]
    [ "${#stderr_lines[@]}" -eq 1 ]
    [[ $stderr == "rlock: "* ]]
  done
  run -64 --separate-stderr rl --ttl 5s doctor
  [[ $stderr == "rlock: '--ttl' does not apply to 'doctor'"* ]]
}

@test "doctor --help: usage, options and exit codes" {
  run -0 rl doctor --help
  [[ ${lines[0]} == *"Redis keeps locks safe"* ]]
  [[ $output == *"Usage: rlock doctor [-t D] [--restart-grace D] [--json]"* ]]
  [[ $output == *"-t,--ttl D"* ]]
  [[ $output == *"Exit: 0 every check ok, 1 any other, 69 Redis unavailable"* ]]
}

@test "doctor >/dev/full: 74" {
  run -74 --separate-stderr bash -c '"$1" doctor >/dev/full' bash "$RLOCK"
  [[ $stderr == "rlock: cannot write output"* ]]
}

# --- replication (last: the master keeps a replica until teardown) ----------

@test "the WAIT probe publishes under --prefix, which reaches the replicas" {
  safe_config
  start_replica
  # A replica hands on what its master publishes to its own subscribers.
  bg redis-cli -u "$REPLICA_URL" subscribe app:doctor-probe
  wait_until 10 eval '[[ $(redis-cli -u "$REPLICA_URL" pubsub numsub app:doctor-probe | tail -n 1) == 1 ]]'
  # Exit 1: a master with a replica warns (asynchronous replication).
  run -1 --separate-stderr rl doctor --prefix app:
  has "$(line_of replication)" "WAIT 1"
  wait_until 5 grep -qx message "$BG_OUT"
}

@test "a replica: replication fails (READONLY); its master warns about failover" {
  safe_config
  start_replica
  run -1 --separate-stderr rl doctor --url "$REPLICA_URL"
  check_lines
  [ "$(status_of replication)" = fail ]
  has "$(line_of replication)" "replica of 127.0.0.1:$MAIN_PORT (link up)" \
    "READONLY" "point --url at the master"
  run -1 --separate-stderr rl doctor
  only_warning replication
  has "$(line_of replication)" "master with 1 replica:" "asynchronous" "WAIT" \
    "RLOCK_FENCE"
}
