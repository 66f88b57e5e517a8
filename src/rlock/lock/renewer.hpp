#pragma once

#include <rlock/lock/store.hpp>
#include <rlock/lock/timing.hpp>
#include <rlock/redis/password_source.hpp>
#include <rlock/util/fd.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rlock::lock {

// Keeps a held lease alive from a thread of its own, on a store of its
// own: renews every ttl/3, retries a failed renewal promptly with each attempt
// bounded by the validity left, and reconnects when needed. Once connected it
// looks whether the lease is still there (a server may have restarted empty
// since the acquire), and between renewals it watches that connection: when
// the server closes it (a restart, or its idle `timeout`), it renews at once
// on a new one, so that a lease lost to an empty restart is noticed then. The
// owner watches kill_deadline() and loss(), woken through wakeup_fd(), and
// starts the thread when next_check() comes (start_when_due()): a command that
// ends sooner never pays for a thread and a second connection.
class Renewer {
public:
  // Prepares renewing, on `store`, the lease `token` holds on lock `name`
  // since the request sent at `sent`; the thread starts with
  // start_when_due(). With a `password` that changes (--password-command),
  // the thread also has a new one fetched every max_age, and renews at once
  // when one comes: the renewal goes out behind an AUTH with it on the live
  // connection (redis::Connection), so a long hold outlives the token it
  // started with.
  Renewer(std::unique_ptr<LockSession> store,
          std::string name,
          std::string token,
          LeaseTiming timing,
          BootTime sent,
          std::shared_ptr<redis::PasswordSource> password = {});

  // Stops the thread.
  ~Renewer();

  // Starts the thread now; does nothing when started or after stop().
  void start();

  // Starts the thread once its start time has come (k_thread_delay after
  // construction, or half a renewal interval after `sent` when sooner);
  // does nothing before that, when started, or after stop().
  void start_when_due();

  // Returns when the owner must look again: kill_deadline(), or the
  // thread's start time while that is sooner and the thread not started.
  BootTime next_check() const;

  Renewer(const Renewer&) = delete;
  Renewer& operator=(const Renewer&) = delete;

  // Returns when the child must get the kill signal; later after each renewal.
  BootTime kill_deadline() const;

  // Returns why the lease is lost, or nothing while it holds.
  std::optional<std::string> loss() const;

  // Returns why the lease is lost; first marks it lost when kill_deadline()
  // has passed. Once lost, no renewal counts and the renewer reports nothing.
  std::optional<std::string> check_loss();

  // Marks the lease lost for `reason` unless it already was; returns the
  // reason of the loss (the first one).
  std::string give_up(const std::string& reason);

  // Returns why the last renewal failed, "" after a success.
  std::string last_failure() const;

  // Returns a descriptor that turns readable when kill_deadline() or loss()
  // changed; call drain_wakeups() after reading the state.
  int wakeup_fd() const;

  // Empties wakeup_fd().
  void drain_wakeups() const;

  // Tells the thread to stop without waiting for it: no renewal starts
  // after this, and one under way reports nothing (a success still
  // counts). Safe to call more than once.
  void request_stop();

  // Stops the thread and waits for it; safe to call more than once.
  void stop();

private:
  // What ended a sleep.
  enum class Wake { due, closed, stopped, new_password };
  // What a look at the lease found.
  enum class Look { held, gone, failed };

  void run();
  void renew_until_lost();
  void connect_early();
  Look look_once();
  Wake sleep_until(BootTime when,
                   const redis::PasswordSource::Refresher* refresher);
  bool renew_once(BootTime deadline);
  bool
  publish_renewal(BootTime sent, BootTime deadline, const Renewal& renewal);
  std::optional<std::string> cut_short_reason(std::int64_t remaining_ms) const;
  void mark_lost(const std::string& reason);
  void report_failure(BootTime deadline, const std::string& error);
  void record_failure(const std::string& error);
  void notify() const;

  std::unique_ptr<LockSession> m_store;
  std::shared_ptr<redis::PasswordSource> m_password; // may be null
  std::string m_name;
  std::string m_token;
  LeaseTiming m_timing;
  std::atomic<std::int64_t> m_last_sent_ns;
  std::atomic<bool> m_lost{false};
  mutable std::mutex m_loss_mutex;
  std::string m_loss_reason;
  std::string m_failure;  // guarded by m_loss_mutex
  bool m_at_risk = false; // guarded by m_loss_mutex
  UniqueFd m_wakeup;
  UniqueFd m_stop;
  BootTime m_thread_due;
  std::atomic<bool> m_stopped{false};
  std::thread m_thread;
};

} // namespace rlock::lock
