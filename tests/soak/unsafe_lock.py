#!/usr/bin/env python3
"""unsafe_lock.py HOST PORT NAME TTL_MS WAIT_MS COMMAND...: the planted
unsafe locker of SOAK_LOCKER=unsafe and of the self-test.

`SET NX PX` without renewal: the lease runs out while COMMAND still runs, and
the next one takes it. WAIT_MS -1 waits forever, 0 is -n (exit 75). The fence
is an INCR, passed as RLOCK_FENCE. The release is a plain DEL. An error
reply (a Cluster's MOVED, a replica's READONLY) exits 69. This is what
the checker must catch; it is not a locker to copy.
"""

import os
import socket
import subprocess
import sys
import time


def command(sock, *args):
    payload = f"*{len(args)}\r\n" + "".join(
        f"${len(str(a).encode())}\r\n{a}\r\n" for a in args)
    sock.sendall(payload.encode())
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise OSError("connection closed")
        reply += chunk
    if reply.startswith(b"$") and not reply.startswith(b"$-1"):
        while reply.count(b"\r\n") < 2:
            reply += sock.recv(4096)
    return reply.decode(errors="replace")


def main():
    host, port, name, ttl_ms, wait_ms = sys.argv[1:6]
    argv = sys.argv[6:]
    key = "soak-unsafe:{" + name + "}"  # the fence in the same Cluster slot
    deadline = None if int(wait_ms) < 0 else time.monotonic() + int(wait_ms) / 1000
    try:
        sock = socket.create_connection((host, int(port)), timeout=5)
        while True:
            reply = command(sock, "SET", key, str(os.getpid()), "NX", "PX", ttl_ms)
            if reply.startswith("+OK"):
                break
            if reply.startswith("-"):
                # MOVED, READONLY, ...: this locker follows nothing.
                print(f"unsafe_lock: {reply.strip()}", file=sys.stderr)
                return 69
            if deadline is not None and time.monotonic() >= deadline:
                return 75
            time.sleep(0.02)
        fence = command(sock, "INCR", key + ":fence")
        if not fence.startswith(":"):
            print(f"unsafe_lock: {fence.strip()}", file=sys.stderr)
            return 69
        fence = fence[1:].strip()
    except OSError as err:
        print(f"unsafe_lock: {err}", file=sys.stderr)
        return 69
    status = subprocess.call(argv, env=dict(os.environ, RLOCK_FENCE=fence))
    try:
        command(sock, "DEL", key)
    except OSError:
        pass
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
