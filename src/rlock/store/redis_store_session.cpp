// RedisStore's connection to its one server: made and bounded by the
// deadline, the master asked of Sentinel, ASKING for a Cluster's ASK, and
// the confirmation of a write by replicas (WAIT) and by the sentinels. The
// lock's steps over it are in redis_store.cpp.

#include <rlock/lock/replicas.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <utility>

namespace rlock::lock {

redis::ConnectOptions
bounded_by(redis::ConnectOptions options, std::optional<BootTime> deadline) {
  if (deadline) {
    const Duration left = *deadline - boot_now();
    options.connect_timeout = std::min(options.connect_timeout, left);
    options.io_timeout = std::min(options.io_timeout, left);
  }
  return options;
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
    // An ASK redirection's ASKING goes with the commands of the step that
    // asks for the session now; the next step's session() clears it.
    auto& c = connection();
    c.set_asking(std::exchange(m_asking, false));
    return c;
  } catch (...) {
    m_connection.reset();
    throw;
  }
}

// A step that failed may have left a reply unread or the connection broken:
// the next step starts on a new one.
void
RedisStore::fail_step(const redis::Failure& failure) {
  m_connection.reset();
  // The master Sentinel named has been demoted since: a failover.
  if (sentinel() && failure.server_code() == "READONLY") {
    throw redis::Failure(redis::FailureKind::not_master,
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
  throw failure;
}

void
RedisStore::check_still_master(redis::Connection& c) {
  if (sentinel()) {
    redis::check_still_master(*sentinel(), c, bounded_options());
  }
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

} // namespace rlock::lock
