#pragma once

#include <rlock/lock/keys.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/util/clock.hpp>

#include <cstdint>
#include <string>

namespace rlock::lock {

// Who holds a lock, as `status` shows it.
struct Holder {
  std::string host;
  long pid = 0;
  std::string user;
  std::string command;
};

// The answer to one acquire attempt.
struct AcquireAttempt {
  bool acquired = false;
  // When acquired: the fencing token.
  std::int64_t fence = 0;
  // When the request was sent: the lease counts from here.
  BootTime sent{};
  // When not acquired: look again after this at the latest (-1: no hint).
  std::int64_t retry_ms = -1;
  // When not acquired: "user@host:pid", or who is ahead in the queue.
  std::string holder;
  // When not acquired: the holder's command line.
  std::string command;
  // When not acquired: 1-based place in the --fair queue, 0 outside it.
  std::int64_t place = 0;
  // When not acquired: the holder's lease length, 0 if unknown.
  std::int64_t holder_ttl_ms = 0;
};

// Tries once to take the lock with `token` for `ttl`. With a `queue_ttl`, a
// waiter that does not get it joins the FIFO queue (or refreshes its place
// there) for that long. Throws Error (unavailable) when Redis fails or
// answers with an error.
AcquireAttempt try_acquire(redis::Connection& connection,
                           const LockKeys& keys,
                           const std::string& token,
                           Duration ttl,
                           const Holder& holder,
                           Duration queue_ttl = Duration::zero());

// Takes a waiter that gives up out of the queue, waking the next one if the
// lock is free. Throws Error (unavailable) when Redis fails.
void leave_queue(redis::Connection& connection,
                 const LockKeys& keys,
                 const std::string& token);

// Extends the lease to `ttl` from now. Returns false when `token` no longer
// holds the lock. Throws Error (unavailable) when Redis fails.
bool renew(redis::Connection& connection,
           const LockKeys& keys,
           const std::string& token,
           Duration ttl);

// Deletes the lock if `token` holds it and wakes the next waiter. Returns
// false when it did not hold it. Throws Error (unavailable) when Redis fails.
bool release(redis::Connection& connection,
             const LockKeys& keys,
             const std::string& token);

} // namespace rlock::lock
