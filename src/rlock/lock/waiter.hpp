#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/lock/store.hpp>

#include <functional>
#include <optional>

namespace rlock::lock {

// How long a --fair waiter's place in the queue lasts unless refreshed; a
// waiter that died leaves the queue after at most this long.
inline constexpr Duration k_queue_entry_ttl = std::chrono::seconds(10);

// Returns the safety net's span for a holder whose lease is `holder_ttl_ms`
// long (0: unknown, then `own_ttl`): a third of it, within [50ms, 10s]. The
// waiter sleeps a random time in [span/2, span] for a lost wake-up message.
Duration safety_span(std::int64_t holder_ttl_ms, Duration own_ttl);

struct WaitOptions {
  bool nonblock = false;           // -n, or -w 0
  std::optional<Duration> timeout; // -w; none: wait forever
  bool fair = false;               // --fair: wait in the FIFO queue
};

// What the waiter needs from its caller.
struct WaitHooks {
  // Waits up to the given time for `fd` to turn readable (-1: none).
  // Returns the number of a signal that ended the wait, or 0.
  std::function<int(int fd, Duration timeout)> sleep;
  // The clock deadlines are measured on; boot_now() when empty.
  std::function<BootTime()> now;
  // Called once, before the first sleep: work worth doing only for a run
  // that has to wait (none when empty).
  std::function<void()> before_first_sleep;
};

struct WaitOutcome {
  // A lock held under another limit (Busy::limit_conflict) ends the wait at
  // once, as timed_out.
  enum class Kind { acquired, timed_out, interrupted };

  Kind kind = Kind::timed_out;
  // The last attempt: Granted when acquired, else Busy (who holds it).
  AcquireAttempt attempt;
  int signal = 0; // when interrupted
  // An attempt failed on the way: its acquire may have run on the server
  // with the reply lost, so the lock may be ours unless we acquired.
  bool uncertain = false;
};

// Acquires the lock for `request`, waiting for it unless nonblock. A waiter
// is woken by the release (the store's wake-ups), by the holder's lease
// running out (it sleeps until then, never polling), or, as a safety net
// against a lost wake-up, after a jittered delay of a third of the holder's
// TTL at most. When the store fails in a way that may pass
// (redis::may_pass()) while it waits, it connects again, backing off, until
// the wait's deadline; an error before the wait, a lasting one or one past
// the deadline is thrown.
WaitOutcome wait_for_lock(LockSession& store,
                          const LockRequest& request,
                          const WaitOptions& options,
                          const WaitHooks& hooks);

// How a wait for a lock to be free ended.
struct FreeWaitOutcome {
  enum class Kind { free, timed_out, interrupted };

  Kind kind = Kind::timed_out;
  PeekResult look; // the last look: Free when free, else who holds it
  int signal = 0;  // when interrupted
};

// Waits, as wait_for_lock() does, until lock `name` is free, without taking
// it (rlock wait).
FreeWaitOutcome wait_until_free(LockSession& store,
                                const std::string& name,
                                const WaitOptions& options,
                                const WaitHooks& hooks);

} // namespace rlock::lock
