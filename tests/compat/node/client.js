// Test-only client for tests/cli/compat_node.bats: node `redlock` (4.2.0,
// mike-marcacci/node-redlock: SET NX PX on each server, compare-and-DEL to
// release, compare-and-PEXPIRE to extend; keys as given, no prefix) over
// ioredis, as an application takes the lock that `rlock --compat string`
// shares. With --mutex, redis-semaphore (5.6.2, swarthy/redis-semaphore):
// its Mutex on one URL, its RedlockMutex on several (a majority of them),
// whose key is `mutex:NAME` (lib/RedisMutex.js, lib/RedlockMutex.js), taken
// with SET NX PX (lib/mutex/acquire.js), renewed by its own refresh timer
// with compare-and-PEXPIRE (lib/mutex/refresh.js) and released with
// compare-and-DEL (lib/mutex/release.js).
//
//   node client.js [--mutex [--wait MS]] hold NAME TTL_MS HOLD_MS URL...
//       takes NAME (no retries), prints "acquired", keeps it HOLD_MS while
//       extending it every TTL_MS/3, releases it, prints "released";
//       exits 1 with "busy" when it is held. With --mutex, a renewal that
//       finds the lock lost prints "lost" and exits 3.
//   node client.js [--mutex [--wait MS]] probe NAME URL...
//       one attempt: prints "acquired" (and releases at once) or "busy";
//       exits 0 or 1.
//   --wait MS: redis-semaphore's blocking acquire instead of one attempt
//       (a try every 50 ms for up to MS).
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');
const { Mutex, RedlockMutex } = require('redis-semaphore');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// redis-semaphore: true when taken (its lock then in *lock), false when busy.
async function mutexRun(action, name, ttl, hold, wait, clients) {
  const options = {
    lockTimeout: ttl,
    acquireTimeout: wait > 0 ? wait : ttl,
    acquireAttemptsLimit: wait > 0 ? Number.POSITIVE_INFINITY : 1,
    retryInterval: 50,
    refreshInterval: action === 'hold' ? Math.round(ttl / 3) : 0,
    onLockLost: () => {
      console.log('lost');
      process.exit(3);
    },
  };
  const mutex =
    clients.length === 1
      ? new Mutex(clients[0], name, options)
      : new RedlockMutex(clients, name, options);
  if (!(await mutex.tryAcquire())) {
    return false;
  }
  console.log('acquired');
  await sleep(hold);
  await mutex.release();
  return true;
}

async function redlockRun(name, ttl, hold, clients) {
  const redlock = new Redlock(clients, { retryCount: 0 });
  redlock.on('clientError', () => {});
  let lock;
  try {
    lock = await redlock.lock(name, ttl);
  } catch (error) {
    if (error instanceof Redlock.LockError) {
      return false;
    }
    throw error;
  }
  console.log('acquired');
  const end = Date.now() + hold;
  while (Date.now() < end) {
    await sleep(Math.min(ttl / 3, end - Date.now()));
    if (Date.now() < end) {
      lock = await lock.extend(ttl);
    }
  }
  await lock.unlock();
  return true;
}

async function main() {
  let args = process.argv.slice(2);
  const mutex = args[0] === '--mutex';
  if (mutex) {
    args = args.slice(1);
  }
  let wait = 0;
  if (mutex && args[0] === '--wait') {
    wait = Number(args[1]);
    args = args.slice(2);
  }
  const [action, name, ...rest] = args;
  let ttl = 10000;
  let hold = 0;
  let urls = rest;
  if (action === 'hold') {
    ttl = Number(rest[0]);
    hold = Number(rest[1]);
    urls = rest.slice(2);
  } else if (action !== 'probe') {
    throw new Error('usage: client.js [--mutex [--wait MS]] hold|probe NAME ...');
  }
  const clients = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
  try {
    const taken = mutex
      ? await mutexRun(action, name, ttl, hold, wait, clients)
      : await redlockRun(name, ttl, hold, clients);
    if (!taken) {
      console.log('busy');
      return 1;
    }
    if (action === 'hold') {
      console.log('released');
    }
  } finally {
    clients.forEach((client) => client.disconnect());
  }
  return 0;
}

main().then(
  (status) => process.exit(status),
  (error) => {
    console.error(String(error));
    process.exit(2);
  },
);
