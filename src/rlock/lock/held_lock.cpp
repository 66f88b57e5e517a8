#include <rlock/lock/held_lock.hpp>
#include <rlock/redis/failure.hpp>

namespace rlock::lock {

HeldLock::HeldLock(LockSession& store,
                   LockRequest request,
                   Granted acquired,
                   LeaseTiming timing)
    : m_store(store), m_request(std::move(request)),
      m_acquired(std::move(acquired)), m_timing(timing) {
}

std::string
HeldLock::key() const {
  return m_store.key_of(m_request.name);
}

BootTime
HeldLock::kill_deadline() const {
  return m_renewer ? m_renewer->kill_deadline()
                   : m_timing.kill_deadline(lease_start());
}

BootTime
HeldLock::valid_until() const {
  return kill_deadline() + m_timing.kill_after;
}

void
HeldLock::bound_steps_by(BootTime deadline) {
  m_steps_deadline = deadline;
  m_store.set_deadline(deadline);
}

Renewer&
HeldLock::start_renewing(std::shared_ptr<redis::PasswordSource> password) {
  return m_renewer.emplace(m_store.another(),
                           m_request.name,
                           m_request.token,
                           m_timing,
                           lease_start(),
                           std::move(password));
}

void
HeldLock::stop_renewing() {
  if (m_renewer) {
    m_renewer->stop();
  }
}

// Runs `step`, and once more when it failed in a way that may pass: the
// main connection may have gone stale while the command ran. A step that
// got an error reply ran, and running it again would find its own work done.
// Not once the steps' deadline has passed: the first failure says more.
template <typename Step>
auto
HeldLock::retried_once(Step&& step) {
  try {
    return step();
  } catch (const redis::Failure& failure) {
    if (!redis::may_pass(failure)
        || (m_steps_deadline && boot_now() >= *m_steps_deadline)) {
      throw;
    }
    return step();
  }
}

bool
HeldLock::release() {
  return retried_once(
      [&] { return m_store.release(m_request.name, m_request.token); });
}

bool
HeldLock::keep_for(Duration keep) {
  return retried_once([&] {
    return m_store
        .renew(m_request.name, m_request.token, keep, RenewMode::exact)
        .held;
  });
}

Slot
HeldLock::current_slot(Duration length) {
  return m_store.current_slot(m_request.name, length);
}

void
HeldLock::mark_slot_done(const Slot& slot, Duration keep) {
  retried_once([&] {
    m_store.mark_slot_done(m_request.name, slot.number, keep);
    return true;
  });
}

void
HeldLock::release_quietly() noexcept {
  m_store.release_quietly(m_request.name, m_request.token);
}

} // namespace rlock::lock
