#include <rlock/lock/renewer.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/event_fd.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <poll.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace rlock::lock {

namespace {

// How long a run goes without the renewal thread. The lease is safe
// without it: the kill deadline, the watchdog and --restart-grace do not
// depend on it; an empty restart in these first milliseconds is noticed
// when the thread starts and looks (look_once()).
constexpr Duration k_thread_delay = std::chrono::milliseconds(100);

} // namespace

Renewer::Renewer(std::unique_ptr<LockSession> store,
                 std::string name,
                 std::string token,
                 LeaseTiming timing,
                 BootTime sent,
                 std::shared_ptr<redis::PasswordSource> password)
    : m_store(std::move(store)), m_password(std::move(password)),
      m_name(std::move(name)), m_token(std::move(token)), m_timing(timing),
      m_last_sent_ns(sent.count()), m_wakeup(make_eventfd()),
      m_stop(make_eventfd()),
      m_thread_due(std::min(boot_now() + k_thread_delay,
                            sent + timing.renew_interval / 2)) {
}

Renewer::~Renewer() {
  stop();
}

BootTime
Renewer::kill_deadline() const {
  return m_timing.kill_deadline(BootTime(m_last_sent_ns.load()));
}

std::optional<std::string>
Renewer::loss() const {
  if (!m_lost) {
    return std::nullopt;
  }
  std::lock_guard lock(m_loss_mutex);
  return m_loss_reason;
}

int
Renewer::wakeup_fd() const {
  return m_wakeup.get();
}

void
Renewer::drain_wakeups() const {
  std::uint64_t count = 0;
  [[maybe_unused]] const auto n = ::read(m_wakeup.get(), &count, sizeof(count));
}

void
Renewer::start() {
  if (!m_stopped && !m_thread.joinable()) {
    m_thread = std::thread([this] { run(); });
  }
}

void
Renewer::start_when_due() {
  if (boot_now() >= m_thread_due) {
    start();
  }
}

BootTime
Renewer::next_check() const {
  const BootTime deadline = kill_deadline();
  return m_thread.joinable() || m_stopped ? deadline
                                          : std::min(deadline, m_thread_due);
}

void
Renewer::request_stop() {
  m_stopped = true;
  if (m_thread.joinable()) {
    signal_eventfd(m_stop.get());
  }
}

void
Renewer::stop() {
  request_stop();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void
Renewer::run() {
  // Nothing may escape a thread: any failure is a lost lease.
  try {
    renew_until_lost();
  } catch (const std::exception& e) {
    mark_lost(std::string("renewal failed: ") + e.what());
  } catch (...) {
    mark_lost("renewal failed");
  }
}

void
Renewer::renew_until_lost() {
  // A password that changes is fetched anew while the lease is renewed.
  std::optional<redis::PasswordSource::Refresher> refresher;
  if (m_password) {
    refresher.emplace(m_password);
  }
  const auto* fresh = refresher ? &*refresher : nullptr;
  connect_early();
  BootTime next = BootTime(m_last_sent_ns.load()) + m_timing.renew_interval;
  BootTime last_try = BootTime(m_last_sent_ns.load());
  switch (look_once()) {
  case Look::gone:
    mark_lost("it was deleted or taken over");
    return;
  case Look::failed:
    // Maybe a server that restarted and is not back yet: renew at once,
    // retrying, as after a closed connection.
    next = boot_now();
    break;
  case Look::held:
    break;
  }
  while (true) {
    const Wake wake = sleep_until(next, fresh);
    if (wake == Wake::stopped || m_stopped) {
      return;
    }
    if (wake == Wake::new_password) {
      // Renew now: the renewal carries the AUTH with the new password, so
      // the live connection logs in with it before the old one expires.
      refresher->drain();
      next = boot_now();
      continue;
    }
    if (wake == Wake::closed) {
      // The server restarted (the lease may be gone: the child must hear
      // of it now, not at the next slot) or dropped an idle client (its
      // `timeout`). A renewal on a new connection tells which, silently:
      // nothing was lost. At most one per retry delay, should the server
      // close every connection at once.
      m_store->disconnect();
      next = std::max(boot_now(), last_try + m_timing.retry_delay);
      continue;
    }
    last_try = boot_now();
    const BootTime deadline = kill_deadline();
    if (boot_now() >= deadline) {
      const auto failure = last_failure();
      mark_lost("could not renew it in time"
                + (failure.empty() ? std::string() : " (" + failure + ")"));
      return;
    }
    if (renew_once(deadline)) {
      next = BootTime(m_last_sent_ns.load()) + m_timing.renew_interval;
    } else if (m_lost) {
      return;
    } else {
      next = std::min(boot_now() + m_timing.retry_delay, deadline);
    }
  }
}

// Returns true when renewed; false after a failure (m_lost set when the lock
// is gone, else worth retrying).
bool
Renewer::renew_once(BootTime deadline) {
  const BootTime sent = boot_now();
  Renewal renewal;
  try {
    // One attempt gets at most half a renewal interval, so that a server
    // that went silent (frozen, or failed over) leaves time to try again on
    // a new connection, which with Sentinel goes to the master of now.
    m_store->set_deadline(
        std::min(deadline, sent + m_timing.renew_interval / 2));
    renewal = m_store->renew(m_name, m_token, m_timing.ttl, RenewMode::exact);
    if (!renewal.held) {
      mark_lost("it was deleted or taken over");
      return false;
    }
    if (const auto cut = cut_short_reason(renewal.remaining_before_ms)) {
      mark_lost(*cut);
      return false;
    }
  } catch (const Error& e) {
    std::lock_guard lock(m_loss_mutex);
    const bool first_failure = m_failure.empty();
    m_failure = e.what();
    // Past the deadline the lease is given up: no "retrying" after that,
    // and nothing at all once the loss is marked or the owner is done.
    if (!m_lost && !m_stopped && boot_now() < deadline) {
      if (first_failure) {
        log::warning(std::string(e.what()) + "; retrying");
      }
      report_failure(deadline, e.what());
    }
    return false;
  }
  return publish_renewal(sent - renewal.clock_allowance, deadline, renewal);
}

// Counts a renewal sent at `sent` whose reply came before `deadline`, the
// kill deadline in force when it was sent. A reply that comes later does
// not count: by then the child may be dead by the watchdog's hand, and the
// lease is lost. Under the loss mutex, so that once the loss is marked (by
// either thread) no renewal is counted or reported; the output is queued,
// so holding the mutex while reporting blocks nobody.
bool
Renewer::publish_renewal(BootTime sent,
                         BootTime deadline,
                         const Renewal& renewal) {
  std::unique_lock lock(m_loss_mutex);
  if (m_lost) {
    return false;
  }
  if (boot_now() >= deadline) {
    m_loss_reason = "could not renew it in time (the reply came too late)";
    m_lost = true;
    lock.unlock();
    notify();
    return false;
  }
  m_failure.clear();
  m_at_risk = false;
  m_last_sent_ns = sent.count();
  if (m_stopped) {
    return true; // the command has ended: counted, not reported
  }
  log::info("renewed " + quote(m_name) + " (valid for "
            + format_duration(m_timing.ttl) + ")");
  nlohmann::ordered_json fields{{"ttl_ms", to_ms(m_timing.ttl)}};
  if (renewal.confirmed > 0) {
    fields["confirmed"] = renewal.confirmed;
  }
  events::emit("renewed", m_name, fields);
  lock.unlock();
  notify();
  return true;
}

// Returns why the lease is to be taken as lost when the server had less of
// it left than rlock counts on (a forward clock step on the Redis host,
// which expires keys by its wall clock, or a shortened lease): another
// holder may already have had it.
std::optional<std::string>
Renewer::cut_short_reason(std::int64_t remaining_ms) const {
  const auto since_sent = boot_now() - BootTime(m_last_sent_ns.load());
  if (!lease_cut_short(m_timing, since_sent, remaining_ms)) {
    return std::nullopt;
  }
  const auto expected = std::chrono::ceil<std::chrono::milliseconds>(
      m_timing.ttl - since_sent - m_timing.margin);
  return "the server had " + std::to_string(remaining_ms)
         + "ms of its lease left where rlock counted on at least "
         + std::to_string(expected.count())
         + "ms (the Redis host's clock stepped forward, or the lease was "
           "shortened)";
}

// Emits renew-failed, and at-risk once when less than a third of the TTL is
// left before the child must be stopped.
void
Renewer::report_failure(BootTime deadline, const std::string& error) {
  events::emit("renew-failed", m_name, {{"error", error}});
  const auto left = deadline - boot_now();
  if (!m_at_risk && left < m_timing.ttl / 3) {
    m_at_risk = true;
    events::emit(
        "at-risk", m_name, {{"left_ms", to_ms(left)}, {"error", error}});
  }
}

// Sleeps until `when`, watching the stop request and the idle connection.
Renewer::Wake
Renewer::sleep_until(BootTime when,
                     const redis::PasswordSource::Refresher* refresher) {
  while (true) {
    const auto left = when - boot_now();
    if (left <= Duration::zero()) {
      return Wake::due;
    }
    std::array<pollfd, 3> fds{{{m_stop.get(), POLLIN, 0},
                               {m_store->idle_fd(), POLLIN | POLLRDHUP, 0},
                               {refresher ? refresher->fd() : -1, POLLIN, 0}}};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    ::poll(fds.data(),
           fds.size(),
           static_cast<int>(std::min<std::int64_t>(ms, 60'000)));
    if (fds[0].revents != 0) {
      return Wake::stopped;
    }
    if (fds[1].revents != 0 && m_store->idle_connection_broken()) {
      return Wake::closed;
    }
    if (fds[2].revents != 0) {
      return Wake::new_password;
    }
  }
}

// Connects before the first renewal is due, so that sleep_until() notices a
// server going away from the start. A failure is left to that renewal.
void
Renewer::connect_early() {
  m_store->set_deadline(boot_now() + m_timing.renew_interval);
  try {
    m_store->connect();
  } catch (const Error&) {
    // The first renewal connects again.
  }
}

// Looks once whether the lease is still there, on the connection
// sleep_until() watches from now on. The thread starts some time after the
// acquire, on a connection of its own: a server that restarted empty in
// between closed no connection of ours, and would go unnoticed until the
// first renewal. Silent: a failure is the renewals' to report.
Renewer::Look
Renewer::look_once() {
  try {
    m_store->set_deadline(
        std::min(kill_deadline(), boot_now() + m_timing.renew_interval / 2));
    return m_store->check(m_name, m_token) ? Look::held : Look::gone;
  } catch (const Error&) {
    m_store->disconnect();
    return Look::failed;
  }
}

void
Renewer::record_failure(const std::string& error) {
  std::lock_guard lock(m_loss_mutex);
  m_failure = error;
}

std::string
Renewer::last_failure() const {
  std::lock_guard lock(m_loss_mutex);
  return m_failure;
}

void
Renewer::mark_lost(const std::string& reason) {
  {
    std::lock_guard lock(m_loss_mutex);
    if (m_lost) {
      return;
    }
    m_loss_reason = reason;
    m_lost = true;
  }
  notify();
}

std::string
Renewer::give_up(const std::string& reason) {
  mark_lost(reason);
  std::lock_guard lock(m_loss_mutex);
  return m_loss_reason;
}

std::optional<std::string>
Renewer::check_loss() {
  {
    std::lock_guard lock(m_loss_mutex);
    if (!m_lost && boot_now() >= kill_deadline()) {
      m_loss_reason = "could not renew it in time"
                      + (m_failure.empty() ? "" : " (" + m_failure + ")");
      m_lost = true;
    }
  }
  return loss();
}

void
Renewer::notify() const {
  signal_eventfd(m_wakeup.get());
}

} // namespace rlock::lock
