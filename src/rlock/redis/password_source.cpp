#include <rlock/redis/failure.hpp>
#include <rlock/redis/password_source.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/event_fd.hpp>
#include <rlock/util/log.hpp>

#include <poll.h>

#include <algorithm>
#include <array>

namespace rlock::redis {

namespace {

// Waits until `fd` is readable (true) or `until` has come (false).
bool
readable_before(int fd, BootTime until) {
  while (true) {
    const auto left = until - boot_now();
    const auto ms = std::max<std::int64_t>(
        0, std::chrono::ceil<std::chrono::milliseconds>(left).count());
    pollfd one{fd, POLLIN, 0};
    const int ready =
        ::poll(&one, 1, static_cast<int>(std::min<std::int64_t>(ms, 60'000)));
    if (ready > 0) {
      return true;
    }
    if (left <= Duration::zero()) {
      return false;
    }
  }
}

} // namespace

PasswordSource::PasswordSource(Fetch fetch, Duration max_age)
    : m_fetch(std::move(fetch)), m_max_age(max_age) {
}

std::optional<std::string>
PasswordSource::fetch_locked(int cancel_fd) {
  auto fetched = m_fetch(cancel_fd);
  if (!fetched) {
    return fetched.error();
  }
  std::lock_guard lock(m_mutex);
  m_fetched_at = boot_now();
  if (!m_value || *m_value != fetched.value()) {
    m_value = fetched.value();
    ++m_generation;
  }
  return std::nullopt;
}

std::optional<PasswordSource::Password>
PasswordSource::usable() const {
  std::lock_guard lock(m_mutex);
  if (m_value && (m_refreshers > 0 || boot_now() - m_fetched_at < m_max_age)) {
    return Password{*m_value, m_generation};
  }
  return std::nullopt;
}

PasswordSource::Password
PasswordSource::current() {
  if (auto password = usable()) {
    return *password;
  }
  std::lock_guard fetching(m_fetch_mutex);
  // Another thread may have fetched one meanwhile.
  if (auto password = usable()) {
    return *password;
  }
  if (const auto failure = fetch_locked(-1)) {
    throw Failure(FailureKind::auth_refused, *failure);
  }
  return *kept();
}

std::optional<PasswordSource::Password>
PasswordSource::after_refusal(std::uint64_t generation) {
  const auto newer = [&]() -> std::optional<Password> {
    auto password = kept();
    if (password && password->generation > generation) {
      return password;
    }
    return std::nullopt;
  };
  if (auto password = newer()) {
    return password;
  }
  if (m_refreshers > 0) {
    return std::nullopt;
  }
  std::lock_guard fetching(m_fetch_mutex);
  if (auto password = newer()) {
    return password;
  }
  if (fetch_locked(-1)) {
    return std::nullopt;
  }
  return newer();
}

std::optional<std::string>
PasswordSource::refresh(int cancel_fd) {
  std::lock_guard fetching(m_fetch_mutex);
  return fetch_locked(cancel_fd);
}

std::uint64_t
PasswordSource::generation() const {
  return m_generation;
}

std::optional<PasswordSource::Password>
PasswordSource::kept() const {
  std::lock_guard lock(m_mutex);
  if (!m_value) {
    return std::nullopt;
  }
  return Password{*m_value, m_generation};
}

Duration
PasswordSource::max_age() const {
  return m_max_age;
}

PasswordSource::Refresher::Refresher(std::shared_ptr<PasswordSource> source)
    : m_source(std::move(source)), m_changed(make_eventfd()),
      m_stop(make_eventfd()) {
  ++m_source->m_refreshers;
  m_thread = std::thread([this] { run(); });
}

PasswordSource::Refresher::~Refresher() {
  signal_eventfd(m_stop.get());
  m_thread.join();
  --m_source->m_refreshers;
}

int
PasswordSource::Refresher::fd() const {
  return m_changed.get();
}

void
PasswordSource::Refresher::drain() const {
  std::uint64_t count = 0;
  [[maybe_unused]] const auto n =
      ::read(m_changed.get(), &count, sizeof(count));
}

void
PasswordSource::Refresher::run() {
  // Nothing may escape a thread; a failure here leaves the kept password in
  // use, as a failed fetch does.
  try {
    BootTime next = boot_now() + m_source->m_max_age;
    {
      std::lock_guard lock(m_source->m_mutex);
      if (m_source->m_value) {
        next = m_source->m_fetched_at + m_source->m_max_age;
      }
    }
    bool failing = false;
    while (!readable_before(m_stop.get(), next)) {
      const auto before = m_source->generation();
      const auto failure = m_source->refresh(m_stop.get());
      if (readable_before(m_stop.get(), boot_now())) {
        return; // stopped: a fetch cut short says nothing
      }
      if (failure) {
        if (!failing) {
          log::warning(*failure + "; the password fetched before stays in use");
        }
        failing = true;
      } else {
        failing = false;
        if (m_source->generation() != before) {
          log::info("fetched a new password; live connections log in with "
                    "it before their next command");
          signal_eventfd(m_changed.get());
        }
      }
      next = boot_now() + m_source->m_max_age;
    }
  } catch (...) {
  }
}

} // namespace rlock::redis
