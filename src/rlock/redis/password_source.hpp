#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/expected.hpp>
#include <rlock/util/fd.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rlock::redis {

// A password that changes (a short-lived token): fetched by a function
// (cli/ runs --password-command through it), kept, and fetched again when it
// has grown old or while a Refresher runs. The data nodes' Endpoint carries
// it (Endpoint::password_source): a connection logs in with the kept
// password, and a live connection sends AUTH again with a newer one before
// its next command (Connection). Shared by every thread; the password is
// never logged.
class PasswordSource {
public:
  // Returns the password, or why there is none (a whole message: it names
  // where the password comes from). `cancel_fd` (-1: none) turns readable
  // when the caller no longer waits for it.
  using Fetch = std::function<Expected<std::string>(int cancel_fd)>;

  // A password and its generation: each fetch of a new one adds one.
  struct Password {
    std::string value;
    std::uint64_t generation = 0;
  };

  // `max_age`: how long a kept password serves new connections, and how
  // often a Refresher fetches a new one.
  PasswordSource(Fetch fetch, Duration max_age);

  PasswordSource(const PasswordSource&) = delete;
  PasswordSource& operator=(const PasswordSource&) = delete;

  // Returns the kept password; fetches one first when none is kept, or when
  // it is older than max_age and no Refresher runs (one keeps it fresh, and
  // a connection made during a hold must not wait for the command). Throws
  // Failure (auth_refused) with the fetch's reason.
  Password current();

  // After the server refused the password of `generation`: returns a newer
  // one, fetched now unless one is kept already; nothing when none is to
  // be had (the fetch failed or gave the same password, or a Refresher
  // runs: it fetches on its own schedule).
  std::optional<Password> after_refusal(std::uint64_t generation);

  // Fetches now and keeps the password (a new generation when it differs);
  // returns why not.
  std::optional<std::string> refresh(int cancel_fd = -1);

  // The generation of the kept password, 0 before the first.
  std::uint64_t generation() const;

  // The kept password, nothing before the first; never fetches.
  std::optional<Password> kept() const;

  Duration max_age() const;

  // While it lives, fetches a new password every max_age from a thread of
  // its own (while a lock is held); fd() turns readable when a new one is
  // kept. A failure is logged once, until a fetch succeeds again, and the
  // password kept before stays in use.
  class Refresher {
  public:
    explicit Refresher(std::shared_ptr<PasswordSource> source);
    ~Refresher();

    Refresher(const Refresher&) = delete;
    Refresher& operator=(const Refresher&) = delete;

    // Readable when a new password was kept; drain() after reading.
    int fd() const;
    void drain() const;

  private:
    void run();

    std::shared_ptr<PasswordSource> m_source;
    UniqueFd m_changed;
    UniqueFd m_stop;
    std::thread m_thread;
  };

private:
  // Fetches and keeps; m_fetch_mutex held. Returns why not.
  std::optional<std::string> fetch_locked(int cancel_fd);
  // The kept password when it may serve a new connection.
  std::optional<Password> usable() const;

  Fetch m_fetch;
  Duration m_max_age;
  mutable std::mutex m_mutex; // guards the rest
  std::mutex m_fetch_mutex;   // one fetch at a time
  std::optional<std::string> m_value;
  BootTime m_fetched_at{};
  std::atomic<std::uint64_t> m_generation{0};
  std::atomic<int> m_refreshers{0};
};

} // namespace rlock::redis
