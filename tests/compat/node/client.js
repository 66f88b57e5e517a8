// Test-only client for tests/cli/compat_node.bats: node `redlock` (4.2.0,
// mike-marcacci/node-redlock: SET NX PX on each server, compare-and-DEL to
// release, compare-and-PEXPIRE to extend; keys as given, no prefix) over
// ioredis, as an application takes the lock that `rlock --compat string`
// shares.
//
//   node client.js hold NAME TTL_MS HOLD_MS URL...
//       takes NAME (no retries), prints "acquired", keeps it HOLD_MS while
//       extending it every TTL_MS/3, releases it, prints "released";
//       exits 1 with "busy" when it is held.
//   node client.js probe NAME URL...
//       one attempt: prints "acquired" (and releases at once) or "busy";
//       exits 0 or 1.
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');

async function main() {
  const [action, name, ...rest] = process.argv.slice(2);
  let ttl = 10000;
  let hold = 0;
  let urls = rest;
  if (action === 'hold') {
    ttl = Number(rest[0]);
    hold = Number(rest[1]);
    urls = rest.slice(2);
  } else if (action !== 'probe') {
    throw new Error('usage: client.js hold|probe NAME ...');
  }
  const clients = urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
  const redlock = new Redlock(clients, { retryCount: 0 });
  redlock.on('clientError', () => {});
  let status = 0;
  try {
    let lock;
    try {
      lock = await redlock.lock(name, ttl);
    } catch (error) {
      if (error instanceof Redlock.LockError) {
        console.log('busy');
        status = 1;
        return status;
      }
      throw error;
    }
    console.log('acquired');
    const end = Date.now() + hold;
    while (Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(ttl / 3, end - Date.now())));
      if (Date.now() < end) {
        lock = await lock.extend(ttl);
      }
    }
    await lock.unlock();
    if (action === 'hold') {
      console.log('released');
    }
  } finally {
    clients.forEach((client) => client.disconnect());
  }
  return status;
}

main().then(
  (status) => process.exit(status),
  (error) => {
    console.error(String(error));
    process.exit(2);
  },
);
