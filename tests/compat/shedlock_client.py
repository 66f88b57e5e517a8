#!/usr/bin/python3
"""An emulated ShedLock node for tests/cli/compat_shedlock.bats, written from
ShedLock's Redis provider: lukas-krecan/ShedLock,
providers/redis/shedlock-support-redis/src/main/java/net/javacrumbs/shedlock/
provider/redis/support/InternalRedisLockProvider.java (key
"%s:%s:%s" % (keyPrefix "job-lock", env "default", name); value
"ADDED:%s@%s:%s" % (ISO instant, hostname, UUID); lock: SET NX PX
lockAtMostFor; unlock with lockAtLeastFor passed and safeUpdate off: DEL
without checking the value). ShedLock never waits: a locked task is skipped.
Java is not installable here, so this speaks the same commands through
redis-py (Debian's python3-redis); run it with /usr/bin/python3.

  shedlock_client.py URL ENV hold NAME AT_MOST_S SECONDS [READY_FILE]
      locks (exit 3 when locked elsewhere: the task is skipped), touches
      READY_FILE, holds SECONDS, touches READY_FILE.releasing, unlocks (DEL)
  shedlock_client.py URL ENV try NAME
      locks and unlocks at once: exit 0, or 3 when locked elsewhere
  shedlock_client.py URL ENV unlock NAME
      ShedLock's unlock of a task that overran lockAtMostFor: DEL, unchecked
"""

import datetime
import socket
import sys
import time
import uuid

import redis


def key_of(env, name):
    return "%s:%s:%s" % ("job-lock", env, name)


def value_now():
    now = datetime.datetime.now(datetime.timezone.utc)
    instant = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (
        now.microsecond // 1000)
    return "ADDED:%s@%s:%s" % (instant, socket.gethostname(), uuid.uuid4())


def lock(client, key, at_most_s):
    return bool(client.set(key, value_now(), nx=True,
                           px=int(at_most_s * 1000)))


def main(argv):
    url, env, mode, name = argv[1], argv[2], argv[3], argv[4]
    client = redis.Redis.from_url(url)
    key = key_of(env, name)
    if mode == "hold":
        at_most, seconds = float(argv[5]), float(argv[6])
        if not lock(client, key, at_most):
            return 3
        if len(argv) > 7:
            open(argv[7], "w").close()
        time.sleep(seconds)
        if len(argv) > 7:
            open(argv[7] + ".releasing", "w").close()
        client.delete(key)
        return 0
    if mode == "try":
        if not lock(client, key, 10):
            return 3
        client.delete(key)
        return 0
    if mode == "unlock":
        client.delete(key)
        return 0
    print("unknown mode " + mode, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
