#include <rlock/lock/describe.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

using namespace std::chrono_literals;

// A queued waiter refreshes its place this often.
constexpr Duration k_queue_refresh = k_queue_entry_ttl / 2;

// Backing off between attempts to reach Redis again while waiting.
constexpr Duration k_first_retry = 100ms;
constexpr Duration k_last_retry = 2s;

// Looking again at a holder that sends no wake-up (Busy::polled).
constexpr Duration k_first_poll = 50ms;
constexpr Duration k_last_poll = 1s;

// Slack after the holder's lease should have run out, so that the server has
// expired it when we look.
constexpr Duration k_expiry_slack = 5ms;

// Returns a random delay in [span/2, span], so that waiters that came
// together do not look again together.
Duration
jittered(Duration span) {
  const auto half = span / 2;
  return half
         + Duration(
             random_below_or_equal(static_cast<std::uint64_t>(half.count())));
}

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

} // namespace

Duration
safety_span(std::int64_t holder_ttl_ms, Duration own_ttl) {
  const Duration holder_ttl =
      holder_ttl_ms > 0 ? from_milliseconds(holder_ttl_ms) : own_ttl;
  return std::clamp<Duration>(holder_ttl / 3, 50ms, 10s);
}

namespace {

// How a Waiter's wait ended, with its last answer: an AcquireAttempt when it
// waits to take the lock, a PeekResult when it waits for the lock to be free.
template <class Answer>
struct Ending {
  using Kind = WaitOutcome::Kind; // `acquired`: the answer is not Busy
  Kind kind = Kind::timed_out;
  Answer attempt;
  int signal = 0;
  bool uncertain = false;
};

template <class Answer>
class Waiter {
public:
  using Outcome = Ending<Answer>;

  Waiter(std::function<Answer(bool waited)> attempt,
         std::function<std::int64_t()> remaining,
         std::function<std::unique_ptr<Wakeups>()> watch,
         LockSession& store,
         const std::string& name,
         Duration ttl,
         const WaitOptions& options,
         const WaitHooks& hooks,
         std::function<void()> leave,
         bool shared = false)
      : m_attempt(std::move(attempt)), m_remaining(std::move(remaining)),
        m_watch(std::move(watch)), m_store(store), m_name(name), m_ttl(ttl),
        m_options(options), m_hooks(hooks), m_leave(std::move(leave)),
        m_shared(shared) {
    if (options.timeout) {
      m_deadline = now() + *options.timeout;
    }
  }

  Outcome run();

private:
  struct Delay {
    Duration delay;
    bool safety_net_only; // no other reason to look again then
  };

  BootTime now() const;
  int sleep(int fd, Duration timeout);
  std::optional<Outcome> wait(Outcome& outcome, bool& ask);
  std::optional<Outcome> recover(const redis::Failure& error, Outcome& outcome);
  std::optional<Delay> next_delay(const Busy& busy);
  void report(const Busy& busy);
  void subscribe();
  bool listen();
  int take_wakeups();
  void drop_broken_source(const redis::Failure& failure);
  void give_up();

  std::function<Answer(bool waited)> m_attempt;
  std::function<std::int64_t()> m_remaining; // the lock's PTTL
  std::function<std::unique_ptr<Wakeups>()> m_watch;
  LockSession& m_store;
  const std::string& m_name;
  Duration m_ttl;
  const WaitOptions& m_options;
  const WaitHooks& m_hooks;
  std::function<void()> m_leave;
  bool m_shared = false; // a shared hold is asked for
  bool m_queued = false; // an attempt may have taken a place in the queue
  std::optional<BootTime> m_deadline;
  std::unique_ptr<Wakeups> m_wakeups;
  std::string m_last_report;
  bool m_slept = false;
  Duration m_poll{}; // the backoff of a polled holder (Busy::polled)
};

template <class Answer>
BootTime
Waiter<Answer>::now() const {
  return m_hooks.now ? m_hooks.now() : boot_now();
}

template <class Answer>
int
Waiter<Answer>::sleep(int fd, Duration timeout) {
  if (!m_slept && m_hooks.before_first_sleep) {
    m_hooks.before_first_sleep();
  }
  m_slept = true;
  return m_hooks.sleep(fd, timeout);
}

template <class Answer>
typename Waiter<Answer>::Outcome
Waiter<Answer>::run() {
  Outcome outcome;
  try {
    outcome.attempt = m_attempt(false);
  } catch (const redis::Failure& error) {
    // Nothing listening at the start is most likely a wrong URL: said at
    // once. A failover under way is waited out as a held lock is.
    if (m_options.nonblock || !redis::failover_under_way(error)) {
      throw;
    }
    if (auto end = recover(error, outcome)) {
      return *end;
    }
  }
  const auto* busy = std::get_if<Busy>(&outcome.attempt);
  if (!busy) {
    outcome.kind = Outcome::Kind::acquired;
    return outcome;
  }
  if (m_options.nonblock || busy->limit_conflict) {
    return outcome;
  }
  m_queued = busy->place > 0;
  // Subscribed first, then asked again: a release between the first attempt
  // and the subscription is seen by the second attempt, any later one by a
  // message. Uncontended runs never pay for the subscription.
  bool ask = true;
  while (true) {
    try {
      if (auto end = wait(outcome, ask)) {
        return *end;
      }
    } catch (const redis::Failure& error) {
      if (!redis::may_pass(error)) {
        throw;
      }
      if (auto end = recover(error, outcome)) {
        return *end;
      }
      ask = true;
    }
  }
}

// One round of waiting: asks for the lock when `ask`, sleeps until a
// message or a reason to look again, and decides whether to ask next time.
// Returns the outcome when the wait is over.
template <class Answer>
std::optional<typename Waiter<Answer>::Outcome>
Waiter<Answer>::wait(Outcome& outcome, bool& ask) {
  if (!m_wakeups) {
    subscribe();
  }
  if (ask) {
    outcome.attempt = m_attempt(m_slept);
    const auto* busy = std::get_if<Busy>(&outcome.attempt);
    if (!busy) {
      outcome.kind = Outcome::Kind::acquired;
      return outcome;
    }
    if (busy->limit_conflict) {
      give_up();
      return outcome;
    }
    m_queued = m_queued || busy->place > 0;
    report(*busy);
  }
  // Not won, or we would have returned: the last answer says who holds it.
  Busy& busy = std::get<Busy>(outcome.attempt);
  const auto next = next_delay(busy);
  if (!next) {
    give_up();
    return outcome;
  }
  if (!listen()) {
    ask = true;
    return std::nullopt;
  }
  if (const int signal = sleep(m_wakeups->fd(), next->delay)) {
    give_up();
    outcome.kind = Outcome::Kind::interrupted;
    outcome.signal = signal;
    return outcome;
  }
  // A message, or a reason of our own to look again: the full attempt.
  // Only the safety net's timer: one PTTL says whether it is still held,
  // which is all a waiter needs to know to sleep on.
  const bool woken = take_wakeups() > 0;
  ask = woken || !next->safety_net_only || !m_remaining;
  if (ask && !woken && !m_remaining && m_wakeups) {
    // A look of our own at a semaphore or a shared lock, while still in
    // line for a wake-up: out of line first (the next round watches again),
    // or the wake-up our own acquire passes on to the next waiter could
    // come back to us.
    m_wakeups.reset();
  }
  if (!ask) {
    const auto pttl = m_remaining();
    // More left than the holder we know of could have: someone else holds
    // it now. A full attempt learns who, and how long its lease is.
    const auto known_ttl = busy.holder_ttl_ms;
    ask = pttl <= 0 || (known_ttl > 0 && pttl > known_ttl);
    busy.retry_ms = pttl;
  }
  return std::nullopt;
}

// Redis failed while we waited: connects again, backing off, until it
// works (nothing: go on waiting), the deadline passes (the error goes on)
// or a signal comes (the outcome says so).
template <class Answer>
std::optional<typename Waiter<Answer>::Outcome>
Waiter<Answer>::recover(const redis::Failure& error, Outcome& outcome) {
  log::warning(std::string(error.what()) + "; still waiting, reconnecting");
  outcome.uncertain = true;
  m_wakeups.reset();
  m_store.disconnect();
  redis::Failure last = error;
  Duration backoff = k_first_retry;
  for (int tries = 1;; ++tries) {
    Duration delay = jittered(backoff);
    backoff = std::min(backoff * 2, k_last_retry);
    if (m_deadline) {
      const auto left = *m_deadline - now();
      if (left <= Duration::zero()) {
        throw last;
      }
      delay = std::min(delay, left);
    }
    if (const int signal = sleep(-1, delay)) {
      outcome.kind = Outcome::Kind::interrupted;
      outcome.signal = signal;
      return outcome;
    }
    try {
      m_store.connect();
      subscribe();
      log::info("reconnected to Redis after " + std::to_string(tries)
                + (tries == 1 ? " try" : " tries"));
      return std::nullopt;
    } catch (const redis::Failure& again) {
      if (!redis::may_pass(again)) {
        throw;
      }
      log::info(std::string(again.what()) + "; trying again");
      last = again;
    }
  }
}

// Empties the wake-ups and returns how many there were. A source that broke
// counts as a wake-up, since one may have been lost meanwhile.
template <class Answer>
int
Waiter<Answer>::take_wakeups() {
  try {
    return m_wakeups->take();
  } catch (const redis::Failure& e) {
    drop_broken_source(e);
    return 1; // a wake-up may have been lost: look
  }
}

// Listens for the next wake-up before a sleep; false when the source broke.
template <class Answer>
bool
Waiter<Answer>::listen() {
  try {
    m_wakeups->listen();
    return true;
  } catch (const redis::Failure& e) {
    drop_broken_source(e);
    return false;
  }
}

// Drops a wake-up source that broke in a way that may pass: the next round
// watches again, where a failure is recovered from like any other. Any
// other failure ends the wait.
template <class Answer>
void
Waiter<Answer>::drop_broken_source(const redis::Failure& failure) {
  if (!redis::may_pass(failure)) {
    throw failure;
  }
  log::info(std::string(failure.what()) + "; watching again");
  m_wakeups.reset();
}

template <class Answer>
void
Waiter<Answer>::subscribe() {
  m_wakeups = m_watch();
}

// How long to sleep before looking again, unless a message comes first, and
// whether only the safety net chose it; nothing when the deadline has passed.
template <class Answer>
std::optional<typename Waiter<Answer>::Delay>
Waiter<Answer>::next_delay(const Busy& busy) {
  Delay next{jittered(safety_span(busy.holder_ttl_ms, m_ttl)), true};
  auto bound = [&next](Duration other) {
    if (other < next.delay) {
      next = Delay{other, false};
    }
  };
  if (busy.retry_ms >= 0) {
    bound(from_milliseconds(busy.retry_ms) + k_expiry_slack);
  }
  if (busy.polled) {
    // A holder that sends no wake-up (an application's lock): looked at
    // again after a backoff from 50 ms doubling to 1 s, jittered, so that
    // its release is seen soon without a busy loop.
    m_poll = std::clamp<Duration>(m_poll * 2, k_first_poll, k_last_poll);
    bound(jittered(m_poll));
  }
  if (m_options.fair || busy.place > 0) {
    // The place in the queue, refreshed in [4/5, 1] of the interval:
    // jittered, like the safety net.
    bound(k_queue_refresh
          - Duration(random_below_or_equal(
              static_cast<std::uint64_t>(k_queue_refresh.count() / 5))));
  }
  if (m_deadline) {
    const auto left = *m_deadline - now();
    if (left <= Duration::zero()) {
      return std::nullopt;
    }
    bound(left);
  }
  return next;
}

// Says whom we wait for, since when, and our place in line: once, and again
// when the holder or the place changes.
template <class Answer>
void
Waiter<Answer>::report(const Busy& busy) {
  if (!busy.held_back.empty()) {
    // The `busy` event went out already; the line only once.
    if (m_last_report != "held back") {
      m_last_report = "held back";
      log::info("waiting for " + quote(m_name) + ": " + busy.held_back);
    }
    return;
  }
  const std::string who = held_by_text(busy, true);
  const std::string key = who + "/" + std::to_string(busy.place);
  if (key == m_last_report) {
    return;
  }
  m_last_report = key;
  std::string text = "waiting for " + quote(m_name) + " " + who;
  if (busy.held_ms > 0) {
    text += ", " + format_duration(from_milliseconds(busy.held_ms));
  }
  text += queued_first_text(busy, m_shared);
  if (busy.place > 0) {
    text += "; " + ordinal(busy.place) + " in line";
  }
  log::info(text);
  events::emit("waiting",
               m_name,
               {{"holder", busy.holder},
                {"command", busy.command},
                {"held_ms", busy.held_ms},
                {"place", busy.place},
                {"shared", busy.shared_holders},
                {"holders", busy.holders}});
}

// Gives up the wait. First it stops listening: until the server has seen
// its wake-up connection close, a release hands its wake-up to this waiter
// on its way out. Then it leaves: out of the queue, so that nobody waits for
// a waiter that is gone, and, when the lock is free, a wake-up for the next
// waiter (leave.lua), since one may have come here between the last look and
// the close. Every waiter leaves, queued or not: outside the queue it listens
// on the shared wake-up list, where that wake-up was meant for another.
template <class Answer>
void
Waiter<Answer>::give_up() {
  m_wakeups.reset();
  if (!m_leave) {
    return;
  }
  try {
    m_leave();
  } catch (const Error& e) {
    if (m_options.fair || m_queued) {
      log::warning(std::string(e.what()) + "; the queue entry expires within "
                   + format_duration(k_queue_entry_ttl));
    } else {
      log::info(std::string(e.what())
                + "; a wake-up handed to this waiter is left to the others' "
                  "safety net");
    }
  }
}

} // namespace

WaitOutcome
wait_for_lock(LockSession& store,
              const LockRequest& request,
              const WaitOptions& options,
              const WaitHooks& hooks) {
  // A waiter that will not wait takes no place in the queue: nobody would
  // refresh it, and it would hold the free lock back until it expired. One
  // without --fair takes a place only when it finds a queue, or shared
  // holders in the way of a plain hold (writers first; the store decides).
  WaiterEntry entry;
  if (!options.nonblock && options.fair) {
    entry.queue_ttl = k_queue_entry_ttl;
  } else if (!options.nonblock) {
    entry.place_ttl = k_queue_entry_ttl;
  }
  auto attempt = [&](bool waited) {
    entry.waited = waited;
    return store.acquire(request, entry);
  };
  std::function<void()> leave;
  if (entry.queue_ttl > Duration::zero()
      || entry.place_ttl > Duration::zero()) {
    leave = [&] { store.leave_queue(request.name, request.token); };
  }
  // A semaphore's key lives as long as its last lease, while a permit may
  // come free with the first: every look is a full attempt.
  std::function<std::int64_t()> remaining;
  if (request.limit == 0) {
    remaining = [&] { return store.lease_remaining_ms(request.name); };
  }
  const auto ending =
      Waiter<AcquireAttempt>(
          attempt,
          remaining,
          [&] { return store.watch(request.name, request.token); },
          store,
          request.name,
          request.ttl,
          options,
          hooks,
          leave,
          request.limit == k_shared_limit)
          .run();
  return WaitOutcome{
      ending.kind, ending.attempt, ending.signal, ending.uncertain};
}

FreeWaitOutcome
wait_until_free(LockSession& store,
                const std::string& name,
                const WaitOptions& options,
                const WaitHooks& hooks) {
  // Every release matters, and it takes nothing: it may not take a
  // wake-up meant for a waiter.
  const auto ending =
      Waiter<PeekResult>([&](bool) { return store.peek(name); },
                         [&] { return store.lease_remaining_ms(name); },
                         [&] { return store.watch_releases(name); },
                         store,
                         name,
                         std::chrono::seconds(30),
                         options,
                         hooks,
                         nullptr)
          .run();
  using Kind = FreeWaitOutcome::Kind;
  const Kind kind = ending.kind == WaitOutcome::Kind::acquired ? Kind::free
                    : ending.kind == WaitOutcome::Kind::interrupted
                        ? Kind::interrupted
                        : Kind::timed_out;
  return FreeWaitOutcome{kind, ending.attempt, ending.signal};
}

} // namespace rlock::lock
