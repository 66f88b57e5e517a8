# shellcheck shell=bash
#
# Throwaway redis-server for tests. Source this file, then:
#
#   redis_start DIR   start a server whose config, socket, pidfile, log and
#                     data live in DIR; exports REDIS_PORT, REDIS_SOCKET,
#                     REDIS_PIDFILE, REDIS_DIR and RLOCK_URL. Returns 125 when
#                     redis-server is missing (skip), unless CI=true or
#                     RLOCK_REQUIRE_REDIS=1, where that is a failure (1).
#   redis_stop DIR    stop the server started in DIR (by the PID in its
#                     pidfile) and wait until it is gone.
#   redis_cli ARG...  redis-cli against the server started last.
#   redis_make_certs DIR  a test CA and certificates for TLS (see below).
#
# With REDIS_TLS_CERTS=DIR (made by redis_make_certs), the server also
# listens for TLS on another random port, exported as REDIS_TLS_PORT; client
# certificates are optional until a test asks for them (tls-auth-clients).
#
# RLOCK_TEST_SERVER names the server binary (default redis-server, from PATH;
# a path to another Redis-compatible server such as valkey-server runs the
# same tests against it). redis-cli talks to any of them.
#
# The server listens on 127.0.0.1 only, on a random port in 20000-60999
# (never 6379), and on a unix socket. Readiness is polled, never slept for.

: "${RLOCK_TEST_SERVER:=redis-server}"

# Seconds to wait for a server to answer PING, and for one to exit.
: "${REDIS_START_TIMEOUT:=5}"
: "${REDIS_STOP_TIMEOUT:=10}"

# redis_skip_allowed: true unless CI or the caller requires a real server.
redis_skip_allowed() {
  [[ ${CI:-} != true && ${RLOCK_REQUIRE_REDIS:-} != 1 ]]
}

# redis_pick_port: set REDIS_RANDOM_PORT to a port in 20000-60999 (no
# subshell, so that successive calls differ on every bash version).
redis_pick_port() {
  REDIS_RANDOM_PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 41000))
}

# redis_port_in_use PORT: true when something accepts connections on it.
redis_port_in_use() {
  (exec 9<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# redis_pid_alive PID: true while PID exists and is not a zombie.
redis_pid_alive() {
  local state
  [[ -r /proc/$1/stat ]] || { kill -0 "$1" 2>/dev/null; return; }
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && ${state:0:1} != Z ]]
}

# redis_write_config DIR PORT: the generated configuration.
redis_write_config() {
  local dir=$1 port=$2
  cat >"$dir/redis.conf" <<EOF
bind 127.0.0.1
protected-mode yes
port $port
unixsocket $dir/redis.sock
unixsocketperm 700
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
daemonize yes
save ""
appendonly no
databases 16
EOF
  if [[ -n ${REDIS_TLS_CERTS:-} ]]; then
    cat >>"$dir/redis.conf" <<EOF
tls-port $REDIS_RANDOM_TLS_PORT
tls-cert-file $REDIS_TLS_CERTS/server.crt
tls-key-file $REDIS_TLS_CERTS/server.key
tls-ca-cert-file $REDIS_TLS_CERTS/ca.crt
tls-auth-clients optional
EOF
  fi
}

# redis_make_certs DIR: with openssl, in DIR: ca.crt/ca.key (the test CA),
# server.crt/key for localhost, 127.0.0.1 and ::1, client.crt/key, and
# other-ca.crt, a CA that signed none of them. EC keys: fast to make.
redis_make_certs() {
  local dir=${1:?usage: redis_make_certs DIR} name
  mkdir -p "$dir" || return 1
  (
    cd "$dir" || exit 1
    for name in ca other-ca; do
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
        -nodes -keyout "$name.key" -out "$name.crt" -days 2 \
        -subj "/CN=rlock test $name" 2>/dev/null || exit 1
    done
    for name in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$name.key" -out "$name.csr" -subj "/CN=rlock test $name" \
        2>/dev/null || exit 1
    done
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n' >server.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    for name in server client; do
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key \
        -CAcreateserial -out "$name.crt" -days 2 -extfile "$name.ext" \
        2>/dev/null || exit 1
    done
  )
}

# redis_await DIR PORT: poll until the server in DIR answers on PORT (0),
# failed to start (1) or the deadline passed (2).
redis_await() {
  local dir=$1 port=$2 deadline=$((SECONDS + REDIS_START_TIMEOUT + 1))
  local via_socket via_port
  while ((SECONDS < deadline)); do
    # Bind failure is logged and the daemon exits before writing a pidfile.
    if grep -qE 'Could not create server TCP listening socket|Failed listening on port|Address already in use' \
      "$dir/redis.log" 2>/dev/null; then
      return 1
    fi
    if [[ -S $dir/redis.sock && -s $dir/redis.pid ]]; then
      # The socket is ours alone; the TCP port must lead to the same server.
      via_socket=$(redis-cli -s "$dir/redis.sock" info server 2>/dev/null | grep '^run_id:')
      if [[ -n $via_socket ]]; then
        via_port=$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | grep '^run_id:')
        [[ $via_socket == "$via_port" ]] && return 0
        return 1
      fi
    fi
    sleep 0.05
  done
  return 2
}

# redis_start DIR: see the header.
redis_start() {
  local dir=${1:?usage: redis_start DIR} try port rc
  local -i tries=20
  if ! command -v "$RLOCK_TEST_SERVER" >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    if redis_skip_allowed; then
      echo "redis.bash: $RLOCK_TEST_SERVER/redis-cli not found; skipping" >&2
      return 125
    fi
    echo "redis.bash: ERROR: $RLOCK_TEST_SERVER/redis-cli not found" \
      "(required because CI=true or RLOCK_REQUIRE_REDIS=1)" >&2
    return 1
  fi
  mkdir -p "$dir" || return 1
  dir=$(cd "$dir" && pwd) || return 1
  if ((${#dir} > 90)); then
    echo "redis.bash: ERROR: '$dir' is too long for a unix socket path" >&2
    return 1
  fi
  for ((try = 1; try <= tries; try++)); do
    redis_pick_port
    port=$REDIS_RANDOM_PORT
    redis_port_in_use "$port" && continue
    redis_pick_port
    REDIS_RANDOM_TLS_PORT=$REDIS_RANDOM_PORT
    if [[ -n ${REDIS_TLS_CERTS:-} ]]; then
      ((REDIS_RANDOM_TLS_PORT != port)) || continue
      redis_port_in_use "$REDIS_RANDOM_TLS_PORT" && continue
    fi
    rm -f "$dir/redis.log" "$dir/redis.pid" "$dir/redis.sock"
    redis_write_config "$dir" "$port"
    "$RLOCK_TEST_SERVER" "$dir/redis.conf" >/dev/null 2>&1 || continue
    rc=0
    redis_await "$dir" "$port" || rc=$?
    if ((rc == 0)); then
      export REDIS_DIR=$dir
      export REDIS_PORT=$port
      export REDIS_SOCKET=$dir/redis.sock
      export REDIS_PIDFILE=$dir/redis.pid
      export RLOCK_URL=redis://127.0.0.1:$port/0
      [[ -z ${REDIS_TLS_CERTS:-} ]] || export REDIS_TLS_PORT=$REDIS_RANDOM_TLS_PORT
      return 0
    fi
    # A server that started but is not usable must not outlive this loop.
    redis_stop "$dir" 2>/dev/null
    if ((rc == 2)); then
      echo "redis.bash: ERROR: redis-server did not answer within" \
        "${REDIS_START_TIMEOUT}s; log follows" >&2
      cat "$dir/redis.log" >&2 2>/dev/null
      return 1
    fi
  done
  echo "redis.bash: ERROR: no free port found after $tries tries; last log:" >&2
  cat "$dir/redis.log" >&2 2>/dev/null
  return 1
}

# redis_stop DIR: see the header. Returns 1 if the server would not die.
redis_stop() {
  local dir=${1:?usage: redis_stop DIR} pid deadline
  [[ -s $dir/redis.pid ]] || return 0
  pid=$(<"$dir/redis.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  # Never signal a recycled PID that no longer belongs to the server.
  if [[ -r /proc/$pid/cmdline ]] && ! tr '\0' ' ' <"/proc/$pid/cmdline" |
    grep -qF -- "${RLOCK_TEST_SERVER##*/}"; then
    rm -f "$dir/redis.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null
  deadline=$((SECONDS + REDIS_STOP_TIMEOUT))
  while redis_pid_alive "$pid"; do
    if ((SECONDS >= deadline)); then
      kill -KILL "$pid" 2>/dev/null
      sleep 0.1
      redis_pid_alive "$pid" && return 1
      break
    fi
    sleep 0.02
  done
  rm -f "$dir/redis.pid"
  return 0
}

# redis_cli ARG...: see the header.
redis_cli() {
  redis-cli -s "${REDIS_SOCKET:?redis_start first}" "$@"
}
