#pragma once

#include <rlock/lock/protocol.hpp>

#include <functional>
#include <optional>

namespace rlock::lock {

struct WaitOptions {
  bool nonblock = false;           // -n, or -w 0
  std::optional<Duration> timeout; // -w; none: wait forever
};

// Sleeps for up to the given time. Returns the number of the signal that
// ended the sleep early, or 0.
using InterruptibleSleep = std::function<int(Duration)>;

struct WaitOutcome {
  enum class Kind { acquired, timed_out, interrupted };

  Kind kind = Kind::timed_out;
  AcquireAttempt attempt; // the last attempt; the winning one when acquired
  int signal = 0;         // when interrupted
};

// Tries to acquire until it succeeds, the timeout runs out or a signal ends
// the wait. Between attempts it backs off with jitter, never past the
// holder's remaining lease nor past the deadline. Throws Error (unavailable)
// when Redis fails.
WaitOutcome wait_for_lock(redis::Connection& connection,
                          const LockKeys& keys,
                          const std::string& token,
                          Duration ttl,
                          const Holder& holder,
                          const WaitOptions& options,
                          const InterruptibleSleep& sleep);

} // namespace rlock::lock
