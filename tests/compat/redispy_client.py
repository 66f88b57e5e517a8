#!/usr/bin/python3
"""A small application that takes locks with redis-py's Lock (Debian's
python3-redis), for tests/cli/compat_string.bats: the other side of
`rlock --compat string`.

Run with /usr/bin/python3 (the system's, which has python3-redis).

  redispy_client.py URL hold NAME TIMEOUT SECONDS [READY_FILE]
      takes r.lock(NAME, timeout=TIMEOUT) (blocking), touches READY_FILE,
      holds it SECONDS, touches READY_FILE.releasing, releases it; exit 0
  redispy_client.py URL try NAME
      one non-blocking acquire: exit 0 and release at once when it got the
      lock, exit 1 when it did not
  redispy_client.py URL probe NAME SECONDS INTERVAL OUT
      for SECONDS, a non-blocking acquire every INTERVAL; appends 'got' or
      'busy' to OUT for each (and releases at once when it got it)
  redispy_client.py URL critical NAME TIMEOUT DIR RUNS
      RUNS times: takes the lock (blocking, polling as redis-py does), runs
      DIR/cs.sh DIR (tests/lib/contention.bash's critical section) with
      RLOCK_FENCE unset, releases
"""

import os
import subprocess
import sys
import time

import redis


def main(argv):
    url, mode, name = argv[1], argv[2], argv[3]
    client = redis.Redis.from_url(url)
    if mode == "hold":
        timeout, seconds = float(argv[4]), float(argv[5])
        lock = client.lock(name, timeout=timeout)
        lock.acquire(blocking=True)
        if len(argv) > 6:
            open(argv[6], "w").close()
        time.sleep(seconds)
        if len(argv) > 6:
            open(argv[6] + ".releasing", "w").close()
        lock.release()
        return 0
    if mode == "try":
        lock = client.lock(name, timeout=10)
        if lock.acquire(blocking=False):
            lock.release()
            return 0
        return 1
    if mode == "probe":
        seconds, interval, out = float(argv[4]), float(argv[5]), argv[6]
        end = time.monotonic() + seconds
        with open(out, "a") as log:
            while time.monotonic() < end:
                lock = client.lock(name, timeout=10)
                if lock.acquire(blocking=False):
                    lock.release()
                    log.write("got\n")
                else:
                    log.write("busy\n")
                log.flush()
                time.sleep(interval)
        return 0
    if mode == "critical":
        timeout, directory, runs = float(argv[4]), argv[5], int(argv[6])
        env = dict(os.environ)
        env.pop("RLOCK_FENCE", None)
        for _ in range(runs):
            lock = client.lock(name, timeout=timeout, sleep=0.01)
            lock.acquire(blocking=True)
            try:
                subprocess.run([directory + "/cs.sh", directory], env=env,
                               check=True)
            finally:
                lock.release()
        return 0
    print("unknown mode " + mode, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
