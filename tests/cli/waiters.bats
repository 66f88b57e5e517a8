#!/usr/bin/env bats
#
# Waiters under faults: -n --fair leaves no queue entry, a lost acquire
# reply is undone when the wait ends otherwise, reconnecting rides out a TLS
# handshake timeout and maxclients, and the safety net follows the holder.

bats_require_minimum_version 1.5.0

load helpers

setup_file() {
  export REDIS_TLS_CERTS=$BATS_FILE_TMPDIR/certs
  redis_make_certs "$REDIS_TLS_CERTS"
  common_setup_file
  # proxy.py LISTEN TARGET: TCP proxy. While ./slow exists replies take 1 s;
  # while ./stall exists new connections get no answer; touching ./drop
  # closes every open connection.
  cat >"$BATS_FILE_TMPDIR/proxy.py" <<'PY'
import asyncio, os, sys
conns = set()
async def pipe(r, w, down):
    try:
        while data := await r.read(65536):
            if down and os.path.exists('slow'): await asyncio.sleep(1)
            w.write(data); await w.drain()
    except Exception: pass
    w.close()
async def handle(cr, cw):
    while os.path.exists('stall'): await asyncio.sleep(0.05)
    sr, sw = await asyncio.open_connection('127.0.0.1', int(sys.argv[2]))
    conns.add((cw, sw)); await asyncio.gather(pipe(cr, sw, False), pipe(sr, cw, True))
async def dropper():
    while True:
        await asyncio.sleep(0.02)
        if os.path.exists('drop'):
            os.unlink('drop'); [c.close() or s.close() for c, s in conns]; conns.clear()
async def main():
    s = await asyncio.start_server(handle, '127.0.0.1', int(sys.argv[1])); asyncio.ensure_future(dropper())
    async with s: await s.serve_forever()
asyncio.run(main())
PY
}
teardown_file() { common_teardown_file; }
setup() { common_setup; }
teardown() {
  redis_cli config set maxclients 10000 >/dev/null
  common_teardown
}

# start_proxy TARGET_PORT: starts proxy.py in the test's directory in front
# of TARGET_PORT; sets PROXY_PORT.
start_proxy() {
  PROXY_PORT=$(closed_port)
  bg python3 "$BATS_FILE_TMPDIR/proxy.py" "$PROXY_PORT" "$1"
  wait_until 10 redis_port_in_use "$PROXY_PORT"
}

@test "-n --fair and -w 0 --fair on a held lock leave no queue entry behind" {
  bg "$RLOCK" q sleep 1
  wait_until 10 key_exists 'rlock:{q}'
  run -75 rl -n --fair q true
  run -75 rl -w 0 --fair q true
  key_absent 'rlock:{q}:queue'
  reap "$BG_PID"
  # The free lock goes at once to -n, and promptly to a plain waiter.
  run -0 rl -n q true
  run -0 timeout 3 "$RLOCK" q true
}

@test "a lost acquire reply then SIGINT while reconnecting leaves no lock held" {
  start_proxy "$REDIS_PORT"
  bg "$RLOCK" lr sleep 1
  wait_until 10 key_exists 'rlock:{lr}'
  bg "$RLOCK" --url "redis://127.0.0.1:$PROXY_PORT" --io-timeout 300ms \
    lr echo A-ran
  waiter=$BG_PID
  sleep 0.3
  touch slow # the reply to the waiter's winning acquire is lost
  wait_until 20 grep -q reconnecting "$BG_ERR"
  kill -INT "$waiter"
  reap "$waiter" || true
  rm slow
  [[ $(<"$BG_OUT") != *A-ran* ]]
  # The first holder is gone too: nobody holds the lock.
  wait_until 10 key_absent 'rlock:{lr}'
  run -0 rl -n lr true
}

@test "a waiter rides out 'max number of clients reached' while reconnecting" {
  bg "$RLOCK" mc sleep 3
  wait_until 10 key_exists 'rlock:{mc}'
  bg "$RLOCK" -v -w 20s mc echo waiter-ran
  waiter_out=$BG_OUT
  waiter=$BG_PID
  wait_until 10 sh -c "redis-cli -s '$REDIS_SOCKET' client list | grep -q cmd=subscribe"
  # One connection drops the waiter's own connection (the latest that ran an
  # acquire) and, in the same step, lets no new client in for 4 s.
  python3 - "$REDIS_SOCKET" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rb')
def call(*args):
    s.sendall(b'*%d\r\n' % len(args)
              + b''.join(b'$%d\r\n%s\r\n' % (len(a), a.encode()) for a in args))
    line = f.readline()
    return f.read(int(line[1:]) + 2) if line.startswith(b'$') else line
clients = call('CLIENT', 'LIST').decode().splitlines()
waiter = [c.split()[0][3:] for c in clients if 'cmd=evalsha' in c][-1]
# Two: this connection and the waiter's subscription, which stay; the
# holder's connections, gone when it exits, free no slot.
assert call('CONFIG', 'SET', 'maxclients', '2') == b'+OK\r\n'
call('CLIENT', 'KILL', 'ID', waiter)
time.sleep(4)
call('CONFIG', 'SET', 'maxclients', '10000')
PY
  reap "$waiter" 20 || { cat "$BG_ERR"; false; }
  grep -q waiter-ran "$waiter_out"
}

@test "a TLS waiter rides out a handshake timeout while reconnecting" {
  certs=$REDIS_TLS_CERTS
  start_proxy "$REDIS_TLS_PORT"
  bg "$RLOCK" --url "rediss://127.0.0.1:$REDIS_TLS_PORT" --tls-ca "$certs/ca.crt" \
    tl sleep 5
  wait_until 10 key_exists 'rlock:{tl}'
  bg "$RLOCK" --url "rediss://127.0.0.1:$PROXY_PORT" --tls-ca "$certs/ca.crt" \
    --connect-timeout 500ms -v -w 20s tl echo waiter-ran
  waiter_out=$BG_OUT
  waiter=$BG_PID
  sleep 0.8
  touch stall drop # for 3 s new connections get no TLS handshake
  sleep 3
  rm stall
  reap "$waiter" 20 || { cat "$BG_ERR"; false; }
  grep -q waiter-ran "$waiter_out"
}

@test "a waiter behind a long holder does not poll" {
  bg "$RLOCK" -t 150ms poll sleep 0.5
  first=$BG_PID
  wait_until 10 key_exists 'rlock:{poll}'
  bg "$RLOCK" --fair -t 1h poll sleep 4
  sleep 0.1
  bg "$RLOCK" --fair poll true
  reap "$first"
  wait_until 10 sh -c "redis-cli -s '$REDIS_SOCKET' hget 'rlock:{poll}' ttl_ms | grep -qx 3600000"
  sleep 0.2
  redis_cli config resetstat >/dev/null
  sleep 2
  stats=$(redis_cli info commandstats)
  calls=0
  for cmd in pttl evalsha; do
    n=$(grep -o "cmdstat_$cmd:calls=[0-9]*" <<<"$stats" | cut -d= -f2)
    calls=$((calls + ${n:-0}))
  done
  echo "PTTL/EVALSHA calls in 2 s: $calls"
  ((calls < 5))
}
