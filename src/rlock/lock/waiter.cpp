#include <rlock/lock/backoff.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

using namespace std::chrono_literals;

// A queued waiter refreshes its place this often.
constexpr Duration k_queue_refresh = k_queue_entry_ttl / 2;

// Slack after the holder's lease should have run out, so that the server has
// expired it when we look.
constexpr Duration k_expiry_slack = 5ms;

std::string
ordinal(std::int64_t n) {
  const auto tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

class Waiter {
public:
  Waiter(std::function<AcquireAttempt()> attempt,
         const LockKeys& keys,
         const std::string& token,
         Duration ttl,
         const WaitOptions& options,
         const WaitHooks& hooks,
         std::function<void()> leave)
      : m_attempt(std::move(attempt)), m_keys(keys), m_token(token), m_ttl(ttl),
        m_options(options), m_hooks(hooks), m_leave(std::move(leave)) {
    if (options.timeout) {
      m_deadline = boot_now() + *options.timeout;
    }
  }

  WaitOutcome run();

private:
  std::optional<Duration> next_delay(const AcquireAttempt& attempt);
  void report(const AcquireAttempt& attempt);
  void subscribe();
  void take_wakeups();
  void give_up();

  std::function<AcquireAttempt()> m_attempt;
  const LockKeys& m_keys;
  const std::string& m_token;
  Duration m_ttl;
  const WaitOptions& m_options;
  const WaitHooks& m_hooks;
  std::function<void()> m_leave;
  std::optional<BootTime> m_deadline;
  std::optional<redis::Subscription> m_subscription;
  std::optional<Backoff> m_safety_net;
  std::string m_last_report;
};

WaitOutcome
Waiter::run() {
  WaitOutcome outcome;
  outcome.attempt = m_attempt();
  if (outcome.attempt.acquired) {
    outcome.kind = WaitOutcome::Kind::acquired;
    return outcome;
  }
  if (m_options.nonblock) {
    return outcome;
  }
  // Subscribed first, then asked again: a release between the first attempt
  // and the subscription is seen by the second attempt, any later one by a
  // message. Uncontended runs never pay for the subscription.
  subscribe();
  while (true) {
    outcome.attempt = m_attempt();
    if (outcome.attempt.acquired) {
      outcome.kind = WaitOutcome::Kind::acquired;
      return outcome;
    }
    report(outcome.attempt);
    const auto delay = next_delay(outcome.attempt);
    if (!delay) {
      give_up();
      return outcome;
    }
    if (const int signal = m_hooks.sleep(m_subscription->fd(), *delay)) {
      give_up();
      outcome.kind = WaitOutcome::Kind::interrupted;
      outcome.signal = signal;
      return outcome;
    }
    // Woken by a message, or the delay has passed: look again either way.
    take_wakeups();
  }
}

// Empties the subscription. A broken one is opened again; the attempt that
// follows covers a message lost meanwhile.
void
Waiter::take_wakeups() {
  try {
    m_subscription->take_messages();
  } catch (const Error& e) {
    log::info(std::string(e.what()) + "; subscribing again");
    m_subscription.reset();
    subscribe();
  }
}

void
Waiter::subscribe() {
  m_subscription.emplace(m_hooks.subscribe(
      {m_keys.released_channel(), m_keys.wake_channel(m_token)}));
}

// How long to sleep before the next attempt, unless a message comes first;
// nothing when the deadline has passed.
std::optional<Duration>
Waiter::next_delay(const AcquireAttempt& attempt) {
  if (!m_safety_net) {
    const Duration holder_ttl =
        attempt.holder_ttl_ms > 0
            ? Duration(std::chrono::milliseconds(attempt.holder_ttl_ms))
            : m_ttl;
    const Duration span = std::clamp<Duration>(holder_ttl / 3, 50ms, 10s);
    m_safety_net.emplace(span / 2, span, span / 2);
  }
  Duration delay = m_safety_net->next();
  if (attempt.retry_ms >= 0) {
    delay = std::min<Duration>(
        delay, std::chrono::milliseconds(attempt.retry_ms) + k_expiry_slack);
  }
  if (m_options.fair) {
    delay = std::min(delay, k_queue_refresh);
  }
  if (m_deadline) {
    const auto left = *m_deadline - boot_now();
    if (left <= Duration::zero()) {
      return std::nullopt;
    }
    delay = std::min(delay, left);
  }
  return delay;
}

// Says whom we wait for, since when, and our place in line: once, and again
// when the holder or the place changes.
void
Waiter::report(const AcquireAttempt& attempt) {
  std::string who = printable(attempt.holder);
  if (!attempt.command.empty()) {
    who += " (" + printable(attempt.command) + ")";
  }
  const std::string key = who + "/" + std::to_string(attempt.place);
  if (key == m_last_report) {
    return;
  }
  m_last_report = key;
  std::string text = "waiting for " + quote(m_keys.name) + " held by " + who;
  if (attempt.held_ms > 0) {
    text += ", " + format_duration(std::chrono::milliseconds(attempt.held_ms));
  }
  if (attempt.place > 0) {
    text += "; " + ordinal(attempt.place) + " in line";
  }
  log::info(text);
  events::emit("waiting",
               m_keys.name,
               {{"holder", attempt.holder},
                {"command", attempt.command},
                {"held_ms", attempt.held_ms},
                {"place", attempt.place}});
}

// Leaves the queue, so that nobody waits for a waiter that is gone.
void
Waiter::give_up() {
  if (!m_leave) {
    return;
  }
  try {
    m_leave();
  } catch (const Error& e) {
    log::warning(std::string(e.what()) + "; the queue entry expires within "
                 + format_duration(k_queue_entry_ttl));
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
              const WaitHooks& hooks) {
  const Duration queue_ttl =
      options.fair ? k_queue_entry_ttl : Duration::zero();
  auto attempt = [&] {
    return try_acquire(connection, keys, token, ttl, holder, queue_ttl);
  };
  std::function<void()> leave;
  if (options.fair) {
    leave = [&] { leave_queue(connection, keys, token); };
  }
  return Waiter(attempt, keys, token, ttl, options, hooks, leave).run();
}

WaitOutcome
wait_until_free(redis::Connection& connection,
                const LockKeys& keys,
                const WaitOptions& options,
                const WaitHooks& hooks) {
  // Only the released channel matters; the token names no wake channel.
  static const std::string k_no_token = "-";
  return Waiter([&] { return peek(connection, keys); },
                keys,
                k_no_token,
                std::chrono::seconds(30),
                options,
                hooks,
                nullptr)
      .run();
}

} // namespace rlock::lock
