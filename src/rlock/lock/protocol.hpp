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
  std::int64_t fence = 0; // when acquired
  BootTime sent{}; // when the request was sent: the lease counts from here
  std::int64_t pttl_ms =
      0;               // when held by someone else: its time left, -1 if none
  std::string holder;  // when held: "user@host:pid"
  std::string command; // when held: the holder's command line
};

// Tries once to take the lock with `token` for `ttl`. Throws Error
// (unavailable) when Redis fails or answers with an error.
AcquireAttempt try_acquire(redis::Connection& connection,
                           const LockKeys& keys,
                           const std::string& token,
                           Duration ttl,
                           const Holder& holder);

// Extends the lease to `ttl` from now. Returns false when `token` no longer
// holds the lock. Throws Error (unavailable) when Redis fails.
bool renew(redis::Connection& connection,
           const LockKeys& keys,
           const std::string& token,
           Duration ttl);

// Deletes the lock if `token` holds it. Returns false when it did not.
// Throws Error (unavailable) when Redis fails.
bool release(redis::Connection& connection,
             const LockKeys& keys,
             const std::string& token);

} // namespace rlock::lock
