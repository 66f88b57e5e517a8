#include <rlock/lock/cluster_store.hpp>
#include <rlock/lock/discovering_store.hpp>
#include <rlock/lock/redis_store.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/log.hpp>

namespace rlock::lock {

namespace {

bool
says_cluster(const redis::Failure& failure) {
  return failure.server_code() == "MOVED"
         || failure.server_code() == "CROSSSLOT";
}

} // namespace

DiscoveringStore::DiscoveringStore(Deployment deployment)
    : DiscoveringStore(
        deployment, std::make_unique<RedisStore>(deployment), false) {
}

DiscoveringStore::DiscoveringStore(Deployment deployment,
                                   std::unique_ptr<LockStore> store,
                                   bool cluster)
    : m_deployment(std::move(deployment)), m_store(std::move(store)),
      m_cluster(cluster), m_looked(cluster) {
}

std::unique_ptr<LockStore>
DiscoveringStore::another() const {
  return std::unique_ptr<LockStore>(
      new DiscoveringStore(m_deployment, m_store->another(), m_cluster));
}

void
DiscoveringStore::switch_to_cluster() {
  const auto& endpoint = m_deployment.endpoint;
  log::info(endpoint.address()
            + " is a Redis Cluster node: following its slot map");
  m_deployment.cluster = redis::ClusterSeeds{
      {redis::HostPort{endpoint.host, endpoint.port}}, endpoint};
  m_store = std::make_unique<ClusterStore>(m_deployment);
  m_store->set_deadline(m_deadline);
  m_cluster = true;
  m_looked = true;
}

template <typename Step>
auto
DiscoveringStore::on_store(Step&& step) {
  try {
    return step(*m_store);
  } catch (const redis::Failure& failure) {
    if (m_cluster || !says_cluster(failure)) {
      throw;
    }
  }
  switch_to_cluster();
  return step(*m_store);
}

void
DiscoveringStore::look_for_cluster() {
  if (m_looked) {
    return;
  }
  m_looked = true;
  if (static_cast<RedisStore&>(*m_store).is_cluster_node()) {
    switch_to_cluster();
  }
}

std::string
DiscoveringStore::key_of(std::string_view name) const {
  return m_store->key_of(name);
}

AcquireAttempt
DiscoveringStore::acquire(const LockRequest& request,
                          const WaiterEntry& entry) {
  return on_store(
      [&](LockStore& store) { return store.acquire(request, entry); });
}

AcquireAttempt
DiscoveringStore::peek(std::string_view name) {
  return on_store([&](LockStore& store) { return store.peek(name); });
}

std::int64_t
DiscoveringStore::lease_remaining_ms(std::string_view name) {
  return on_store(
      [&](LockStore& store) { return store.lease_remaining_ms(name); });
}

Renewal
DiscoveringStore::renew(std::string_view name,
                        const std::string& token,
                        Duration ttl,
                        RenewMode mode) {
  return on_store(
      [&](LockStore& store) { return store.renew(name, token, ttl, mode); });
}

bool
DiscoveringStore::release(std::string_view name, const std::string& token) {
  return on_store([&](LockStore& store) { return store.release(name, token); });
}

void
DiscoveringStore::release_quietly(std::string_view name,
                                  const std::string& token) noexcept {
  m_store->release_quietly(name, token);
}

std::optional<Duration>
DiscoveringStore::check(std::string_view name, const std::string& token) {
  return on_store([&](LockStore& store) { return store.check(name, token); });
}

std::optional<BrokenLock>
DiscoveringStore::force_release(std::string_view name) {
  return on_store([&](LockStore& store) { return store.force_release(name); });
}

void
DiscoveringStore::leave_queue(std::string_view name, const std::string& token) {
  on_store([&](LockStore& store) {
    store.leave_queue(name, token);
    return true;
  });
}

Slot
DiscoveringStore::current_slot(std::string_view name, Duration length) {
  return on_store(
      [&](LockStore& store) { return store.current_slot(name, length); });
}

void
DiscoveringStore::mark_slot_done(std::string_view name,
                                 std::int64_t number,
                                 Duration keep) {
  on_store([&](LockStore& store) {
    store.mark_slot_done(name, number, keep);
    return true;
  });
}

StatusSnapshot
DiscoveringStore::read_locks(const std::vector<std::string>& names) {
  look_for_cluster();
  return on_store([&](LockStore& store) { return store.read_locks(names); });
}

StatusSnapshot
DiscoveringStore::list_locks(std::string_view match) {
  look_for_cluster();
  return m_store->list_locks(match);
}

std::vector<ServerFacts>
DiscoveringStore::examine() {
  look_for_cluster();
  return m_store->examine();
}

std::optional<DeploymentState>
DiscoveringStore::deployment_state() {
  look_for_cluster();
  return m_store->deployment_state();
}

std::unique_ptr<Wakeups>
DiscoveringStore::watch(std::string_view name, const std::string& token) {
  return m_store->watch(name, token);
}

std::unique_ptr<Wakeups>
DiscoveringStore::watch_releases(std::string_view name) {
  return m_store->watch_releases(name);
}

void
DiscoveringStore::connect() {
  m_store->connect();
}

void
DiscoveringStore::disconnect() {
  m_store->disconnect();
}

void
DiscoveringStore::set_deadline(std::optional<BootTime> deadline) {
  m_deadline = deadline;
  m_store->set_deadline(deadline);
}

int
DiscoveringStore::idle_fd() const {
  return m_store->idle_fd();
}

bool
DiscoveringStore::idle_connection_broken() {
  return m_store->idle_connection_broken();
}

} // namespace rlock::lock
