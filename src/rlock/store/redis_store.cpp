// About 600 lines: one server's steps plus the Sentinel re-checks around
// WAIT.

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

namespace {} // namespace

redis::ConnectOptions
bounded_by(redis::ConnectOptions options, std::optional<BootTime> deadline) {
  if (deadline) {
    const Duration left = *deadline - boot_now();
    options.connect_timeout = std::min(options.connect_timeout, left);
    options.io_timeout = std::min(options.io_timeout, left);
  }
  return options;
}

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

// The replies of the connection's login, and of the sentinels asked where
// the master is, count against the deadline too.
redis::ConnectOptions
RedisStore::bounded_options() const {
  return bounded_by(m_deployment.connect, m_deadline);
}

redis::Connection&
RedisStore::connection() {
  if (!m_connection) {
    m_connection.emplace(open_connection(bounded_options()));
  }
  const Duration io = m_deployment.connect.io_timeout;
  m_connection->set_io_timeout(
      m_deadline ? std::min(io, *m_deadline - boot_now()) : io);
  return *m_connection;
}

redis::Connection
RedisStore::open_connection(const redis::ConnectOptions& options) {
  if (sentinel()) {
    redis::Role role;
    auto connection = redis::open_master(*sentinel(), options, &role);
    m_connected_replicas = role.replicas;
    log::info("the sentinels name " + connection.address() + " as master "
              + quote(sentinel()->name));
    return connection;
  }
  return redis::Connection::open(endpoint(), options);
}

redis::Endpoint
RedisStore::locate(const redis::ConnectOptions& options) {
  if (sentinel()) {
    return redis::locate_master(*sentinel(), options);
  }
  return endpoint();
}

int
RedisStore::replicas_to_confirm(redis::Connection& c) {
  const auto& policy = m_deployment.replicas;
  if (!m_required_replicas) {
    const bool counted = policy.mode == ReplicaPolicy::Mode::count;
    // Sentinel's connections asked ROLE when they were made.
    const int connected = counted                ? 0
                          : m_connected_replicas ? *m_connected_replicas
                                                 : redis::role_of(c).replicas;
    m_required_replicas = lock::required_replicas(policy, connected);
    if (!counted && *m_required_replicas == 0) {
      // Said without -v: the lock then survives no failover.
      log::warning("no replica of " + c.address()
                   + " is connected: the lock is not confirmed by any");
    } else if (*m_required_replicas > 0) {
      log::info("each write of the lock waits for "
                + std::to_string(*m_required_replicas) + " replica"
                + (*m_required_replicas == 1 ? "" : "s") + " of " + c.address()
                + " to confirm it");
    }
  }
  return *m_required_replicas;
}

int
RedisStore::confirm(redis::Connection& c,
                    const std::string& what,
                    Duration limit) {
  const auto& policy = m_deployment.replicas;
  const int required = replicas_to_confirm(c);
  if (required == 0) {
    return 0;
  }
  // WAIT answers when its timeout ends: a quarter of the connection's reply
  // timeout (the step's deadline, --io-timeout) is kept for that answer.
  const auto timeout =
      confirmation_timeout(policy, std::min(limit, c.io_timeout() * 3 / 4));
  const int confirmed = redis::wait_for_replicas(c, required, timeout);
  if (confirmed < required) {
    throw redis::Failure(redis::FailureKind::unconfirmed,
                         "only " + std::to_string(confirmed) + " of "
                             + std::to_string(required) + " replicas of "
                             + c.address() + " confirmed " + what + " within "
                             + format_duration(timeout));
  }
  return confirmed;
}

// A step that failed may have left a reply unread or the connection broken:
// the next step starts on a new one.
template <typename Step>
auto
RedisStore::on_connection(Step&& step) {
  try {
    auto& c = connection();
    c.set_asking(std::exchange(m_asking, false));
    auto result = step(c);
    c.set_asking(false);
    return result;
  } catch (const redis::Failure& failure) {
    m_connection.reset();
    // The master Sentinel named has been demoted since: a failover.
    if (sentinel() && failure.server_code() == "READONLY") {
      throw redis::Failure(
          redis::FailureKind::not_master,
          std::string(failure.what())
              + " (demoted by Sentinel: a failover under way)");
    }
    if (redis::is_unknown_command(failure.server_error())) {
      throw redis::Failure(redis::FailureKind::server_error,
                           endpoint().address()
                               + " does not know rlock's commands (a Redis "
                                 "Sentinel? name it in a redis+sentinel:// "
                                 "URL): "
                               + failure.what(),
                           failure.server_code(),
                           failure.server_error());
    }
    throw;
  } catch (...) {
    m_connection.reset();
    throw;
  }
}

// A step that must reach the master of now. With Sentinel, a connection
// made before a failover may reach the old master, which goes on answering
// as one (a zombie) until Sentinel demotes it: the sentinels are asked
// first whenever the connection is not new.
template <typename Step>
auto
RedisStore::on_current_master(Step&& step) {
  const bool reused = m_connection.has_value();
  return on_connection([&](redis::Connection& c) {
    if (reused && sentinel()) {
      redis::check_still_master(*sentinel(), c, bounded_options());
    }
    return step(c);
  });
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

// With Sentinel, once replicas confirmed a write: where the sentinels stand
// on the master `c` reached. For a graceful failover the sentinels go on
// naming the old master for about a second after the replica to promote
// left it; a write confirmed then by another replica is lost when that one
// resyncs from the new master. The sentinel leading the failover says so
// (failover_in_progress). Current without Sentinel or when no replica is
// asked for (the write then has no confirmation to judge).
redis::MasterStanding
RedisStore::sentinels_on(redis::Connection& c) {
  if (!sentinel() || replicas_to_confirm(c) == 0) {
    return {redis::MasterStanding::Kind::current, std::nullopt, {}};
  }
  auto options = bounded_options();
  if (m_deadline) {
    // Half of what is left: the reply must still come before the deadline.
    const Duration half = (*m_deadline - boot_now()) / 2;
    options.connect_timeout = std::min(options.connect_timeout, half);
    options.io_timeout = std::min(options.io_timeout, half);
  }
  const auto& master = *sentinel();
  return redis::standing_of(redis::ask_sentinels(master, options),
                            master.sentinels.size(),
                            c.address(),
                            master.name);
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

void
RedisStore::disconnect() {
  m_connection.reset();
}

void
RedisStore::set_deadline(std::optional<BootTime> deadline) {
  m_deadline = deadline;
}

int
RedisStore::idle_fd() const {
  return m_connection ? m_connection->fd() : -1;
}

// A TLS record without data (a session ticket after the handshake) is
// neither closed nor unasked: reading it quiets the socket.
bool
RedisStore::idle_connection_broken() {
  if (!m_connection) {
    return false;
  }
  try {
    if (!m_connection->take_arrived_reply(true)) {
      return false;
    }
  } catch (...) {
  }
  m_connection.reset();
  return true;
}

redis::Connection&
RedisStore::session() {
  try {
    // An ASK redirection's ASKING goes with each command of the step that
    // asks for the session now, and with none after it.
    auto& c = connection();
    c.set_asking(std::exchange(m_asking, false));
    return c;
  } catch (...) {
    m_connection.reset();
    throw;
  }
}

redis::Connection&
RedisStore::master_session() {
  const bool reused = m_connection.has_value();
  auto& c = session();
  if (reused && sentinel()) {
    try {
      redis::check_still_master(*sentinel(), c, bounded_options());
    } catch (...) {
      m_connection.reset();
      throw;
    }
  }
  return c;
}

int
RedisStore::confirm_write(redis::Connection& c,
                          const std::string& what,
                          Duration limit) {
  const int confirmed = confirm(c, what, limit);
  const auto standing = sentinels_on(c);
  if (standing.kind != redis::MasterStanding::Kind::current) {
    throw redis::Failure(redis::FailureKind::not_master,
                         what + " on " + c.address()
                             + " does not count: " + standing.why);
  }
  return confirmed;
}

void
RedisStore::adopt(redis::Connection connection) {
  m_connection.emplace(std::move(connection));
}

std::string
RedisStore::address() const {
  if (sentinel() && !sentinel()->sentinels.empty()) {
    return "master " + quote(sentinel()->name) + " of sentinel "
           + sentinel()->sentinels.front().address();
  }
  return endpoint().address();
}

void
RedisStore::ask_next() {
  m_asking = true;
}

std::optional<int>
RedisStore::required_replicas() const {
  return m_required_replicas;
}

void
RedisStore::require_replicas(std::optional<int> replicas) {
  m_required_replicas = replicas;
}

ClusterShardState
RedisStore::describe_cluster_node() {
  return on_connection(
      [](redis::Connection& c) { return lock::describe_cluster_node(c); });
}

} // namespace rlock::lock
