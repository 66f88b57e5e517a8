#include <rlock/lock/backoff.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

using namespace std::chrono_literals;

// How long to sleep before the next attempt, or nothing when the deadline
// has passed.
std::optional<Duration>
next_delay(Backoff& backoff,
           const AcquireAttempt& attempt,
           std::optional<BootTime> deadline) {
  auto delay = backoff.next();
  if (attempt.pttl_ms >= 0) {
    // The lease runs out by then unless renewed: look again right after.
    delay = std::min<Duration>(
        delay, std::chrono::milliseconds(attempt.pttl_ms) + 5ms);
  }
  if (deadline) {
    const auto left = *deadline - boot_now();
    if (left <= Duration::zero()) {
      return std::nullopt;
    }
    delay = std::min(delay, left);
  }
  return delay;
}

// Says whom we wait for: once, and again when the holder changes.
void
report_holder(const std::string& name,
              const AcquireAttempt& attempt,
              std::string& last_reported) {
  const std::string who = attempt.holder + " (" + attempt.command + ")";
  if (who != last_reported) {
    log::info("waiting for " + quote(name) + " held by " + who);
    last_reported = who;
  }
}

} // namespace

WaitOutcome
wait_for_lock(redis::Connection& connection,
              const LockKeys& keys,
              const std::string& token,
              Duration ttl,
              const Holder& holder,
              const WaitOptions& options,
              const InterruptibleSleep& sleep) {
  const auto start = boot_now();
  std::optional<BootTime> deadline;
  if (options.timeout) {
    deadline = start + *options.timeout;
  }
  Backoff backoff(20ms, 1s, 1ms);
  std::string last_reported;
  WaitOutcome outcome;
  while (true) {
    outcome.attempt = try_acquire(connection, keys, token, ttl, holder);
    if (outcome.attempt.acquired) {
      outcome.kind = WaitOutcome::Kind::acquired;
      return outcome;
    }
    if (options.nonblock) {
      return outcome;
    }
    report_holder(keys.name, outcome.attempt, last_reported);
    const auto delay = next_delay(backoff, outcome.attempt, deadline);
    if (!delay) {
      return outcome;
    }
    if (const int signal = sleep(*delay)) {
      outcome.kind = WaitOutcome::Kind::interrupted;
      outcome.signal = signal;
      return outcome;
    }
  }
}

} // namespace rlock::lock
