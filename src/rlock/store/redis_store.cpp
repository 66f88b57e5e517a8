// RedisStore's lock steps on its one server (or Sentinel master); the
// connection under them, with the confirmations by replicas and sentinels,
// is in redis_store_session.cpp.

#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/store/status.hpp>
#include <rlock/store/wakeups.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

RedisStore::RedisStore(Deployment deployment, bool cluster_node)
    : m_deployment(std::move(deployment)), m_cluster_node(cluster_node) {
}

redis::SentinelMaster*
RedisStore::sentinel() {
  auto* sentinel = std::get_if<Sentinel>(&m_deployment.topology);
  return sentinel ? &sentinel->master : nullptr;
}

const redis::SentinelMaster*
RedisStore::sentinel() const {
  const auto* sentinel = std::get_if<Sentinel>(&m_deployment.topology);
  return sentinel ? &sentinel->master : nullptr;
}

// With Sentinel, the data nodes' login, database and TLS (no host).
const redis::Endpoint&
RedisStore::endpoint() const {
  if (const auto* master = sentinel()) {
    return master->data_node;
  }
  return std::get<Single>(m_deployment.topology).endpoint;
}

std::unique_ptr<LockStore>
RedisStore::another() const {
  auto store = std::make_unique<RedisStore>(m_deployment, m_cluster_node);
  store->m_required_replicas = m_required_replicas;
  return store;
}

std::string
RedisStore::key_of(std::string_view name) const {
  return keys(name).lock;
}

KeySpace
RedisStore::key_space() const {
  return KeySpace{m_deployment.prefix, m_cluster_node};
}

LockKeys
RedisStore::keys(std::string_view name) const {
  return keys_for(key_space(), name);
}

AcquireAttempt
RedisStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  const auto lock_keys = keys(request.name);
  return on_current_master([&](redis::Connection& c) {
    const auto give_back = [&] { lock::release(c, lock_keys, request.token); };
    auto attempt = attempt_after_grace(
        c,
        request.name,
        m_deployment.restart_grace,
        [&] {
          return try_acquire(c,
                             lock_keys,
                             request.token,
                             request.ttl,
                             request.holder,
                             entry,
                             request.limit,
                             request.parent_token);
        },
        give_back);
    if (auto* granted = std::get_if<Granted>(&attempt)) {
      // A quarter of the lease at most: the command must still have most of
      // it once the lock counts.
      try {
        granted->replicas =
            confirm(c, "taking " + quote(request.name), request.ttl / 4);
        const auto standing = sentinels_on(c);
        if (standing.kind != redis::MasterStanding::Kind::current) {
          throw redis::Failure(redis::FailureKind::not_master,
                               "taking " + quote(request.name) + " on "
                                   + c.address()
                                   + " does not count: " + standing.why);
        }
      } catch (const redis::Failure&) {
        give_back();
        throw;
      }
    }
    return attempt;
  });
}

PeekResult
RedisStore::peek(std::string_view name) {
  const auto lock_keys = keys(name);
  return on_connection([&](redis::Connection& c) {
    return look_after_grace(c, lock_keys.name, m_deployment.restart_grace, [&] {
      return lock::peek(c, lock_keys);
    });
  });
}

std::int64_t
RedisStore::lease_remaining_ms(std::string_view name) {
  return on_connection([&](redis::Connection& c) {
    return lock::lease_remaining_ms(c, keys(name));
  });
}

Renewal
RedisStore::renew(std::string_view name,
                  const std::string& token,
                  Duration ttl,
                  RenewMode mode) {
  bool moved = false;
  auto renewal = on_connection([&](redis::Connection& c) {
    return renew_on(c, name, token, ttl, mode, &moved);
  });
  if (!moved) {
    return renewal;
  }
  // The sentinels name another master: the lock is there, or it is lost.
  // Asked there now, not at the next try: a holder whose lock the new
  // master lacks must stop before another takes it there.
  m_connection.reset();
  return on_connection([&](redis::Connection& c) {
    return renew_on(c, name, token, ttl, mode, nullptr);
  });
}

Renewal
RedisStore::renew_on(redis::Connection& c,
                     std::string_view name,
                     const std::string& token,
                     Duration ttl,
                     RenewMode mode,
                     bool* moved) {
  auto renewal = lock::renew(c, keys(name), token, ttl, mode);
  if (!renewal.held) {
    return renewal;
  }
  const Duration limit =
      m_deadline ? *m_deadline - boot_now() : m_deployment.replicas.timeout;
  const std::string what = "renewing " + quote(name);
  std::optional<redis::Failure> unconfirmed;
  try {
    confirm(c, what, limit);
  } catch (const redis::Failure& failure) {
    if (failure.failure_kind() != redis::FailureKind::unconfirmed) {
      throw;
    }
    unconfirmed = failure;
  }
  const auto standing = sentinels_on(c);
  using Kind = redis::MasterStanding::Kind;
  if (standing.kind == Kind::elsewhere && moved != nullptr) {
    log::warning(what + " on " + c.address()
                 + " does not count: " + standing.why + "; renewing there");
    *moved = true;
    return renewal;
  }
  if (standing.kind != Kind::current) {
    throw redis::Failure(redis::FailureKind::unconfirmed,
                         what + " on " + c.address()
                             + " does not count: " + standing.why);
  }
  if (unconfirmed) {
    throw *unconfirmed;
  }
  return renewal;
}

bool
RedisStore::release(std::string_view name, const std::string& token) {
  return on_current_master([&](redis::Connection& c) {
    return lock::release(c, keys(name), token);
  });
}

void
RedisStore::release_quietly(std::string_view name,
                            const std::string& token) noexcept {
  try {
    auto options = m_deployment.connect;
    options.connect_timeout =
        std::min<Duration>(options.connect_timeout, std::chrono::seconds(1));
    lock::release_quietly(
        locate(options), m_deployment.connect, keys(name), token);
  } catch (...) {
    // The lease expires by itself.
  }
}

std::optional<Duration>
RedisStore::check(std::string_view name, const std::string& token) {
  return on_current_master(
      [&](redis::Connection& c) { return lock::check(c, keys(name), token); });
}

std::optional<BrokenLock>
RedisStore::force_release(std::string_view name) {
  return on_connection(
      [&](redis::Connection& c) { return lock::force_release(c, keys(name)); });
}

void
RedisStore::leave_queue(std::string_view name, const std::string& token) {
  on_connection([&](redis::Connection& c) {
    lock::leave_queue(c, keys(name), token);
    return true;
  });
}

Slot
RedisStore::current_slot(std::string_view name, Duration length) {
  return on_connection([&](redis::Connection& c) {
    return lock::current_slot(c, keys(name), length);
  });
}

void
RedisStore::mark_slot_done(std::string_view name,
                           std::int64_t number,
                           Duration keep) {
  on_connection([&](redis::Connection& c) {
    lock::mark_slot_done(c, keys(name), number, keep);
    return true;
  });
}

StatusSnapshot
RedisStore::read_locks(const std::vector<std::string>& names) {
  return on_connection([&](redis::Connection& c) {
    return lock::read_locks(c, key_space(), names);
  });
}

StatusSnapshot
RedisStore::list_locks(std::string_view match) {
  return on_connection([&](redis::Connection& c) {
    return lock::list_locks(c, key_space(), match);
  });
}

std::vector<ServerFacts>
RedisStore::examine() {
  const std::string probe_channel = key_space().prefix + "doctor-probe";
  return {on_connection(
      [&](redis::Connection& c) { return examine_server(c, probe_channel); })};
}

std::optional<DeploymentState>
RedisStore::deployment_state() {
  if (!sentinel()) {
    return std::nullopt;
  }
  SentinelDeploymentState state;
  state.master_name = sentinel()->name;
  on_connection([&](redis::Connection& c) {
    state.master = c.address();
    state.replicas =
        replicas_of(parse_info(c.command({"INFO", "replication"}).text));
    return true;
  });
  for (auto& report : redis::survey_sentinels(*sentinel(), bounded_options())) {
    state.sentinels.push_back(SentinelState{std::move(report.address),
                                            std::move(report.master),
                                            std::move(report.settings),
                                            std::move(report.quorum_check),
                                            std::move(report.error)});
  }
  return state;
}

std::unique_ptr<Wakeups>
RedisStore::watch(std::string_view name, const std::string& /*token*/) {
  // Every waiter of NAME blocks on the one list (see prelude.lua).
  const auto lock_keys = keys(name);
  const auto options = bounded_options();
  return std::make_unique<ListWakeups>(
      redis::WakeList::open(locate(options), options, {lock_keys.wake_list()}));
}

std::unique_ptr<Wakeups>
RedisStore::watch_releases(std::string_view name) {
  const auto options = bounded_options();
  return std::make_unique<ReleaseWakeups>(redis::Subscription::open(
      locate(options), options, {keys(name).released_channel()}));
}

redis::Subscription
RedisStore::subscribe_to(const std::vector<std::string>& channels,
                         const std::vector<std::string>& shard_channels) {
  const auto options = bounded_options();
  return redis::Subscription::open(
      locate(options), options, channels, shard_channels);
}

void
RedisStore::connect() {
  on_connection([](redis::Connection&) { return true; });
}

ClusterShardState
RedisStore::describe_cluster_node() {
  return on_connection(
      [](redis::Connection& c) { return lock::describe_cluster_node(c); });
}

} // namespace rlock::lock
