#pragma once

#include <rlock/lock/protocol.hpp>
#include <rlock/redis/subscription.hpp>

#include <functional>
#include <optional>

namespace rlock::lock {

// How long a --fair waiter's place in the queue lasts unless refreshed; a
// waiter that died leaves the queue after at most this long.
inline constexpr Duration k_queue_entry_ttl = std::chrono::seconds(10);

struct WaitOptions {
  bool nonblock = false;           // -n, or -w 0
  std::optional<Duration> timeout; // -w; none: wait forever
  bool fair = false;               // --fair: wait in the FIFO queue
};

// What the waiter needs from its caller.
struct WaitHooks {
  // Opens a subscription to `channels` on a connection of its own.
  std::function<redis::Subscription(const std::vector<std::string>& channels)>
      subscribe;
  // Waits up to the given time for `fd` to turn readable. Returns the number
  // of a signal that ended the wait, or 0.
  std::function<int(int fd, Duration timeout)> sleep;
  // Replaces the waiter's connection by a new one, after it failed.
  std::function<void()> reconnect;
};

struct WaitOutcome {
  enum class Kind { acquired, timed_out, interrupted };

  Kind kind = Kind::timed_out;
  AcquireAttempt attempt; // the last attempt; the winning one when acquired
  int signal = 0;         // when interrupted
  // Some call failed with its outcome unknown (it may have been an acquire
  // the server executed): unless acquired, the caller releases the token.
  bool maybe_acquired = false;
};

// The safety net's delay before looking again without a message: a third of
// the TTL of the holder seen by the latest attempt (our own TTL when none
// was seen), within [50 ms, 10 s].
Duration safety_net_span(std::int64_t holder_ttl_ms, Duration own_ttl);

// Acquires the lock, waiting for it unless nonblock. A waiter is woken by the
// release (pub/sub, published by the release script), by the holder's lease
// running out (it sleeps until then, never polling), or, as a safety net
// against a lost message, after a jittered delay of a third of the holder's
// TTL at most. When Redis fails while it waits (redis::TransientError), it
// connects again, backing off, until the wait's deadline; an error before the
// wait, a lasting one or one past the deadline is thrown (Error, unavailable).
WaitOutcome wait_for_lock(redis::Connection& connection,
                          const LockKeys& keys,
                          const std::string& token,
                          Duration ttl,
                          const Holder& holder,
                          const WaitOptions& options,
                          const WaitHooks& hooks);

// Waits, as wait_for_lock() does, until the lock is free, without taking it
// (rlock wait): `acquired` in the outcome means "seen free". Throws Error
// (unavailable) when Redis fails.
WaitOutcome wait_until_free(redis::Connection& connection,
                            const LockKeys& keys,
                            const WaitOptions& options,
                            const WaitHooks& hooks);

} // namespace rlock::lock
