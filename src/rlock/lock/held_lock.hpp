#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/lock/renewer.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/lock/timing.hpp>

#include <optional>
#include <string>

namespace rlock::lock {

// A lock this process holds: the request it was taken with and the winning
// attempt (its fence, and the send its lease counts from), the store it
// lives in, the renewer that keeps it alive, and the ways a hold ends.
class HeldLock {
public:
  HeldLock(LockSession& store,
           LockRequest request,
           Granted acquired,
           LeaseTiming timing);

  const std::string&
  name() const {
    return m_request.name;
  }

  const std::string&
  token() const {
    return m_request.token;
  }

  std::int64_t
  fence() const {
    return m_acquired.fence;
  }

  // A semaphore's holder: its slot, 0..limit-1 ($RLOCK_SLOT); -1 for a
  // plain lock.
  std::int64_t
  slot() const {
    return m_acquired.slot;
  }

  // When the winning request was sent.
  BootTime
  sent() const {
    return m_acquired.sent;
  }

  // Where the lease counts from: the send, less an allowance for servers
  // whose clocks may run faster than ours (a quorum of servers).
  BootTime
  lease_start() const {
    return m_acquired.sent - m_acquired.clock_allowance;
  }

  const LeaseTiming&
  timing() const {
    return m_timing;
  }

  // Returns where the lock is kept ($RLOCK_KEY).
  std::string key() const;

  // When the command must be stopped unless a renewal came: kill_deadline()
  // of the renewer once renewing, else of the acquisition.
  BootTime kill_deadline() const;

  // Returns until when the lease is surely valid by rlock's count:
  // kill_deadline() plus the kill-after.
  BootTime valid_until() const;

  // Bounds every later step on the lock's own store to end by `deadline`.
  void bound_steps_by(BootTime deadline);

  // Prepares renewing the lease from a thread of its own, on a store of its
  // own; the owner starts the thread (Renewer::start_when_due()). With a
  // `password` that changes, the renewer has it fetched anew meanwhile.
  Renewer& start_renewing(std::shared_ptr<redis::PasswordSource> password = {});

  // Stops renewing and waits for the thread; safe to call more than once.
  void stop_renewing();

  // Releases the lock; false when it was no longer held (deleted, taken
  // over or expired). Throws redis::Failure.
  bool release();

  // Makes the lease end `keep` from now (--hold), not renewed after;
  // false when it was no longer held. Throws redis::Failure.
  bool keep_for(Duration keep);

  // Returns the current --once-per slot of `length`. Throws redis::Failure.
  Slot current_slot(Duration length);

  // Records that the run of `slot` succeeded, for `keep`. Throws
  // redis::Failure.
  void mark_slot_done(const Slot& slot, Duration keep);

  // Releases the lock if still ours, bounded, ignoring failures: for a lease
  // lost or given up, which must not block the next holder for a TTL.
  void release_quietly() noexcept;

private:
  template <typename Step>
  auto retried_once(Step&& step);

  LockSession& m_store;
  LockRequest m_request;
  Granted m_acquired;
  LeaseTiming m_timing;
  std::optional<Renewer> m_renewer;
  std::optional<BootTime> m_steps_deadline; // bound_steps_by()
};

} // namespace rlock::lock
