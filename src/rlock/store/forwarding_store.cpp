#include <rlock/store/forwarding_store.hpp>

namespace rlock::lock {

void
ForwardingStore::on_store(std::string_view,
                          const std::function<void(LockStore&)>& step) {
  step(inner());
}

std::string
ForwardingStore::key_of(std::string_view name) const {
  return inner().key_of(name);
}

AcquireAttempt
ForwardingStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  return through<AcquireAttempt>(request.name, [&](LockStore& store) {
    return store.acquire(request, entry);
  });
}

PeekResult
ForwardingStore::peek(std::string_view name) {
  return through<PeekResult>(
      name, [&](LockStore& store) { return store.peek(name); });
}

std::int64_t
ForwardingStore::lease_remaining_ms(std::string_view name) {
  return through<std::int64_t>(
      name, [&](LockStore& store) { return store.lease_remaining_ms(name); });
}

Renewal
ForwardingStore::renew(std::string_view name,
                       const std::string& token,
                       Duration ttl,
                       RenewMode mode) {
  return through<Renewal>(name, [&](LockStore& store) {
    return store.renew(name, token, ttl, mode);
  });
}

bool
ForwardingStore::release(std::string_view name, const std::string& token) {
  return through<bool>(
      name, [&](LockStore& store) { return store.release(name, token); });
}

void
ForwardingStore::release_quietly(std::string_view name,
                                 const std::string& token) noexcept {
  inner().release_quietly(name, token);
}

std::optional<Duration>
ForwardingStore::check(std::string_view name, const std::string& token) {
  return through<std::optional<Duration>>(
      name, [&](LockStore& store) { return store.check(name, token); });
}

std::optional<BrokenLock>
ForwardingStore::force_release(std::string_view name) {
  return through<std::optional<BrokenLock>>(
      name, [&](LockStore& store) { return store.force_release(name); });
}

void
ForwardingStore::leave_queue(std::string_view name, const std::string& token) {
  on_store(name, [&](LockStore& store) { store.leave_queue(name, token); });
}

Slot
ForwardingStore::current_slot(std::string_view name, Duration length) {
  return through<Slot>(
      name, [&](LockStore& store) { return store.current_slot(name, length); });
}

void
ForwardingStore::mark_slot_done(std::string_view name,
                                std::int64_t number,
                                Duration keep) {
  on_store(name,
           [&](LockStore& store) { store.mark_slot_done(name, number, keep); });
}

std::unique_ptr<Wakeups>
ForwardingStore::watch(std::string_view name, const std::string& token) {
  return through<std::unique_ptr<Wakeups>>(
      name, [&](LockStore& store) { return store.watch(name, token); });
}

std::unique_ptr<Wakeups>
ForwardingStore::watch_releases(std::string_view name) {
  return through<std::unique_ptr<Wakeups>>(
      name, [&](LockStore& store) { return store.watch_releases(name); });
}

StatusSnapshot
ForwardingStore::read_locks(const std::vector<std::string>& names) {
  return inner().read_locks(names);
}

StatusSnapshot
ForwardingStore::list_locks(std::string_view match) {
  return inner().list_locks(match);
}

std::vector<ServerFacts>
ForwardingStore::examine() {
  return inner().examine();
}

std::optional<DeploymentState>
ForwardingStore::deployment_state() {
  return inner().deployment_state();
}

void
ForwardingStore::connect() {
  inner().connect();
}

void
ForwardingStore::disconnect() {
  inner().disconnect();
}

void
ForwardingStore::set_deadline(std::optional<BootTime> deadline) {
  inner().set_deadline(deadline);
}

int
ForwardingStore::idle_fd() const {
  return inner().idle_fd();
}

bool
ForwardingStore::idle_connection_broken() {
  return inner().idle_connection_broken();
}

} // namespace rlock::lock
