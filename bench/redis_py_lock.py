#!/usr/bin/python3
"""redis_py_lock.py NAME COMMAND [ARG...]: `rlock NAME COMMAND` done with
redis-py's Lock, for the benchmark.

Takes redis-py's Lock on the key "redis-py:NAME" with its defaults (blocking,
polling every 0.1 s, no timeout), runs COMMAND, releases the lock and exits
with COMMAND's status (128+N if it died of signal N). The server comes from
$REDIS_URL (default redis://127.0.0.1:6379/0). Exit 64 on a usage error, 69
when Redis is unavailable, 126/127 when COMMAND cannot be run.

Uses the system interpreter (/usr/bin/python3), where Debian's python3-redis
lives.
"""

import os
import signal
import subprocess
import sys

import redis


def main(argv):
    if len(argv) < 3:
        print("usage: redis_py_lock.py NAME COMMAND [ARG...]", file=sys.stderr)
        return 64
    name, command = argv[1], argv[2:]
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url)
    lock = client.lock("redis-py:" + name)
    try:
        lock.acquire()
    except redis.RedisError as error:
        print(f"redis_py_lock: {error}", file=sys.stderr)
        return 69
    try:
        try:
            child = subprocess.Popen(command)
        except FileNotFoundError as error:
            print(f"redis_py_lock: cannot run {command[0]!r}: {error.strerror}",
                  file=sys.stderr)
            return 127
        except PermissionError as error:
            print(f"redis_py_lock: cannot run {command[0]!r}: {error.strerror}",
                  file=sys.stderr)
            return 126
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, lambda n, _frame: child.send_signal(n))
        status = child.wait()
    finally:
        try:
            lock.release()
        except redis.RedisError as error:
            print(f"redis_py_lock: release: {error}", file=sys.stderr)
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
