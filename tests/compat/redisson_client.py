#!/usr/bin/python3
"""A stand-in for Redisson's RLock, for rlock's --compat redisson tests.

Redisson is Java and cannot be installed here, so this client speaks its
wire protocol from Redisson's source, redisson/redisson at commit
66863978b (redisson-4.7.0-62), read in these files:

  redisson/src/main/java/org/redisson/RedissonLock.java
      tryLockInnerAsync (the lock script), unlockInnerAsync (the unlock
      script with its unlock latch key), tryLock(waitTime, ...) (subscribe to
      the channel, then try again and sleep on the latch for min(ttl, time
      left)), getChannelName()
  redisson/src/main/java/org/redisson/RedissonBaseLock.java
      getLockName(threadId) = <ServiceManager id>:<threadId>,
      getUnlockLatchName(requestId)
  redisson/src/main/java/org/redisson/RedissonObject.java
      prefixName: "<prefix>:" + NAME when NAME contains '{', else
      "<prefix>:{NAME}"
  redisson/src/main/java/org/redisson/pubsub/LockPubSub.java
      UNLOCK_MESSAGE = 0L (LongCodec: the bytes "0") releases one waiter
  redisson/src/main/java/org/redisson/renewal/LockTask.java, RenewalTask.java
      the watchdog: HEXISTS -> PEXPIRE internalLockLeaseTime, every
      internalLockLeaseTime / 3
  redisson/src/main/java/org/redisson/config/Config.java
      lockWatchdogTimeout = 30000 ms by default
  redisson/src/main/java/org/redisson/connection/ServiceManager.java
      id = UUID.randomUUID().toString()
  redisson/src/main/java/org/redisson/pubsub/PublishSubscribeService.java
      getPublishCommand(): SPUBLISH when sharded pub/sub is in use (a
      Cluster), else PUBLISH (--sharded here)

  redisson/src/main/java/org/redisson/connection/ClusterConnectionManager.java
  redisson/src/main/java/org/redisson/config/ClusterServersConfig.java
      on a Cluster, shardedSubscriptionMode AUTO: sharded pub/sub when
      PUBSUB SHARDNUMSUB answers (Redis 7), so unlock SPUBLISHes and the
      waiters SSUBSCRIBE (PublishSubscribeService.subscribeNoTimeout) on
      the channel's slot's node

URL is a redis:// URL, or redis+cluster://HOST:PORT[,...] (as rlock's): the
lock's scripts then go through redis-py's RedisCluster to NAME's master,
and the subscription to the master of the channel's slot (--sharded for
Redisson's sharded mode).

Usage:
  redisson_client.py URL NAME try [--wait S] [--hold S] [--watchdog MS]
      tryLock(wait) with the watchdog, hold for S seconds renewing, unlock.
      Prints one line per event on stdout:
        waiting (busy, subscribed to the channel: waits from now on)
        acquired after=<s> woken_by=<none|message|timer> messages=<n>
        failed after=<s> messages=<n>
        renewed | lost | unlocked | not-held result=<r>
      Exits 0 when it took and released the lock, 1 when tryLock failed,
      3 when the watchdog found the lock gone.
  redisson_client.py URL NAME probe
      one non-blocking tryLock(0) and, if taken, unlock at once; prints
      "acquired" or "busy ttl=<ms>"; exits 0 or 1.

Debian's python3-redis (run with /usr/bin/python3).
"""

import argparse
import os
import sys
import threading
import time
import uuid

import redis

LOCK_SCRIPT = (
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; "
    "end; "
    "return redis.call('pttl', KEYS[1]);"
)

UNLOCK_SCRIPT = (
    "local val = redis.call('get', KEYS[3]); "
    "if val ~= false then "
    "return tonumber(val);"
    "end; "
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then "
    "return nil;"
    "end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); "
    "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
    "return 0; "
    "else "
    "redis.call('del', KEYS[1]); "
    "redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); "
    "return 1; "
    "end; "
)

RENEW_SCRIPT = (
    "local result = {} "
    "for i = 1, #KEYS, 1 do "
    "if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then "
    "redis.call('pexpire', KEYS[i], ARGV[1]); "
    "table.insert(result, 1); "
    "else "
    "table.insert(result, 0); "
    "end; "
    "end; "
    "return result;"
)

UNLOCK_MESSAGE = b"0"


def prefix_name(prefix, name):
    if "{" in name:
        return prefix + ":" + name
    return prefix + ":{" + name + "}"


def say(line):
    print(line, flush=True)


def connect(url):
    """The client for URL: redis-py's RedisCluster for a redis+cluster://
    URL (seeded by its first node), else redis.Redis."""
    cluster = "redis+cluster://"
    if not url.startswith(cluster):
        return redis.Redis.from_url(url)
    from redis.cluster import RedisCluster
    seed = url[len(cluster):].split(",")[0].split("/")[0]
    host, port = seed.rsplit(":", 1)
    return RedisCluster(host=host, port=int(port))


class ShardedPubSub:
    """SSUBSCRIBE on a connection of its own: redis-py 4.3.4's PubSub knows
    no shard channels (its get_message() waits for a SUBSCRIBE first)."""

    def __init__(self, client):
        self.conn = client.connection_pool.get_connection("SSUBSCRIBE")

    def ssubscribe(self, channel):
        self.conn.send_command("SSUBSCRIBE", channel)

    def get_message(self, timeout):
        if not self.conn.can_read(timeout=timeout):
            return None
        reply = self.conn.read_response()
        return {"type": reply[0].decode(), "channel": reply[1],
                "data": reply[2]}

    def close(self):
        self.conn.disconnect()


class Lock:
    def __init__(self, url, name, watchdog_ms, sharded):
        self.r = connect(url)
        self.name = name
        self.channel = prefix_name("redisson_lock__channel", name)
        self.lease_ms = watchdog_ms
        self.sharded = sharded
        self.id = os.environ.get("REDISSON_ID") or str(uuid.uuid4())
        self.thread_id = threading.get_ident() % 100000
        self.lock_name = "%s:%d" % (self.id, self.thread_id)
        self.messages = 0

    def try_acquire(self):
        # tryAcquire with leaseTime -1: the watchdog's lease.
        return self.r.eval(LOCK_SCRIPT, 1, self.name, self.lease_ms,
                           self.lock_name)

    def try_lock(self, wait_s):
        start = time.monotonic()
        left_ms = wait_s * 1000.0
        ttl = self.try_acquire()
        if ttl is None:
            return True, "none"
        left_ms -= (time.monotonic() - start) * 1000.0
        if left_ms <= 0:
            return False, None
        # subscribe(threadId): the latch is released by each UNLOCK_MESSAGE.
        if self.sharded:
            pubsub = ShardedPubSub(self.subscriber())
            pubsub.ssubscribe(self.channel)
        else:
            pubsub = self.subscriber().pubsub()
            pubsub.subscribe(self.channel)
        # Wait for the subscription to be confirmed, as subscribeFuture.get().
        while True:
            m = pubsub.get_message(timeout=max(left_ms, 1) / 1000.0)
            if m and m["type"] in ("subscribe", "ssubscribe"):
                break
            if time.monotonic() - start > wait_s:
                return False, None
        say("waiting")
        woken_by = "timer"
        try:
            while True:
                ttl = self.try_acquire()
                if ttl is None:
                    return True, woken_by
                left_ms = wait_s * 1000.0 - (time.monotonic() - start) * 1000.0
                if left_ms <= 0:
                    return False, None
                wait_ms = ttl if 0 <= ttl < left_ms else left_ms
                # getLatch().tryAcquire(wait_ms): one permit per message.
                deadline = time.monotonic() + wait_ms / 1000.0
                woken_by = "timer"
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    m = pubsub.get_message(timeout=remaining)
                    if m and m["type"] in ("message", "smessage") \
                            and m["data"] == UNLOCK_MESSAGE:
                        self.messages += 1
                        woken_by = "message"
                        break
        finally:
            pubsub.close()

    def subscriber(self):
        """The server to subscribe on: the master of the channel's slot on
        a Cluster (which SSUBSCRIBE needs), else the one server."""
        if not hasattr(self.r, "get_node_from_key"):
            return self.r
        node = self.r.get_node_from_key(self.channel)
        return redis.Redis(host=node.host, port=node.port)

    def renew(self):
        got = self.r.eval(RENEW_SCRIPT, 1, self.name, self.lease_ms,
                          self.lock_name)
        return got == [1]

    def unlock(self):
        request_id = str(uuid.uuid4())
        latch = prefix_name("redisson_unlock_latch", self.name) + ":" + \
            request_id
        publish = "spublish" if self.sharded else "publish"
        got = self.r.eval(UNLOCK_SCRIPT, 3, self.name, self.channel, latch,
                          0, self.lease_ms, self.lock_name, publish, 10000)
        self.r.delete(latch)
        return got


def hold(lock, seconds):
    """Holds for `seconds`, renewing every lease/3 like the watchdog."""
    end = time.monotonic() + seconds
    period = lock.lease_ms / 3000.0
    while True:
        now = time.monotonic()
        if now >= end:
            return True
        time.sleep(min(period, end - now))
        if time.monotonic() >= end:
            return True
        if not lock.renew():
            say("lost")
            return False
        say("renewed")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("name")
    p.add_argument("action", choices=["try", "probe"])
    p.add_argument("--wait", type=float, default=0.0)
    p.add_argument("--hold", type=float, default=0.0)
    p.add_argument("--watchdog", type=int, default=30000,
                   help="lockWatchdogTimeout in ms")
    p.add_argument("--sharded", action="store_true",
                   help="SSUBSCRIBE/SPUBLISH, as Redisson on a Cluster")
    a = p.parse_args()
    lock = Lock(a.url, a.name, a.watchdog, a.sharded)
    if a.action == "probe":
        ttl = lock.try_acquire()
        if ttl is None:
            lock.unlock()
            say("acquired")
            return 0
        say("busy ttl=%d" % ttl)
        return 1
    start = time.monotonic()
    ok, woken_by = lock.try_lock(a.wait)
    took = time.monotonic() - start
    if not ok:
        say("failed after=%.2f messages=%d" % (took, lock.messages))
        return 1
    say("acquired after=%.2f woken_by=%s messages=%d"
        % (took, woken_by, lock.messages))
    if not hold(lock, a.hold):
        return 3
    got = lock.unlock()
    say("unlocked" if got == 1 else "not-held result=%r" % (got,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
